"""A post-incident report in GitHub-flavoured Markdown, ready to paste into an issue."""

from __future__ import annotations

import re
from datetime import datetime

from oomtrace import __version__
from oomtrace.episodes import moment_gap
from oomtrace.explain import (
    Explanation,
    MemoryPicture,
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
from oomtrace.sources.journal import Boot
from oomtrace.story import Report, Story, killed_by, lead_words, victim_name
from oomtrace.units import clock, clock_time, kib, relative
from oomtrace.verdict import Verdict

# GitHub refuses comments longer than this many characters.
GITHUB_LIMIT = 65_536
# Room kept for the notes that say what was cut.
_MARGIN = 600
_PUNCTUATION = re.compile(r"([\\`*_\[\]<>#!|~&])")
# What GitHub turns into a mention, an issue link or math even when escaped: `@name`, `#123`,
# `GH-5`, `owner/repo#7`, `$x$`. Log text holding one is shown as code instead.
_GITHUB_REFERENCE = re.compile(
    r"(?<![\w.])@[A-Za-z0-9-]|(?<![\w&])#\d|\bGH-\d|[\w.-]+/[\w.-]+#\d|\$[^\s$][^$]*\$|\$\$"
)


def text(value: object) -> str:
    """Untrusted text for running Markdown or a table cell: inert, every markup character escaped."""
    flat = inert(str(value)).replace("\n", " ")
    if _GITHUB_REFERENCE.search(flat):
        return code_span(flat)
    escaped = _PUNCTUATION.sub(r"\\\1", flat)
    # GitHub turns bare URLs, www. names and e-mail addresses into links; an escape stops it.
    return escaped.replace("://", "\\://").replace("www.", "www\\.").replace("@", "\\@")


def code_span(value: str) -> str:
    """Text as a code span no backtick run inside it can close (pipes escaped for tables)."""
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{ticks}{pad}{value.replace('|', chr(92) + '|')}{pad}{ticks}"


def code_block(lines: list[str], info: str = "text") -> str:
    """A fenced block that no backtick run inside it can close."""
    body = [inert(line) for line in lines]
    longest = max((len(run) for line in body for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n".join([fence + info, *body, fence])


def table(header: list[str], rows: list[list[str]], align: str | None = None) -> str:
    """A pipe table; cells must already be escaped with text()."""
    marks = align or "".join("l" for _ in header)
    rule = ["---:" if a == "r" else "---" for a in marks]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


class MarkdownFormat(Format):
    def list_episodes(self, analysis: Analysis, view: ListView) -> None:
        names = [name for name, _ in view.columns]
        rows = [
            [
                text(row.cells[name]) if row.has_victim or name != "victim" else f"_{text(row.cells[name])}_"
                for name in names
            ]
            for row in view.rows
        ]
        parts = [f"## OOM kills in {text(_names(analysis))}", ""]
        if rows:
            shown = _rows_fitting(rows, GITHUB_LIMIT - 4 * _MARGIN - len(_footer(analysis)))
            parts.append(
                table(
                    names,
                    rows[:shown],
                    "".join("r" if align == "right" else "l" for _, align in view.columns),
                )
            )
            if view.note:
                parts += ["", f"_{text(view.note)}._"]
            if shown < len(rows):
                parts += [
                    "",
                    f"_{len(rows) - shown:,} more kill(s) left out to stay under GitHub's "
                    f"{GITHUB_LIMIT:,}-character comment limit; "
                    "`oomtrace list --format json` prints them all._",
                ]
        else:
            ranged = analysis.range_note()
            parts.append(text(f"No OOM kills in the {ranged}.") if ranged else "No OOM kills found.")
        parts += ["", _footer(analysis)]
        self._emit("\n".join(parts))

    def boots(self, boots: list[Boot]) -> None:
        rows = [
            [
                str(b.index),
                code_span(b.boot_id),
                text(clock_time(b.first) if b.first else "?"),
                text(clock_time(b.last) if b.last else "?"),
            ]
            for b in boots
        ]
        self._emit(
            "\n".join(
                ["## Boots in the journal", "", table(["index", "boot id", "first", "last"], rows, "rlll")]
            )
        )

    def why(self, analysis: Analysis, stories: list[Story], verdict: Verdict) -> None:
        head = f"**Verdict ({text(verdict.cause)}):** {text(verdict.headline)}"
        log = _server_log(verdict, stories[-1] if stories else None)
        if stories:
            before = head + "\n\n" + (log + "\n\n" if log else "")
            every = f"oomtrace why {verdict.query} --all --format json"
            self._emit(before + self.document(analysis, stories, reserved=len(before), every=every))
            return
        involved = [verdict.involved_story] if verdict.involved_story else []
        body = self.document(analysis, involved) if involved else _footer(analysis)
        intro = "\n\nThe OOM kill it took part in:\n\n" if involved else "\n\n"
        self._emit(head + ("\n\n" + log if log else "") + intro + body)

    def report(self, analysis: Analysis, report: Report) -> None:
        span = f"{_span_time(report.since)} to {_span_time(report.until)}"
        kills = sum(n for _, n in report.by_victim)
        counts = [
            f"{len(report.stories)} incident(s), {kills} kill(s), {text(span)}.",
            "",
            table(["victim", "kills"], [[text(name), str(n)] for name, n in report.by_victim], "lr")
            if report.by_victim
            else "No OOM kills in this range.",
            "",
            table(["cause", "kills"], [[text(name), str(n)] for name, n in report.by_cause], "lr")
            if report.by_cause
            else "",
        ]
        if report.untimed:
            counts += [
                "",
                f"_{report.untimed} episode(s) had no wall-clock time and were left out; give --boot-time._",
            ]
        head = "\n".join(counts)
        body = (
            self.document(
                analysis, list(report.stories), title="OOM post-incident report", reserved=len(head)
            )
            if report.stories
            else ""
        )
        self._emit(head + ("\n\n" + body if body else "\n\n" + _footer(analysis)))

    def not_found(self, analysis: Analysis, query: str, verdict: Verdict) -> None:
        return None

    def document(
        self,
        analysis: Analysis,
        stories: list[Story],
        title: str | None = None,
        reserved: int = 0,
        every: str = "oomtrace report --format json",
    ) -> str:
        """The stories that fit under GitHub's limit (`reserved` characters are taken before
        them), with their raw kernel lines cut to share what is left; a line says how many
        stories were left out and which command prints them all."""
        bodies = [_story(s) for s in stories]
        head = [f"# {text(title)}", ""] if title else []
        room = GITHUB_LIMIT - reserved - len("\n".join(head)) - len(_footer(analysis)) - 2 * _MARGIN
        kept = _fitting(bodies, room)
        left_out = len(bodies) - kept
        note = (
            [
                f"_{left_out} more incident(s) left out to stay under GitHub's {GITHUB_LIMIT:,}-character "
                f"comment limit; `{text(every)}` prints them all._",
                "",
            ]
            if left_out
            else []
        )
        fixed = len("\n".join(bodies[:kept])) + _MARGIN * kept
        budget = max(room - fixed, 0) // max(kept, 1)
        sections = [
            body + "\n\n" + _raw_lines(s.episode, budget)
            for s, body in zip(stories[:kept], bodies[:kept], strict=True)
        ]
        return "\n".join([*head, "\n\n---\n\n".join(sections), "", *note, _footer(analysis)])

    def _emit(self, document: str) -> None:
        self.console.file.write(document.rstrip("\n") + "\n")


def _rows_fitting(rows: list[list[str]], room: int) -> int:
    used = 0
    for count, row in enumerate(rows):
        used += sum(len(cell) + 3 for cell in row) + 2
        if used > room:
            return count
    return len(rows)


def _fitting(bodies: list[str], room: int) -> int:
    """How many of the stories, in order, fit in `room` characters (at least one)."""
    used = 0
    for count, body in enumerate(bodies):
        used += len(body) + _MARGIN
        if used > room and count:
            return count
    return len(bodies)


def _span_time(time: datetime | None) -> str:
    return clock_time(time) if time else "the start of the log"


def _server_log(verdict: Verdict, story: Story | None) -> str:
    reading = verdict.server_log
    if reading is None:
        return ""
    facts = reading.facts
    when = clock_time(facts.last_time) if facts.last_time else "unknown"
    origin = {"mtime": " (file modification time)", "given": " (--server-log-end)"}.get(
        facts.last_time_from or "", ""
    )
    rows = [
        ["file", text(f"{facts.path} ({facts.lines} lines)")],
        ["last line", text(f"{when}{origin}")],
        ["ending", text(reading.note)],
    ]
    comparison = plan_comparison(facts.plan, verdict.episode, story.memory if story else None)
    if comparison:
        rows.append(["its plan", text(comparison)])
    last = code_block([facts.last_line or ""])
    return "### The server's own log\n\n" + table(["", ""], rows) + "\n\nIts last line:\n\n" + last


def _names(analysis: Analysis) -> str:
    return analysis.source_names or "no input"


def _footer(analysis: Analysis) -> str:
    first, last = analysis.span()
    span = f", {clock(first)} to {clock(last)}" if first and last else ""
    records = sum(s.records for s in analysis.sources)
    problems = "".join(f" {text(s.name)}: {text(s.problem)}." for s in analysis.sources if s.problem)
    read = f"read {text(_names(analysis))} ({records:,} lines{text(span)})."
    lost = lost_records_note(analysis)
    lost_text = f" Incomplete: {text(lost)}." if lost else ""
    ranged = analysis.range_note()
    range_text = f" Only the {text(ranged)}." if ranged else ""
    elided = f" {text(analysis.elided.note())}." if analysis.elided else ""
    return f"<sub>oomtrace {__version__} {read}{problems}{lost_text}{range_text}{elided}</sub>"


def _story(story: Story) -> str:
    episode = story.episode
    if episode.victim is None or episode.killer != "kernel":
        return _other_story(story)
    why = explain_episode(episode)
    victim = episode.victim
    title = f"## OOM kill: {text(victim.comm)} (pid {victim.pid})"
    parts = [title, "", _summary(story, why), ""]
    parts += ["### Timeline", "", _timeline(story), ""]
    parts += ["### Victim", "", _victim_table(episode, why), ""]
    if story.collateral:
        parts += ["### Also killed in this incident", "", _collateral(story), ""]
    if why.memory is not None:
        parts += ["### Memory at the kill", "", _memory(why.memory), ""]
    if why.holders:
        rows = [
            [
                text(h.name),
                str(h.pid),
                text(kib(h.rss_kb)),
                str(h.oom_score_adj if h.oom_score_adj is not None else ""),
            ]
            for h in why.holders
        ]
        parts += [
            "### Largest processes at the kill",
            "",
            table(["process", "pid", "rss", "adj"], rows, "lrrr"),
            "",
        ]
    return "\n".join(parts).rstrip("\n")


def _other_story(story: Story) -> str:
    """A kill with no kernel report: a userspace killer's line or systemd's unit records."""
    episode = story.episode
    rows = [["when", text(clock(episode.moment))], ["killer", text(episode.killer)]]
    if episode.killer_reason:
        rows.append(["its reason", text(episode.killer_reason)])
    if episode.unit:
        rows.append(["unit", text(episode.unit)])
    rows += [["systemd", text(note.text)] for note in episode.unit_notes]
    parts = [
        f"## OOM kill: {text(victim_name(episode))}",
        "",
        f"{text(victim_name(episode))} was killed by {text(killed_by(episode))}.",
        "",
        table(["", ""], rows),
        "",
        "### Timeline",
        "",
        _timeline(story),
    ]
    return "\n".join(parts)


def _summary(story: Story, why: Explanation) -> str:
    episode = story.episode
    victim = episode.victim
    assert victim is not None
    constraint = constraint_words(episode.constraint)
    sentences = [
        f"**{text(victim.comm)}** (pid {victim.pid}) was killed by the kernel OOM killer at "
        f"{text(clock(episode.moment))}: {text(constraint)}"
        + (f" ({text(episode.memcg)})" if episode.constraint == "memcg" and episode.memcg else "")
        + "."
    ]
    if episode.trigger is not None:
        sentences.append(f"{text(episode.trigger.comm)} invoked the killer, asking for {text(why.request)}.")
    held = f"It held {text(kib(victim.anon_rss_kb))} anon-rss"
    if victim.total_vm_kb is not None:
        held += f" of {text(kib(victim.total_vm_kb))} total-vm"
    if victim.oom_score_adj is not None:
        held += f", oom\\_score\\_adj {victim.oom_score_adj}"
    sentences.append(held + ".")
    if why.reason:
        sentences.append(text(why.reason[0].upper() + why.reason[1:]) + ".")
    if why.adj_origin:
        sentences.append(text(why.adj_origin) + ".")
    if story.earliest_warning is not None:
        warning = story.earliest_warning
        summary = warning_summary(warning.kind, warning.key, warning.text)
        sentences.append(f"The first warning, {text(summary)}, came {lead_words(story)}.")
    else:
        sentences.append("Nothing in the kernel log warned before the kill.")
    others = len(story.collateral)
    sentences.append(
        f"{others} other process{'es were' if others != 1 else ' was'} killed in the same incident."
        if others
        else "No other process was killed in the same incident."
    )
    return " ".join(sentences)


def _timeline(story: Story) -> str:
    rows = []
    for entry in story.timeline:
        when = entry.moment.time.strftime("%H:%M:%S") if entry.moment.time else clock(entry.moment)
        rows.append([text(relative(entry.offset_s)), text(when), text(entry.kind), text(entry.short)])
    return table(["T", "time", "kind", "event"], rows, "rlll")


def _victim_table(episode: Episode, why: Explanation) -> str:
    victim = episode.victim
    assert victim is not None
    rows = [
        [
            "process",
            f"{text(victim.comm)} (pid {victim.pid}"
            + (f", uid {victim.uid})" if victim.uid is not None else ")"),
        ],
        ["anon-rss", text(kib(victim.anon_rss_kb))],
        ["file-rss", text(kib(victim.file_rss_kb))],
        ["shmem-rss", text(kib(victim.shmem_rss_kb))],
        ["total-vm", text(kib(victim.total_vm_kb))],
        [
            "oom_score_adj",
            text(
                f"{victim.oom_score_adj} (from the {victim.oom_score_adj_from})"
                if victim.oom_score_adj is not None
                else "?"
            ),
        ],
    ]
    if victim.comm_from or victim.pid_from:
        rows.append(["named by", text(victim.comm_from or victim.pid_from or "")])
    if episode.task_memcg:
        rows.append(
            [
                "cgroup",
                text(episode.task_memcg + (f" ({why.task_memcg_owner})" if why.task_memcg_owner else "")),
            ]
        )
    if episode.trigger is not None:
        pid = f" (pid {episode.trigger.pid})" if episode.trigger.pid is not None else ""
        rows.append(["invoked by", text(f"{episode.trigger.comm}{pid}: {why.request}")])
    if why.call_path:
        rows.append(["allocating in", text(why.call_path)])
    if why.outside_rss:
        rows.append(["outside RSS", text(why.outside_rss)])
    if why.cotenants:
        rows.append(["beside it", text(why.cotenants)])
    machine = " on ".join(x for x in (episode.kernel, episode.hardware) if x)
    if machine:
        rows.append(["kernel", text(machine)])
    missing = missing_note(episode)
    if missing:
        rows.append(["missing", text(missing)])
    for note in episode.trimmed:
        rows.append(["not kept (bounded memory)", text(note)])
    return table(["", ""], rows)


def _collateral(story: Story) -> str:
    rows = []
    for other in story.collateral:
        gap = moment_gap(story.episode.moment, other.moment)
        if other.victim is None:
            rows.append([text(victim_name(other)), "", "", "", text(relative(gap))])
            continue
        adj = other.victim.oom_score_adj
        rows.append(
            [
                text(other.victim.comm),
                str(other.victim.pid),
                text(kib(other.victim.anon_rss_kb)),
                str(adj if adj is not None else ""),
                text(relative(gap)),
            ]
        )
    return table(["victim", "pid", "anon-rss", "adj", "when"], rows, "lrrrr")


def _memory(memory: MemoryPicture) -> str:
    rows = []
    for label, value in (
        ("cgroup usage", memory.memcg_usage_kb),
        ("cgroup limit", memory.memcg_limit_kb),
        ("RAM", memory.ram_kb),
        ("free", memory.free_kb),
        ("min watermark", memory.min_watermark_kb),
        ("anon", memory.anon_kb),
        ("page cache", memory.file_kb),
        ("shmem", memory.shmem_kb),
        ("slab", memory.slab_kb),
        ("page tables", memory.pagetables_kb),
        ("in no LRU list, slab or page table", memory.unaccounted_kb),
        ("swap total", memory.swap_total_kb),
        ("swap free", memory.swap_free_kb),
    ):
        if value is not None:
            rows.append([text(label), text(kib(value))])
    notes = "\n".join(f"- {text(note)}" for note in memory.notes)
    return table(["", ""], rows, "lr") + ("\n\n" + notes if notes else "")


def _raw_lines(episode: Episode, budget: int) -> str:
    lines = list(episode.raw_lines)
    kept: list[str] = []
    used = 0
    for line in lines:
        cost = len(inert(line)) + 1
        if used + cost > budget:
            break
        kept.append(line)
        used += cost
    first, last = episode.lines
    cut = len(lines) - len(kept)
    note = ""
    if cut:
        note = (
            f"\n\n_{cut} of {len(lines)} lines were cut to stay under GitHub's {GITHUB_LIMIT:,}-character "
            f"comment limit; the log has them all at lines {first}\u2013{last}._"
        )
    summary = f"Kernel log lines {first}\u2013{last} of this episode ({len(lines)} lines)"
    return (
        "\n".join(["<details>", f"<summary>{summary}</summary>", "", code_block(kept), "", "</details>"])
        + note
    )
