"""The terminal report (rich): readable at 80 columns, plain when piped."""

from __future__ import annotations

from rich import box
from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from oomtrace.episodes import moment_gap
from oomtrace.explain import (
    MemoryPicture,
    cgroup_owner,
    constraint_words,
    explain_episode,
    lost_records_note,
    missing_note,
    plan_comparison,
    warning_summary,
)
from oomtrace.formats.base import Format
from oomtrace.listview import ListView
from oomtrace.model import Analysis, Episode
from oomtrace.sanitize import inert
from oomtrace.services import restart_count
from oomtrace.sources.journal import Boot
from oomtrace.story import Report, Story, killed_by, lead_words, victim_name
from oomtrace.units import clock, clock_time, kib, relative
from oomtrace.verdict import Verdict


def _t(text: object, style: str = "") -> Text:
    """Untrusted text, made inert, never parsed as markup."""
    return Text(inert(str(text)), style=style)


_TIMELINE_STYLES = {"kill": "bold red", "collateral": "red", "warning": "yellow", "server-warning": "yellow"}


class TextFormat(Format):
    def list_episodes(self, analysis: Analysis, view: ListView) -> None:
        columns = list(view.columns)
        names = [name for name, _ in columns]
        rows = [[row.cells[name] for name in names] for row in view.rows]
        # Numbers and times are never cut: they keep their width; names wrap, the trigger goes
        # when the row cannot hold it, and a terminal too narrow for any table gets one line a kill.
        widths = [max([len(name), *(len(r[i]) for r in rows)]) for i, name in enumerate(names)]
        # A column takes its width, its right padding and the rule between columns.
        fixed = sum(w + 2 for name, w in zip(names, widths, strict=True) if name not in _NAME_COLUMNS)
        hosted = names.index("host") if "host" in names else None
        host_w = min(widths[hosted], 12) + 2 if hosted is not None else 0
        trigger_w = min(widths[-1], 16)
        victim_w = self.console.width - fixed - host_w - trigger_w - 2
        if victim_w < _MIN_NAME or hosted is not None:
            columns, rows, names = columns[:-1], [r[:-1] for r in rows], names[:-1]
            victim_w = self.console.width - fixed - host_w - 2
        if victim_w < _MIN_NAME:
            self._list_lines(analysis, view, rows, names)
            return
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1, 0, 0))
        for (name, justify), width in zip(columns, widths, strict=False):
            if name in _NAME_COLUMNS:
                limit = {"victim": victim_w, "trigger": trigger_w, "host": host_w - 2}[name]
                table.add_column(name, justify=justify, overflow="fold", width=min(width, limit))  # type: ignore[arg-type]
            else:
                table.add_column(name, justify=justify, no_wrap=True, width=width)  # type: ignore[arg-type]
        victim_at = names.index("victim")
        for cells, row in zip(rows, view.rows, strict=True):
            styled = [_t(cell) for cell in cells]
            styled[victim_at] = _t(cells[victim_at], "bold" if row.has_victim else "dim")
            table.add_row(*styled)
        if view.rows:
            self.console.print(table)
        else:
            ranged = analysis.range_note()
            self.console.print(_t(f"No OOM kills in the {ranged}." if ranged else "No OOM kills found."))
        if view.note:
            self.console.print(_t(view.note + "."), style="dim")
        self.console.print(_t(_summary_line(analysis)), style="dim")

    def _list_lines(
        self, analysis: Analysis, view: ListView, rows: list[list[str]], names: list[str]
    ) -> None:
        """The list for a terminal too narrow for its table: each row a few wrapped lines."""
        for row in rows:
            # A field a line, so that no wrap can part a label from its number.
            self.console.print(_t(f"#{row[0]}  {row[1]}"), no_wrap=True, overflow="fold")
            for name, cell in zip(names[2:], row[2:], strict=True):
                if cell:
                    self.console.print(_t(f"    {name} {cell}"), overflow="fold")
        if view.note:
            self.console.print(_t(view.note + "."), style="dim")
        self.console.print(_t(_summary_line(analysis)), style="dim")

    def boots(self, boots: list[Boot]) -> None:
        for boot in boots:
            first = clock_time(boot.first) if boot.first else "?"
            last = clock_time(boot.last) if boot.last else "?"
            self.console.print(_t(f"{boot.index:>4}  {boot.boot_id}  {first} \u2014 {last}"), no_wrap=True)

    def why(self, analysis: Analysis, stories: list[Story], verdict: Verdict) -> None:
        if stories:
            for index, story in enumerate(stories):
                if index:
                    self.console.print()
                self._story(story, verdict if index == len(stories) - 1 else None)
        else:
            self._verdict_only(verdict)
        self.console.print(_t(_summary_line(analysis)), style="dim")

    def _verdict_only(self, verdict: Verdict) -> None:
        self.console.print(
            Panel(_t(verdict.headline), title=_t(f"oomtrace why {verdict.query}"), title_align="left")
        )
        self._server_log(verdict, None)
        if verdict.involved_story is not None:
            self.console.print()
            self.console.print(Text("The OOM kill it took part in", style="bold"))
            self._story(verdict.involved_story, None)

    def _server_log(self, verdict: Verdict, story: Story | None) -> None:
        reading = verdict.server_log
        if reading is None:
            return
        facts = reading.facts
        grid = _grid()
        grid.add_row("File", _t(f"{facts.path} ({facts.lines} lines)"))
        when = clock_time(facts.last_time) if facts.last_time else "unknown"
        origin = {
            "mtime": " (the file's modification time: it prints no stamps)",
            "given": " (--server-log-end)",
        }.get(facts.last_time_from or "", "")
        grid.add_row("Last line", _t(f"{when}{origin}: {facts.last_line or ''}"))
        grid.add_row("Ending", _t(reading.note))
        comparison = plan_comparison(facts.plan, verdict.episode, story.memory if story else None)
        if comparison:
            grid.add_row("Its plan", _t(comparison))
        self.console.print(Group(Text(), Text("The server's own log", style="bold"), grid))

    def report(self, analysis: Analysis, report: Report) -> None:
        since = clock_time(report.since) if report.since else "the start"
        until = clock_time(report.until) if report.until else "the end"
        kills = sum(n for _, n in report.by_victim)
        self.console.print(
            Panel(
                _t(f"{len(report.stories)} incident(s), {kills} kill(s), from {since} to {until}"),
                title="oomtrace report",
                title_align="left",
            )
        )
        counts = _grid()
        counts.add_row("By victim", _t(", ".join(f"{name} ×{n}" for name, n in report.by_victim) or "none"))
        counts.add_row("By cause", _t(", ".join(f"{name} ×{n}" for name, n in report.by_cause) or "none"))
        if report.untimed:
            counts.add_row(
                "Left out", _t(f"{report.untimed} episode(s) with no wall-clock time (give --boot-time)")
            )
        self.console.print(counts)
        for story in report.stories:
            self.console.print()
            self._story(story)
        self.console.print(_t(_summary_line(analysis)), style="dim")

    def not_found(self, analysis: Analysis, query: str, verdict: Verdict) -> None:
        # The one-line error on stderr says it all; stdout stays empty for scripts.
        return None

    def _story(self, story: Story, verdict: Verdict | None = None) -> None:
        episode = story.episode
        headline = Text()
        headline.append(_t(victim_name(episode), "bold"))
        if episode.killer == "kernel":
            headline.append(" was killed by the kernel OOM killer: ")
            headline.append(_t(constraint_words(episode.constraint)))
            if episode.constraint == "memcg" and episode.memcg:
                owner = cgroup_owner(episode.memcg)
                headline.append(_t(f" ({episode.memcg}{', ' + owner if owner else ''})"))
        else:
            headline.append(_t(f" was killed by {killed_by(episode)}"))
        if verdict is not None and verdict.server_log is not None:
            headline.append(_t(f"; {verdict.server_log.note}"))
        self.console.print(Panel(headline, title=_t(f"oomtrace why {story.query}"), title_align="left"))
        self.console.print(
            self._facts(story)
            if episode.victim is not None and episode.killer == "kernel"
            else self._other_facts(story)
        )
        if verdict is not None:
            self._server_log(verdict, story)
        if story.memory is not None:
            self.console.print(self._memory(story.memory))
        if story.timeline:
            self.console.print(self._timeline(story))

    def _other_facts(self, story: Story) -> Table:
        """A kill with no kernel report: systemd's unit records or a userspace killer's line."""
        episode = story.episode
        grid = _grid()
        grid.add_row("When", _t(clock(episode.moment)))
        grid.add_row("Killer", _t(episode.killer))
        if episode.killer_reason:
            grid.add_row("Its reason", _t(episode.killer_reason))
        victim = episode.victim
        if victim is not None:
            sizes = f", rss {kib(victim.rss_kb)}" if victim.rss_kb is not None else ""
            adj = f", oom_score_adj {victim.oom_score_adj}" if victim.oom_score_adj is not None else ""
            grid.add_row("Victim", _t(f"{victim.comm} (pid {victim.pid}){sizes}{adj}"))
        if episode.unit:
            grid.add_row("Unit", _t(episode.unit))
        self._unit_rows(grid, episode)
        grid.add_row("Also killed", _t(_collateral(story)))
        grid.add_row("First warning", _t(_first_warning(story)))
        if episode.missing:
            grid.add_row("Missing", _t(missing_note(episode) or "", "yellow"))
        for note in episode.trimmed:
            grid.add_row("Not kept", _t(note, "yellow"))
        return grid

    def _unit_rows(self, grid: Table, episode: Episode) -> None:
        for note in episode.unit_notes:
            grid.add_row("systemd", _t(note.text))
        restarts = restart_count(episode)
        if restarts is not None and restarts > 1:
            grid.add_row("Crash loop", _t(f"systemd restarted it {restarts} times"))

    def _facts(self, story: Story) -> Table:
        episode = story.episode
        victim = episode.victim
        assert victim is not None
        why = explain_episode(episode)
        grid = _grid()
        grid.add_row("When", _t(clock(episode.moment)))
        trigger = episode.trigger
        if trigger is not None:
            pid = f" (pid {trigger.pid})" if trigger.pid is not None else ""
            grid.add_row("Invoked by", _t(f"{trigger.comm}{pid}, asking for {why.request}"))
            if why.call_path:
                grid.add_row("Allocating in", _t(why.call_path))
        else:
            grid.add_row("Invoked by", _t("not in the log (the report header is missing)", "dim"))
        if episode.task_memcg:
            # The owner says it in fewer lines; the JSON and Markdown keep the whole path.
            grid.add_row("Its cgroup", _t(why.task_memcg_owner or episode.task_memcg))
        sizes = [
            f"anon-rss {kib(victim.anon_rss_kb)}",
            f"file-rss {kib(victim.file_rss_kb)}" if victim.file_rss_kb is not None else None,
            f"shmem-rss {kib(victim.shmem_rss_kb)}" if victim.shmem_rss_kb is not None else None,
            f"total-vm {kib(victim.total_vm_kb)}" if victim.total_vm_kb is not None else None,
        ]
        if victim.anon_rss_kb is None and victim.total_vm_kb is None:
            grid.add_row("Victim", _t("its sizes are not in the log (no kill line)", "dim"))
        else:
            grid.add_row("Victim", _t(", ".join(s for s in sizes if s)))
        if victim.comm_from or victim.pid_from:
            grid.add_row("Named by", _t(victim.comm_from or victim.pid_from or ""))
        if victim.oom_score_adj is not None:
            text = f"{victim.oom_score_adj} (from the {victim.oom_score_adj_from})"
            grid.add_row("oom_score_adj", _t(f"{text}: {why.adj_origin}" if why.adj_origin else text))
        if why.reason:
            grid.add_row("Why it", _t(why.reason))
        if why.outside_rss:
            grid.add_row("Outside RSS", _t(why.outside_rss))
        if why.holders:
            grid.add_row("Largest", _t(", ".join(f"{h.name} {kib(h.rss_kb)}" for h in why.holders[:4])))
        if why.cotenants:
            grid.add_row("Beside it", _t(why.cotenants))
        self._unit_rows(grid, episode)
        grid.add_row("Also killed", _t(_collateral(story)))
        grid.add_row("First warning", _t(_first_warning(story)))
        if why.driver_frames:
            grid.add_row("Driver frames", _t(", ".join(why.driver_frames)))
        machine = " on ".join(x for x in (episode.kernel, episode.hardware) if x)
        if machine:
            grid.add_row("Kernel", _t(machine))
        if episode.missing:
            grid.add_row("Missing", _t(missing_note(episode) or "", "yellow"))
        for note in episode.trimmed:
            grid.add_row("Not kept", _t(note, "yellow"))
        return grid

    def _memory(self, memory: MemoryPicture) -> Group:
        parts = []
        if memory.memcg_usage_kb is not None:
            parts.append(f"cgroup usage {kib(memory.memcg_usage_kb)} of {kib(memory.memcg_limit_kb)}")
        for label, value in (
            ("RAM", memory.ram_kb),
            ("free", memory.free_kb),
            ("anon", memory.anon_kb),
            ("page cache", memory.file_kb),
            ("slab", memory.slab_kb),
            ("page tables", memory.pagetables_kb),
            ("in no LRU/slab", memory.unaccounted_kb),
        ):
            if value is not None:
                parts.append(f"{label} {kib(value)}")
        if memory.swap_total_kb:
            used = memory.swap_total_kb - (memory.swap_free_kb or 0)
            parts.append(f"swap {kib(used)} used of {kib(memory.swap_total_kb)}")
        elif memory.swap_total_kb == 0:
            parts.append("no swap")
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column()
        grid.add_row(" ", _t(" · ".join(parts)))
        for note in memory.notes:
            grid.add_row(" •", _t(note))
        return Group(Text(), Text("Memory at the kill", style="bold"), grid)

    def _timeline(self, story: Story) -> Group:
        table = Table(box=None, pad_edge=False, show_header=False, padding=(0, 1))
        table.add_column(no_wrap=True, justify="right")
        table.add_column(no_wrap=True)
        table.add_column()
        for entry in story.timeline:
            style = {
                "kill": "bold red",
                "collateral": "red",
                "warning": "yellow",
                "server-warning": "yellow",
            }.get(entry.kind, "")
            when = entry.moment.time.strftime("%H:%M:%S") if entry.moment.time else clock(entry.moment)
            table.add_row(_t(relative(entry.offset_s)), _t(when), _t(entry.short, style))
        return Group(Text(), Text("Timeline", style="bold"), table)


def _grid() -> Table:
    """Two columns, a bold label and a value that folds: the shape of every fact list."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    return grid


def _collateral(story: Story) -> str:
    if not story.collateral:
        return "no other process in this incident"
    parts = []
    for other in story.collateral:
        gap = moment_gap(story.episode.moment, other.moment)
        if other.victim is not None:
            parts.append(f"{other.victim.comm} (pid {other.victim.pid}, {relative(gap)})")
        else:
            parts.append(f"{victim_name(other)} ({relative(gap)})")
    return ", ".join(parts) or "no other process in this incident"


def _first_warning(story: Story) -> str:
    warning = story.earliest_warning
    if warning is None:
        return "none in the kernel log before the kill"
    repeat = f", {warning.count} times" if warning.count > 1 else ""
    return f"{warning_summary(warning.kind, warning.key, warning.text)} ({lead_words(story)}{repeat})"


def _summary_line(analysis: Analysis) -> str:
    names = analysis.source_names or "no input"
    first, last = analysis.span()
    span = f" from {clock(first)} to {clock(last)}" if first and last else ""
    records = sum(s.records for s in analysis.sources)
    counts = (
        f"{len(analysis.episodes):,} OOM episode(s) in {len(analysis.incidents):,} incident(s), "
        f"{len(analysis.warnings):,} warning run(s)"
    )
    unparsed = (
        f"; {analysis.unparsed_count:,} OOM-looking line(s) not understood" if analysis.unparsed_count else ""
    )
    unit = "entries" if analysis.sources and all(s.kind == "journal" for s in analysis.sources) else "lines"
    problems = "".join(f" {s.name}: {s.problem}." for s in analysis.sources if s.problem)
    lost = lost_records_note(analysis)
    lost_text = f" Incomplete: {lost}." if lost else ""
    ranged = analysis.range_note()
    range_text = f" Only the {ranged}." if ranged else ""
    notes = problems + lost_text + range_text + (f" {analysis.elided.note()}." if analysis.elided else "")
    return f"Read {names}: {records:,} {unit}{span}. {counts}{unparsed}.{notes}"


# Columns of names, which may wrap; every other column holds a number or a time.
_NAME_COLUMNS = ("victim", "trigger", "host")
# The narrowest a name column may be before the layout gives it up.
_MIN_NAME = 6
