"""`why NAME`: find the target's deaths, weigh them against its own log, and word them for a format.

Owns what `why` reads beyond the kernel log (the server's log, or the unit's journal records in
its place), the second read of a kill summarised in a long log, and what "not found" says.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from oomtrace.errors import UsageError
from oomtrace.frozen import Frozen, replace
from oomtrace.keep import Lazily
from oomtrace.model import Analysis
from oomtrace.sanitize import inert
from oomtrace.sources.serverlog import ServerLogFacts, read_server_log, summarize
from oomtrace.story import find_deaths, summarised_kill, tell, victim_name, with_server_warnings
from oomtrace.storyview import WhyView, why_view
from oomtrace.target import COMM_LEN, Target
from oomtrace.timerange import parse_when
from oomtrace.units import clock
from oomtrace.usecases.reading import Say, read, redactor
from oomtrace.usecases.settings import Settings, ranged
from oomtrace.verdict import Verdict, judge

if TYPE_CHECKING:
    from oomtrace.sources.journal import JournalQuery


class WhyResult(Frozen):
    """What `why` found, redacted as it is shown."""

    analysis: Analysis
    verdict: Verdict
    view: WhyView | None
    """The deaths told; None when nothing explains how the target ended."""
    not_found: str = ""
    """Then, the one line the error says."""


def why(
    settings: Settings,
    name: str,
    every: bool,
    server_logs: tuple[str, ...],
    server_log_end: str | None,
    say: Say,
) -> WhyResult:
    """Why NAME died: the latest death (every one with `every`), or what it took part in."""
    analysis, _ = read(settings, say)
    logs = [read_server_log(path, settings.zone, settings.year) for path in server_logs]
    if server_log_end is not None:
        if not logs:
            raise UsageError("--server-log-end needs --server-log FILE", hint="name the log it is the end of")
        ended = parse_when(server_log_end, settings.zone)
        logs = [replace(facts, last_time=ended, last_time_from="given") for facts in logs]
    target = Target.of(name)
    deaths = find_deaths(analysis, target)
    if not deaths:
        analysis, settings = _read_summarised_again(analysis, settings, target, say)
        deaths = find_deaths(analysis, target)
    last = deaths[-1] if deaths else None
    if not logs and last is not None and last.unit and settings.journal is not None:
        logs = _unit_log(settings, settings.journal, last.unit, last.moment.time)
    verdict = judge(analysis, target, deaths[-1] if deaths else None, logs, len(deaths), every)
    chosen = [e.id for e in (deaths if every else deaths[-1:])]
    redacting = redactor(settings, analysis, server_logs)
    # Told from the redacted analysis, one at a time as a format reads them: `--all` of 20,000
    # kills holds one story, not all of them.
    verdict, analysis, logs, query = redacting.apply((verdict, analysis, logs, name))
    shown = analysis
    stories = Lazily(
        len(chosen), lambda i: with_server_warnings(tell(shown, shown.episode(chosen[i]), query), logs)
    )
    if verdict.cause == "unknown" and not verdict.involvement:
        message = redacting.apply(_not_found_message(analysis, target, verdict))
        return WhyResult(analysis, verdict, None, message)
    return WhyResult(analysis, verdict, why_view(analysis, stories, verdict))


def _unit_log(
    settings: Settings, journal: JournalQuery, unit: str, kill: datetime | None
) -> list[ServerLogFacts]:
    """Under systemd the unit's own records are the server's log."""
    from oomtrace.sources.journal import unit_log

    lines = unit_log(journal, unit, settings.zone, settings.journal_reader, around=kill)
    facts = summarize(f"journal of {unit}", lines, None)
    return [facts] if facts.lines else []


def _read_summarised_again(
    analysis: Analysis, settings: Settings, target: Target, say: Say
) -> tuple[Analysis, Settings]:
    """A kill of NAME counted but not kept (the middle of a crash loop of thousands) is found
    again by a second read of the seconds around it; without a wall time to select it by, the
    "not found" message says where it is (_not_found_message)."""
    found = summarised_kill(analysis, target)
    if found is None or found.time is None or "-" in settings.kernel_logs:
        return analysis, settings  # standard input cannot be read twice: _not_found_message says how
    around = ranged(settings, found.time - timedelta(seconds=1), found.time + timedelta(seconds=1))
    say(
        f"oomtrace: the kill of {inert(target.query)!r} was summarised in a read of the whole log (it is "
        f"one of its middle kills); read again {_range_options(found.time)}"
    )
    again, _ = read(around, say)
    return again, around


def _range_options(time: datetime) -> str:
    """`--since '...' --until '...'`: the two seconds around a kill."""
    start, end = ((time + timedelta(seconds=s)).isoformat(sep=" ", timespec="seconds") for s in (-1, 1))
    return f"--since '{start}' --until '{end}'"


def _not_found_message(analysis: Analysis, target: Target, verdict: Verdict) -> str:
    name = target.query
    summarised = summarised_kill(analysis, target)
    if summarised is not None:
        # Only one read from standard input or without a wall time gets here: others were read again.
        where = f"line {summarised.line} of {summarised.source}"
        if summarised.time is not None:
            return (
                f"the kill of {name!r} is in the log ({where}, {summarised.time.isoformat(sep=' ')}) but was "
                "summarised with the middle kills of a long log, to bound memory, and standard input cannot "
                f"be read twice: pipe the log in again with {_range_options(summarised.time)}"
            )
        uptime = f", uptime {summarised.uptime_s:.0f}s" if summarised.uptime_s is not None else ""
        return (
            f"the kill of {name!r} is in the log ({where}{uptime}) but was summarised with the middle "
            f"kills of a long log, to bound memory; its line has no wall-clock time to select it by: "
            "give --boot-time, then --since/--until around it"
        )
    if verdict.server_log is not None:
        return verdict.headline
    names = analysis.source_names
    first, last = analysis.span()
    span = f" ({clock(first)} to {clock(last)})" if first and last else ""
    victims = [victim_name(e) for e in analysis.episodes if e.victim]
    if victims:
        shown = ", ".join(dict.fromkeys(victims[-10:]))
        others = f"; OOM victims in it: {shown}"
    else:
        others = "; it holds no OOM kills at all"
    ranged = analysis.range_note()
    if ranged:
        # The kills the input holds may all be outside the range: say the range, not "none at all".
        others = (others if victims else "") + f"; {ranged}"
    if victims and not target.by_pid:
        # `why python` for a script the kernel calls python3, `why vllm` for a pt_main_thread.
        others += (
            "; the kernel names a process by its comm (its executable's name, cut to "
            f"{COMM_LEN} characters), not by its command line"
        )
    return f"no OOM kill of {name!r} in {names}{span}{others}"
