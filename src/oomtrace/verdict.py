"""The one-line verdict of `why`: what ended the process, from the kernel's record and its own log."""

from __future__ import annotations

from dataclasses import dataclass

from oomtrace.model import Analysis, Crash, Episode
from oomtrace.services import restart_count
from oomtrace.sources.serverlog import ServerLogFacts
from oomtrace.story import Story, cause_of, killed_by, name_matches, tell, victim_name
from oomtrace.units import clock, clock_time, duration, kib

# A server log that ends within this long before the kill is that kill's log; a log that runs
# on for longer than RUNS_ON_S after it belongs to a process that survived it.
SAME_DEATH_S = 15 * 60
RUNS_ON_S = 60
# A last line this close after the kill is written at the kill (the kernel's and the server's
# clocks are one clock, but their lines are stamped when logged, not when made).
AT_THE_KILL_S = 2
NOT_THIS_KILL_S = 6 * 3600

CAUSES = (
    "kernel-oom",
    "cgroup-oom",
    "userspace-oom-killer",
    "out-of-memory-error",
    "crash",
    "clean-exit",
    "unknown",
)


@dataclass(frozen=True, slots=True)
class Involvement:
    """The target took part in a kill without being its victim."""

    role: str
    """"trigger" (it invoked the killer) or "bystander" (it sat in the tasks table)."""
    episode: Episode


@dataclass(frozen=True, slots=True)
class ServerLogReading:
    """A server log set against the kill it is evidence for."""

    facts: ServerLogFacts
    gap_s: float | None
    """Seconds from the log's last line to the kill (negative: the log runs on past it)."""
    note: str


@dataclass(frozen=True, slots=True)
class Verdict:
    query: str
    cause: str
    """One of CAUSES."""
    headline: str
    found: bool
    """A kill of the target itself is in the kernel's record."""
    episode: Episode | None
    server_log: ServerLogReading | None
    involvement: tuple[Involvement, ...]
    crash: Crash | None
    searched: str
    involved_story: Story | None = None
    """The story of the kill the target took part in, when it was not the victim."""


def judge(
    analysis: Analysis,
    query: str,
    death: Episode | None,
    logs: list[ServerLogFacts],
) -> Verdict:
    """Weigh the kernel's record of the target against its own log."""
    involvement = tuple(_involvement(analysis, query)) if death is None else ()
    # Without a death of its own, the log is set against the kill the target took part in.
    reading = _best_reading(logs, death or (involvement[-1].episode if involvement else None))
    searched = _searched(analysis)

    def verdict(
        cause: str,
        headline: str,
        *,
        found: bool = False,
        episode: Episode | None = None,
        involvement: tuple[Involvement, ...] = (),
        crash: Crash | None = None,
    ) -> Verdict:
        involved = None
        if involvement and involvement[-1].episode.victim is not None:
            episode_of = involvement[-1].episode
            involved = tell(analysis, episode_of, episode_of.victim.comm if episode_of.victim else query)
        return Verdict(
            query, cause, headline, found, episode, reading, involvement, crash, searched, involved
        )

    if death is not None:
        return verdict(cause_of(death), _killed_headline(death, reading), found=True, episode=death)
    crash = next((c for c in reversed(analysis.crashes) if name_matches(query, c.comm)), None)
    facts = reading.facts if reading else None
    no_kill = " (no kernel OOM kill of it in the kernel log)"
    if facts is not None and facts.ending == "out-of-memory-error":
        headline = f"{query} reported its own out-of-memory error and exited: {facts.ending_line}{no_kill}"
        return verdict("out-of-memory-error", headline, involvement=involvement)
    if crash is not None or (facts is not None and facts.ending == "crash"):
        evidence = crash.text if crash is not None else (facts.ending_line if facts else "")
        return verdict("crash", f"{query} crashed: {evidence}{no_kill}", involvement=involvement, crash=crash)
    if involvement:
        return verdict(
            "unknown", _involved_headline(query, involvement[-1], reading), involvement=involvement
        )
    if facts is not None and facts.ending == "clean":
        return verdict("clean-exit", f"{query} shut down cleanly: {facts.ending_line}")
    return verdict("unknown", _unknown_headline(query, reading, analysis, searched))


def _best_reading(logs: list[ServerLogFacts], death: Episode | None) -> ServerLogReading | None:
    """The log whose end lies closest before the kill (or the latest, with no kill)."""
    if not logs:
        return None
    readings = [_read(facts, death) for facts in logs]
    timed = [r for r in readings if r.gap_s is not None]
    if timed:
        return min(
            timed, key=lambda r: abs(r.gap_s if r.gap_s is not None and r.gap_s >= 0 else 10 * (r.gap_s or 0))
        )
    return readings[-1]


def _read(facts: ServerLogFacts, death: Episode | None) -> ServerLogReading:
    if death is None or death.moment.time is None or facts.last_time is None:
        return ServerLogReading(facts, None, _ending_words(facts))
    gap = (death.moment.time - facts.last_time).total_seconds()
    when = {
        "mtime": "its file's modification time, which a copy changes: see --server-log-end",
        "given": "--server-log-end",
    }.get(facts.last_time_from or "", "its last stamped line")
    if gap < -RUNS_ON_S:
        note = (
            f"the log runs on {duration(-gap)} past the kill ({when}): "
            "it is not the log of the process that died"
        )
    elif gap < -AT_THE_KILL_S:
        # Written after the kill: whatever wrote it was alive then. Never "the signature of a kill".
        note = (
            f"the log runs on {duration(-gap)} past the kill ({when}): it may be another process's "
            "log, or the kill came before this process's end"
        )
    elif gap > NOT_THIS_KILL_S:
        note = f"the log ends {duration(gap)} before the kill ({when}): it is not this kill's log"
    elif gap > SAME_DEATH_S:
        note = f"the log ends {duration(gap)} before the kill ({when}); it may have been idle"
    else:
        note = f"the log ends {duration(max(gap, 0))} before the kill ({when}): {_ending_words(facts)}"
    return ServerLogReading(facts, gap, note)


def _ending_words(facts: ServerLogFacts) -> str:
    return {
        "silent": "it stops with no error, the signature of a kill",
        "out-of-memory-error": "it reported its own out-of-memory error",
        "crash": "it reports a crash",
        "clean": "it shut down cleanly",
        "killed": "the shell says Killed (SIGKILL)",
    }[facts.ending]


def _killed_headline(death: Episode, reading: ServerLogReading | None) -> str:
    headline = f"{victim_name(death)} was killed by {killed_by(death)} at {clock(death.moment)}"
    restarts = restart_count(death)
    if restarts is not None and restarts > 1:
        headline += f"; systemd restarted it {restarts} times: a crash loop"
    if reading is not None:
        headline += f"; {reading.note}"
    return headline


def _involvement(analysis: Analysis, query: str) -> list[Involvement]:
    found = []
    for episode in analysis.episodes:
        if episode.trigger is not None and name_matches(query, episode.trigger.comm):
            found.append(Involvement("trigger", episode))
        elif any(name_matches(query, str(row.get("name", ""))) for row in episode.tasks):
            found.append(Involvement("bystander", episode))
    return found


def _involved_headline(query: str, involved: Involvement, reading: ServerLogReading | None) -> str:
    episode = involved.episode
    victim = episode.victim
    killed = (
        f"the kernel killed {victim.comm} (pid {victim.pid}, {kib(victim.anon_rss_kb)} anon) instead"
        if victim is not None
        else "the report does not say whom it killed"
    )
    when = clock(episode.moment)
    if involved.role == "trigger":
        head = f"{query} invoked the OOM killer at {when}; {killed}"
    else:
        head = f"{query} was running beside the OOM kill at {when} and was not chosen; {killed}"
    if reading is not None and reading.gap_s is not None and reading.gap_s < -RUNS_ON_S:
        head += f", and {query}'s log runs on past it"
    return head


def _searched(analysis: Analysis) -> str:
    first, last = analysis.span()
    span = f" ({clock(first)} to {clock(last)})" if first and last else ""
    return f"{analysis.source_names or 'no kernel log'}{span}"


def _unknown_headline(query: str, reading: ServerLogReading | None, analysis: Analysis, searched: str) -> str:
    text = f"nothing in the kernel log explains how {query} ended: searched {searched}"
    if reading is None:
        return text
    facts = reading.facts
    text += f"; its log {_ending_words(facts)}"
    first, last = analysis.span()
    if facts.last_time is not None and first and last and first.time and last.time:
        when = clock_time(facts.last_time)
        if first.time <= facts.last_time <= last.time:
            text += f"; the kernel log covers its last line ({when})"
        else:
            text += (
                f"; the kernel log does not cover its last line ({when}): "
                "look in the log of that time (journalctl -k -b -1, or kern.log.1)"
            )
    return text
