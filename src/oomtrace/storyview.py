"""`why` and `report` worded once: every phrase and row a format draws, computed here.

A format lays these out (a rich grid, a Markdown table, a size limit) and escapes them for its
medium; it never words a fact itself, so the terminal and a pasted report cannot say the same
thing two ways. JSON renders the model beneath (`WhyView.stories_data`, `.verdict_data`): it is data.
"""

from __future__ import annotations

from collections.abc import Sequence

from oomtrace.charts import (
    Bars,
    kills_over_time,
)
from oomtrace.explain import (
    lost_records_note,
    plan_comparison,
)
from oomtrace.frozen import Frozen
from oomtrace.keep import Lazily
from oomtrace.model import Analysis, Episode
from oomtrace.story import Report, Story, victim_name
from oomtrace.storyfacts import (
    Fact,
    Grid,
    MemoryView,
    ServerLogView,
    StoryView,
    first_warning_words,
    story_view,
)
from oomtrace.units import clock, clock_time
from oomtrace.verdict import Verdict

__all__ = [
    "Fact",
    "Grid",
    "MemoryView",
    "ReportView",
    "ServerLogView",
    "StoryView",
    "WhyView",
    "footer",
    "nothing_found",
    "report_view",
    "story_view",
    "why_view",
]


class WhyView(Frozen):
    query: str
    cause: str
    verdict: str
    """The verdict in one sentence."""
    stories: Sequence[StoryView]
    """Each death of the target, oldest first; the last carries the server log's reading.
    Worded as a format reads them (JSON never does; the terminal one at a time)."""
    involved: StoryView | None
    """When the target was not killed but took part in a kill (it invoked the killer)."""
    involved_heading: str
    """What `involved` is: "The OOM kill it took part in", or the last of several."""
    server_log: ServerLogView | None
    every: str
    """The command that prints every story, for a format that has to leave some out."""
    footer: str
    stories_data: Sequence[Story]
    """The model the words came from, for a format that renders data (JSON)."""
    verdict_data: Verdict
    which_kill: str = ""
    """Which of the target's several kills the stories are ("The last of 3 kills of ..."), for a
    format whose stories do not carry the verdict (the terminal's); empty for one kill."""


class ReportView(Frozen):
    title: str
    heading: str
    """"2 incident(s), 3 kill(s), from 2026-05-10 14:02:11+00:00 to 2026-05-10 16:40:09+00:00"."""
    overview: Grid | None
    """One row an incident: where it starts, who died first, the constraint, what warned first."""
    by_victim: Grid | None
    by_cause: Grid | None
    kills_chart: Bars | None
    """Kills per hour or day over the report's range."""
    notes: tuple[str, ...]
    stories: Sequence[StoryView]
    every: str
    footer: str
    report_data: Report


def why_view(analysis: Analysis, stories: Sequence[Story], verdict: Verdict) -> WhyView:
    server_log = _server_log(verdict, stories[-1] if stories else None)

    def word(index: int) -> StoryView:
        last = index == len(stories) - 1
        reading = verdict.server_log if last else None
        ending = reading.note if reading else None
        return story_view(stories[index], ending, server_log if last else None, len(analysis.hosts))

    views = Lazily(len(stories), word)
    involved = (
        story_view(verdict.involved_story, hosts=len(analysis.hosts)) if verdict.involved_story else None
    )
    return WhyView(
        query=verdict.query,
        cause=verdict.cause,
        verdict=verdict.headline,
        stories=views,
        involved=involved,
        involved_heading=_involved_heading(verdict),
        server_log=server_log,
        every=f"oomtrace why {verdict.query} --all --format json",
        which_kill=verdict.which_kill[:1].upper() + verdict.which_kill[1:],
        footer=footer(analysis),
        stories_data=stories,
        verdict_data=verdict,
    )


def _involved_heading(verdict: Verdict) -> str:
    """Which kill the involved story tells: the last of those of the target's strongest part."""
    parts = [i for i in verdict.involvement if i.role == verdict.involved_role]
    if verdict.involved_story is None or len(parts) <= 1:
        return "The OOM kill it took part in"
    verb = {"chosen": "was chosen in", "trigger": "invoked", "holder": "held memory in"}.get(
        parts[0].role, "ran beside"
    )
    return f"The last of the {len(parts)} OOM kills it {verb}"


def report_view(analysis: Analysis, report: Report) -> ReportView:
    kills = sum(n for _, n in report.by_victim)
    notes = (
        (f"{report.untimed} episode(s) had no wall-clock time and were left out; give --boot-time",)
        if report.untimed
        else ()
    )
    told = f"{len(report.stories)} incident(s), {kills:,} kill(s)"
    if report.kept != kills:
        # The counts are of the whole log; the incidents told are those of the kills kept.
        told = (
            f"{kills:,} kill(s) in {report.incidents:,} incident(s), {report.kept:,} of the kills kept "
            f"whole and told in {len(report.stories):,} incident(s)"
        )
    return ReportView(
        title="OOM post-incident report",
        heading=f"{told}{_report_range(report)}",
        overview=_overview(report),
        by_victim=_counts("victim", report.by_victim),
        by_cause=_counts("cause", report.by_cause),
        kills_chart=kills_over_time(report.kill_times, report.elided_times),
        notes=notes,
        stories=Lazily(
            len(report.stories), lambda i: story_view(report.stories[i], hosts=len(analysis.hosts))
        ),
        every="oomtrace report --format json",
        footer=footer(analysis),
        report_data=report,
    )


def _report_range(report: Report) -> str:
    """The range the report covers: the one asked for, else from its first kill to its last."""
    first = report.since or min(report.kill_times, default=None)
    last = report.until or max(report.kill_times, default=None)
    if first is None or last is None:
        return ""
    return f", from {clock_time(first)} to {clock_time(last)}"


def _overview(report: Report) -> Grid | None:
    if not report.stories:
        return None
    rows = []
    for story in report.stories:
        episode = story.episode
        # The first-warning fact's own words: the overview and the story say it one way.
        first = first_warning_words(story)
        incident = str(story.incident.id) if story.incident else ""
        rows.append((incident, clock(episode.moment), victim_name(episode), _scope(episode), first))
    header = ("incident", "time", "first victim", "constraint", "first warning")
    return Grid(header, "rllll", tuple(rows))


def _scope(episode: Episode) -> str:
    """The overview's constraint cell: which limit, or which killer when it was not the kernel."""
    if episode.killer != "kernel":
        return episode.killer
    if episode.constraint == "memcg" and episode.memcg:
        return f"memcg {episode.memcg}"
    return episode.constraint or "not in the log"


def _counts(name: str, counts: tuple[tuple[str, int], ...]) -> Grid | None:
    if not counts:
        return None
    return Grid((name, "kills"), "lr", tuple((label, f"{n:,}") for label, n in counts))


def _server_log(verdict: Verdict, story: Story | None) -> ServerLogView | None:
    reading = verdict.server_log
    if reading is None:
        return None
    facts = reading.facts
    when = clock_time(facts.last_time) if facts.last_time else "unknown"
    origin = {
        "mtime": " (the file's modification time: it prints no stamps)",
        "given": " (--server-log-end)",
    }.get(facts.last_time_from or "", "")
    rows = [
        Fact("file", "File", f"{facts.path} ({facts.lines} lines)"),
        Fact("last-time", "Last line at", when + origin),
        Fact("ending", "Ending", reading.note),
    ]
    comparison = plan_comparison(facts.plan, verdict.episode, story.memory if story else None)
    if comparison:
        rows.append(Fact("plan", "Its plan", comparison))
    return ServerLogView(tuple(rows), facts.last_line or "")


def footer(analysis: Analysis) -> str:
    """What was read and what it held, in one paragraph: every format ends with it."""
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
    notes = [f"{s.name}: {s.problem}." for s in analysis.sources if s.problem]
    lost = lost_records_note(analysis)
    if lost:
        notes.append(f"Incomplete: {lost}.")
    ranged = analysis.range_note()
    if ranged:
        notes.append(f"Only the {ranged}.")
    if analysis.read_twice:
        notes.append(f"{analysis.read_twice:,} kill(s) read twice were counted once.")
    if analysis.warnings_read_twice:
        notes.append(
            f"{analysis.warnings_read_twice:,} warning line(s) found in two sources were counted once."
        )
    if claims := sum(1 for e in analysis.episodes if not e.proven):
        notes.append(
            f"{claims:,} kill(s) rest on a record whose sender is not proven (a userspace killer's or "
            "systemd's, which any local user can write): check, export and watch's hooks do not "
            "count them."
        )
    if analysis.elided:
        notes.append(f"{analysis.elided.note()}.")
    return " ".join([f"Read {names}: {records:,} {unit}{span}. {counts}{unparsed}.", *notes])


def nothing_found(analysis: Analysis) -> str:
    """What a list with no kills says, with the range that may explain it."""
    ranged = analysis.range_note()
    return f"No OOM kills in the {ranged}." if ranged else "No OOM kills found."
