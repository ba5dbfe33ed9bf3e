"""One death worded: a story's headline, sentences, facts, grids and timeline rows, for `why` and `report`.

Below the pages (storyview: `why`'s and `report`'s whole view, which re-exports these) and above
story/verdict. A format lays these out; it never words a fact itself.
"""

from __future__ import annotations

from oomtrace.charts import (
    RunUp,
    ShareChart,
    Trace,
    memory_chart,
    run_up,
    samples_trace,
)
from oomtrace.episodes import MAX_RAW_LINES
from oomtrace.explain import (
    Explanation,
    MemoryPicture,
    constraint_words,
    explain_episode,
    missing_note,
    warning_summary,
)
from oomtrace.frozen import Frozen
from oomtrace.incidents import moment_gap
from oomtrace.model import UNVERIFIED, Episode, KernelWarning
from oomtrace.services import restart_count
from oomtrace.story import Story, killed_by, lead_words, scope_words, victim_name
from oomtrace.units import clock, duration, kib, relative, timeline_clock


class Fact(Frozen):
    """One labelled fact of a story: "Invoked by", "dashboard-servi (pid 4242), asking for 4 KiB"."""

    key: str
    """Stable name a format may lay out apart (the collateral has its own table in Markdown)."""
    label: str
    value: str
    tone: str = ""
    """"" a plain fact, "absent" what the log does not say, "caveat" something missing or cut."""
    brief: str | None = None
    """The same fact in fewer words, for the terminal (a cgroup's owner without its long path)."""


class Grid(Frozen):
    """A small table: its header, per-column alignment ("l"/"r") and worded cells."""

    header: tuple[str, ...]
    align: str
    rows: tuple[tuple[str, ...], ...]


class MemoryView(Frozen):
    figures: tuple[tuple[str, str], ...]
    """(label, amount), in the order a reader wants them: the cgroup, then the machine."""
    notes: tuple[str, ...]
    beside_chart: tuple[tuple[str, str], ...] = ()
    """The figures a picture of RAM's parts does not show (RAM, the watermark, shmem, swap), for a
    format that draws the picture: the parts are not said twice."""


class ServerLogView(Frozen):
    facts: tuple[Fact, ...]
    last_line: str


class StoryView(Frozen):
    title: str
    """The command it answers: "oomtrace why llama-server"."""
    heading: str
    """"OOM kill: llama-server (pid 1966928)"."""
    who: str
    what: str
    """The headline is `who` (drawn bold) followed by `what`."""
    ending: str | None
    """How the server's own log ended, for a headline that has no server-log section above it."""
    sentences: tuple[str, ...]
    """The story in a few sentences, after the headline (the Markdown summary)."""
    facts: tuple[Fact, ...]
    memory: MemoryView | None
    memory_chart: ShareChart | None
    """RAM at the kill in parts, for a picture beside `memory`."""
    timeline: Grid
    run_up: RunUp | None
    """The timeline as a picture: its records against time."""
    samples: Trace | None
    """The watcher's samples before the kill (a `--record` file's), as lines over time."""
    samples_note: str
    """What the samples' picture shows, in one sentence under it."""
    collateral: Grid | None
    holders: Grid | None
    server_log: ServerLogView | None
    raw_lines: tuple[str, ...]
    lines: tuple[int, int]
    """The log's line range of this episode, where the raw lines can be read in full."""
    unquoted: int = 0
    """Lines in that range the quote leaves out because nothing was read from them (registers,
    free-page lists); 0 where the quote was cut at its bound instead (a fact says so)."""
    warning_quote: WarningQuote | None = None
    """The first warning's own lines, quoted beside the episode's."""


class WarningQuote(Frozen):
    """The first warning's lines as the log has them, and where: "line 24", "lines 24–25",
    "lines 24 and 90 (the first and the last of its 5)", with the file when not the kill's."""

    lines: tuple[str, ...]
    where: str


def story_view(
    story: Story, ending: str | None = None, server_log: ServerLogView | None = None, hosts: int = 1
) -> StoryView:
    """One death worded; `ending` is the server log's reading, said in the headline; with more
    than one host in the input, the host it died on is the first fact."""
    episode = story.episode
    kernel = episode.victim is not None and episode.killer == "kernel"
    why = explain_episode(episode)
    facts = _kernel_facts(story, why) if kernel else _other_facts(story)
    if hosts > 1:
        facts = (Fact("host", "Host", episode.host or "(no host name)"), *facts)
    return StoryView(
        title=f"oomtrace why {story.query}",
        heading=f"OOM kill: {victim_name(episode)}",
        who=victim_name(episode),
        what=_what(episode, why),
        ending=ending,
        sentences=_sentences(story, why) if kernel else (),
        facts=facts,
        memory=_memory(story.memory),
        memory_chart=memory_chart(story.memory),
        timeline=_timeline(story),
        run_up=run_up(story.timeline),
        samples=(samples := samples_trace(story.samples, episode.moment.time, story.timeline)),
        samples_note=_samples_note(samples),
        collateral=_collateral(story),
        holders=_holders(why),
        server_log=server_log,
        raw_lines=physical_lines(episode.raw_lines),
        lines=episode.lines,
        unquoted=_unquoted(episode),
        warning_quote=_warning_quote(story.earliest_warning, episode),
    )


def physical_lines(raw: tuple[str, ...]) -> tuple[str, ...]:
    """Lines as the log has them: a wrapped line rejoin.py joined back is its parts again."""
    return tuple(part for line in raw for part in line.split("\n"))


def _warning_quote(warning: KernelWarning | None, episode: Episode) -> WarningQuote | None:
    if warning is None or not warning.raw:
        return None
    first = warning.first.line
    numbers = list(range(first, first + warning.raw[0].count("\n") + 1))
    if len(warning.raw) > 1:
        last = warning.last.line
        numbers += range(last, last + warning.raw[-1].count("\n") + 1)
    if numbers == list(range(numbers[0], numbers[-1] + 1)):
        where = f"line {numbers[0]}" if len(numbers) == 1 else f"lines {numbers[0]}\u2013{numbers[-1]}"
    else:
        where = f"lines {numbers[0]} and {numbers[-1]} (the first and the last of its {warning.count:,})"
    if warning.first.source != episode.moment.source:
        where += f" of {warning.first.source}"
    return WarningQuote(physical_lines(warning.raw), where)


def _samples_note(trace: Trace | None) -> str:
    if trace is None:
        return ""
    psi = " and the highest memory pressure (PSI avg10, some above full)" if trace.has_pressure else ""
    earlier = (
        f"; {trace.left_out:,} earlier sample(s), before a pause in sampling, are left out"
        if trace.left_out
        else ""
    )
    taken = (
        "samples this watcher took, one a second"
        if trace.live
        else "samples the watcher took while a warning was active (its --record file)"
    )
    return (
        f"{trace.samples:,} {taken}: "
        f"each point is the lowest MemAvailable{psi} of its {duration(trace.every_s)}{earlier}."
    )


def _unquoted(episode: Episode) -> int:
    if len(episode.raw_lines) >= MAX_RAW_LINES:
        return 0
    first, last = episode.lines
    return max(last - first + 1 - len(physical_lines(episode.raw_lines)), 0)


def _what(episode: Episode, why: Explanation) -> str:
    if episode.doubt is not None:
        return f" was killed by {killed_by(episode)}, says a record {doubt_words(episode)}"
    if episode.killer != "kernel" or episode.victim is None:
        return f" was killed by {killed_by(episode)}"
    constraint = constraint_words(episode.constraint, episode.constraint_from)
    what = f" was killed by the kernel OOM killer: {constraint}"
    if episode.constraint == "memcg" and episode.memcg:
        what += f" ({episode.memcg}{', ' + why.memcg_owner if why.memcg_owner else ''})"
    return what


def _sentences(story: Story, why: Explanation) -> tuple[str, ...]:
    episode = story.episode
    victim = episode.victim
    assert victim is not None
    said = [f"It happened at {clock(episode.moment)}."]
    if episode.trigger is not None:
        # A sentence starts with a capital and a word, never with a process's own lower-case
        # name; a header cut after the name (a write-up's quote) says who, not how much.
        asking = f", asking for {why.request}" if why.request else ""
        said.append(f"The killer was invoked by {episode.trigger.comm}{asking}.")
    held = f"It held {kib(victim.anon_rss_kb)} anon-rss"
    if victim.total_vm_kb is not None:
        held += f" of {kib(victim.total_vm_kb)} total-vm"
    if victim.oom_score_adj is not None:
        held += f", oom_score_adj {victim.oom_score_adj}"
    # Why the kernel chose it and where its oom_score_adj came from are the facts' to say, below
    # the summary: a report says each explanation once.
    said.append(held + ".")
    warning = story.earliest_warning
    if warning is not None:
        said.append(f"The first warning, {_summary(warning)}, came {lead_words(story)}{_which_kill(story)}.")
    else:
        said.append("Nothing in the kernel log warned before the kill.")
    others = len(story.collateral) + story.collateral_more
    said.append(
        f"In the same incident {others} other process{'es were' if others != 1 else ' was'} killed."
        if others
        else "No other process was killed in the same incident."
    )
    if story.elsewhere:
        count = len(story.elsewhere)
        said.append(
            f"At the same time {count} process{'es were' if count != 1 else ' was'} killed in "
            f"{_other_incidents(story)} on the machine: {_elsewhere_words(story)}."
        )
    return tuple(said)


def _which_kill(story: Story) -> str:
    """For a later kill of an incident: whether its first warning also came before the first kill."""
    if story.first_of_incident or story.earliest_warning is None or story.incident is None:
        return ""
    if story.warned_before_incident:
        return ", before the incident's first kill too"
    earlier = story.incident.earliest_warning
    if earlier is None:
        return ", after the incident's first kill (nothing in the kernel log warned before that)"
    return f", after the incident's first kill (before that one: {_summary(earlier)})"


def _summary(warning: KernelWarning) -> str:
    return warning_summary(warning.kind, warning.key, warning.text)


def _elsewhere_fact(story: Story) -> list[Fact]:
    """Kills of other incidents at the same time: said, and never as collateral."""
    if not story.elsewhere:
        return []
    return [Fact("elsewhere", "Meanwhile", f"in {_other_incidents(story)}: {_elsewhere_words(story)}")]


def _other_incidents(story: Story) -> str:
    return "another incident" if len({number for _, number in story.elsewhere}) == 1 else "other incidents"


def _elsewhere_words(story: Story) -> str:
    parts = []
    for other, number in story.elsewhere:
        gap = relative(moment_gap(story.episode.moment, other.moment))
        incident = f", incident {number}" if number is not None else ""
        who = f"{other.victim.comm} (pid {other.victim.pid}, " if other.victim else f"{victim_name(other)} ("
        parts.append(f"{who}{gap}, {scope_words(other)}{incident})")
    return ", ".join(parts)


def _kernel_facts(story: Story, why: Explanation) -> tuple[Fact, ...]:
    episode = story.episode
    victim = episode.victim
    assert victim is not None
    facts = [Fact("when", "When", clock(episode.moment))]
    trigger = episode.trigger
    if trigger is not None:
        pid = f" (pid {trigger.pid})" if trigger.pid is not None else ""
        asking = f", asking for {why.request}" if why.request else ""
        facts.append(Fact("invoked-by", "Invoked by", f"{trigger.comm}{pid}{asking}"))
        if why.call_path:
            facts.append(Fact("call-path", "Allocating in", why.call_path))
    else:
        facts.append(
            Fact("invoked-by", "Invoked by", "not in the log (the report header is missing)", "absent")
        )
    if episode.task_memcg:
        owner = f" ({why.task_memcg_owner})" if why.task_memcg_owner else ""
        facts.append(Fact("cgroup", "Its cgroup", episode.task_memcg + owner, brief=why.task_memcg_owner))
    uid = f", uid {victim.uid}" if victim.uid is not None else ""
    process = f"{victim.comm} (pid {victim.pid}{uid})"
    if victim.anon_rss_kb is None and victim.total_vm_kb is None:
        # Named by the kill line itself, the line is there: old kernels' (`Out of Memory: Killed
        # process 2368 (jserver).`) give only the pid and the name.
        why_not = (
            "its kill line gives only its pid and name"
            if not victim.comm_from and not victim.pid_from
            else "no kill line"
        )
        facts.append(
            Fact("victim", "Victim", f"{process}: its sizes are not in the log ({why_not})", "absent")
        )
    else:
        sizes = [
            f"anon-rss {kib(victim.anon_rss_kb)}",
            f"file-rss {kib(victim.file_rss_kb)}" if victim.file_rss_kb is not None else None,
            f"shmem-rss {kib(victim.shmem_rss_kb)}" if victim.shmem_rss_kb is not None else None,
            f"total-vm {kib(victim.total_vm_kb)}" if victim.total_vm_kb is not None else None,
        ]
        facts.append(Fact("victim", "Victim", f"{process}: " + ", ".join(s for s in sizes if s)))
    if victim.comm_from or victim.pid_from:
        facts.append(Fact("named-by", "Named by", victim.comm_from or victim.pid_from or ""))
    if victim.oom_score_adj is not None:
        adj = f"{victim.oom_score_adj} (from the {victim.oom_score_adj_from})"
        facts.append(Fact("adj", "oom_score_adj", f"{adj}: {why.adj_origin}" if why.adj_origin else adj))
    if why.reason:
        facts.append(Fact("reason", "Why it", why.reason))
    if why.outside_rss:
        facts.append(Fact("outside-rss", "Outside RSS", why.outside_rss))
    if why.cotenants:
        facts.append(Fact("cotenants", "Beside it", why.cotenants))
    facts += _unit_facts(episode)
    facts.append(Fact("collateral", "Also killed", _collateral_words(story)))
    facts += _elsewhere_fact(story)
    facts.append(Fact("first-warning", "First warning", first_warning_words(story)))
    if why.driver_frames:
        facts.append(Fact("driver-frames", "Driver frames", ", ".join(why.driver_frames)))
    machine = " on ".join(x for x in (episode.kernel, episode.hardware) if x)
    if machine:
        facts.append(Fact("kernel", "Kernel", machine))
    return tuple(facts + _caveats(episode))


def _other_facts(story: Story) -> tuple[Fact, ...]:
    """A kill with no kernel report: systemd's unit records or a userspace killer's line."""
    episode = story.episode
    facts = [Fact("when", "When", clock(episode.moment)), Fact("killer", "Killer", episode.killer)]
    if episode.killer_reason:
        facts.append(Fact("killer-reason", "Its reason", episode.killer_reason))
    victim = episode.victim
    if victim is not None:
        sizes = f", rss {kib(victim.rss_kb)}" if victim.rss_kb is not None else ""
        adj = f", oom_score_adj {victim.oom_score_adj}" if victim.oom_score_adj is not None else ""
        facts.append(Fact("victim", "Victim", f"{victim_name(episode)}{sizes}{adj}"))
    if episode.unit:
        facts.append(Fact("unit", "Unit", episode.unit))
    facts += _unit_facts(episode)
    facts.append(Fact("collateral", "Also killed", _collateral_words(story)))
    facts += _elsewhere_fact(story)
    facts.append(Fact("first-warning", "First warning", first_warning_words(story)))
    return tuple(facts + _caveats(episode))


def _unit_facts(episode: Episode) -> list[Fact]:
    facts = [Fact("systemd", "systemd", note.text) for note in episode.unit_notes]
    for witness in episode.witnesses:
        gap = moment_gap(episode.moment, witness.moment)
        after = f", {gap:.3f}s after the kill" if gap is not None else ""
        words = f"{witness.text} at {timeline_clock(witness.moment)}{after}: the same kill, seen"
        facts.append(Fact("witness", "Seen dying", words))
    restarts = restart_count(episode)
    if restarts is not None and restarts > 1:
        facts.append(Fact("crash-loop", "Crash loop", f"systemd restarted it {restarts} times"))
    return facts


def doubt_words(episode: Episode) -> str:
    """Why a killer's record is a claim, not a proven kill (Episode.doubt), as a clause."""
    if episode.doubt == UNVERIFIED:
        return (
            f"that is unverified: the log cannot prove who wrote it (any local user can log as "
            f"{episode.killer}); the journal proves it by its sender's trusted fields"
        )
    return f"{episode.doubt}, not {episode.killer}'s own process"


def _caveats(episode: Episode) -> list[Fact]:
    missing = missing_note(episode)
    facts = [Fact("missing", "Missing", missing, "caveat")] if missing else []
    if episode.doubt is not None:
        words = "not counted as a kill by check, export or watch's hooks"
        facts.append(Fact("doubt", "Unproven", f"the record {doubt_words(episode)}: {words}", "caveat"))
    return facts + [Fact("trimmed", "Not kept", note, "caveat") for note in episode.trimmed]


def _collateral_words(story: Story) -> str:
    parts = []
    for other in story.collateral:
        gap = relative(moment_gap(story.episode.moment, other.moment))
        if other.victim is not None:
            parts.append(f"{other.victim.comm} (pid {other.victim.pid}, {gap})")
        else:
            parts.append(f"{victim_name(other)} ({gap})")
    if story.collateral_more:
        parts.append(_more_kills(story))
    if parts:
        return ", ".join(parts)
    # A partial report (a quote in a write-up, a cut paste) says nothing of the rest of the log.
    return "no other kill in the input" if story.episode.missing else "no other process in this incident"


def _more_kills(story: Story) -> str:
    """What a story of a long incident leaves out: the kills further from its own."""
    return (
        f"and {story.collateral_more:,} more kill(s) in this incident, further from this one "
        "(oomtrace list --all lists every kill)"
    )


def first_warning_words(story: Story) -> str:
    warning = story.earliest_warning
    if warning is None:
        moment = story.episode.moment
        if moment.time is None and moment.uptime_s is None and moment.clock_s is None:
            return "none in the input (the kill has no time, so nothing can be placed before it)"
        return "none in the kernel log before the kill"
    repeat = f", {warning.count} times" if warning.count > 1 else ""
    return f"{_summary(warning)} ({lead_words(story)}{repeat}){_which_kill(story)}"


def _collateral(story: Story) -> Grid | None:
    if not story.collateral:
        return None
    rows = []
    for other in story.collateral:
        gap = relative(moment_gap(story.episode.moment, other.moment))
        victim = other.victim
        if victim is None:
            rows.append((victim_name(other), "", "", "", gap))
            continue
        adj = str(victim.oom_score_adj) if victim.oom_score_adj is not None else ""
        rows.append((victim.comm, str(victim.pid), kib(victim.anon_rss_kb), adj, gap))
    if story.collateral_more:
        rows.append((_more_kills(story), "", "", "", ""))
    return Grid(("victim", "pid", "anon-rss", "adj", "when"), "lrrrr", tuple(rows))


def _holders(why: Explanation) -> Grid | None:
    if not why.holders:
        return None
    rows = tuple(
        (h.name, str(h.pid), kib(h.rss_kb), str(h.oom_score_adj) if h.oom_score_adj is not None else "")
        for h in why.holders
    )
    return Grid(("process", "pid", "rss", "adj"), "lrrr", rows)


def _timeline(story: Story) -> Grid:
    rows = []
    for entry in story.timeline:
        rows.append((relative(entry.offset_s), timeline_clock(entry.moment), entry.kind, entry.short))
    if story.warnings_more:
        rows.insert(
            0,
            ("", "", "warning", f"{story.warnings_more:,} earlier warning run(s) of this incident not shown"),
        )
    if story.collateral_more:
        rows.append(("", "", "collateral", _more_kills(story)))
    return Grid(("T", "time", "kind", "event"), "rlll", tuple(rows))


def _memory(memory: MemoryPicture | None) -> MemoryView | None:
    if memory is None:
        return None
    figures = [
        (label, kib(value))
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
        )
        if value is not None
    ]
    if memory.swap_total_kb:
        used = memory.swap_total_kb - (memory.swap_free_kb or 0)
        figures.append(("swap", f"{kib(used)} used of {kib(memory.swap_total_kb)}"))
    elif memory.swap_total_kb == 0:
        figures.append(("swap", "none"))
    beside = tuple((label, amount) for label, amount in figures if label not in _CHARTED)
    return MemoryView(tuple(figures), memory.notes, beside)


# The figures the RAM picture (charts.memory_chart) shows as its parts.
_CHARTED = frozenset(
    ("free", "anon", "page cache", "slab", "page tables", "in no LRU list, slab or page table")
)
