"""The one-line verdict of `why`: what ended the process, from the kernel's record and its own log."""

from __future__ import annotations

from oomtrace.explain import large_holders, top_holders
from oomtrace.frozen import Frozen, replace
from oomtrace.model import UNVERIFIED, Analysis, Crash, Episode
from oomtrace.services import cause_of, restart_count
from oomtrace.sources.serverlog import ServerLogFacts
from oomtrace.story import Story, killed_by, tell, victim_name
from oomtrace.target import Target
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


class Involvement(Frozen):
    """The target took part in a kill without being its victim."""

    role: str
    """One of ROLES: "chosen" (the kernel chose it and killed its child in its place, pre-5.0),
    "trigger" (it invoked the killer), "holder" (it was one of the large processes in the tasks
    table) or "bystander" (it sat in the tasks table)."""
    episode: Episode
    rss_kb: int | None = None
    """Its resident set in the tasks table, where its row says."""


# A part in a kill, strongest first: a headline leads with the strongest the target played.
ROLES = ("chosen", "trigger", "holder", "bystander")


class ServerLogReading(Frozen):
    """A server log set against the kill it is evidence for."""

    facts: ServerLogFacts
    gap_s: float | None
    """Seconds from the log's last line to the kill (negative: the log runs on past it)."""
    note: str
    ending: str
    """The log's ending set against the kill: its own (ServerLogFacts.ending), or "runs-on"
    where it stops with no error more than AT_THE_KILL_S after the kill by a stamped (or given)
    last line: what wrote it was alive then."""


class Verdict(Frozen):
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
    involved_role: str | None = None
    """The strongest part (ROLES) it played, whose last kill `involved_story` tells."""
    which_kill: str = ""
    """Where the target was killed several times, which of its kills the story tells ("the last
    of 3 kills of llama-server in the log (...)"); empty for one kill."""


def judge(
    analysis: Analysis,
    target: Target | str,
    death: Episode | None,
    logs: list[ServerLogFacts],
    kills: int = 1,
    every: bool = False,
) -> Verdict:
    """Weigh the kernel's record of the target against its own log. `kills` is how many kills
    of the target the log holds (`death` is the latest); `every` when all are told (--all).
    A plain name is resolved here: the watcher judges a kill it already holds by its victim's comm."""
    if isinstance(target, str):
        target = Target.of(target)
    query = target.query
    involvement = tuple(_involvement(analysis, target)) if death is None else ()
    strongest = _strongest(involvement)
    # Without a death of its own, the log is set against the kill the target took part in.
    reading = _best_reading(
        logs, death or (strongest[-1].episode if strongest else None), None if death else query
    )
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
        if strongest and strongest[-1].episode.victim is not None:
            episode_of = strongest[-1].episode
            involved = tell(analysis, episode_of, episode_of.victim.comm if episode_of.victim else query)
        role = strongest[0].role if strongest else None
        return Verdict(
            query, cause, headline, found, episode, reading, involvement, crash, searched, involved, role
        )

    if death is not None:
        which = _of_many(query, kills, every)
        headline = _killed_headline(death, reading) + which
        told = verdict(cause_of(death), headline, found=True, episode=death)
        return replace(told, which_kill=which.removeprefix("; ")) if which else told
    crash = next((c for c in reversed(analysis.crashes) if target.names(c.comm)), None)
    facts = reading.facts if reading else None
    no_kill = " (no kernel OOM kill of it in the kernel log)"
    if facts is not None and facts.ending == "out-of-memory-error":
        headline = f"{query} reported its own out-of-memory error and exited: {facts.ending_line}{no_kill}"
        return verdict("out-of-memory-error", headline, involvement=involvement)
    if crash is not None or (facts is not None and facts.ending == "crash"):
        evidence = crash.text if crash is not None else (facts.ending_line if facts else "")
        return verdict("crash", f"{query} crashed: {evidence}{no_kill}", involvement=involvement, crash=crash)
    if involvement:
        subject = _process_named(target, strongest[0].episode) if target.by_pid else query
        return verdict("unknown", _involved_headline(subject, strongest, reading), involvement=involvement)
    if facts is not None and facts.ending == "clean":
        return verdict("clean-exit", f"{query} shut down cleanly: {facts.ending_line}")
    return verdict("unknown", _unknown_headline(query, reading, analysis, searched))


def _best_reading(
    logs: list[ServerLogFacts], death: Episode | None, survivor: str | None = None
) -> ServerLogReading | None:
    """The log whose end lies closest before the kill (or the latest, with no kill); `survivor`
    names the target when the kill was of another process (its log running on is expected)."""
    if not logs:
        return None
    readings = [_read(facts, death, survivor) for facts in logs]
    timed = [r for r in readings if r.gap_s is not None]
    if timed:
        return min(
            timed, key=lambda r: abs(r.gap_s if r.gap_s is not None and r.gap_s >= 0 else 10 * (r.gap_s or 0))
        )
    return readings[-1]


def _read(facts: ServerLogFacts, death: Episode | None, survivor: str | None = None) -> ServerLogReading:
    if death is None or death.moment.time is None or facts.last_time is None:
        return ServerLogReading(facts, None, _ending_words(facts), facts.ending)
    gap = (death.moment.time - facts.last_time).total_seconds()
    from_mtime = facts.last_time_from == "mtime"
    when = {
        "mtime": "its file's modification time, which a copy changes: see --server-log-end",
        "given": "--server-log-end",
    }.get(facts.last_time_from or "", "its last stamped line")
    ending = facts.ending
    if gap < -AT_THE_KILL_S and from_mtime:
        # A copy without -p or a touch moves the time later: the log's end is not known.
        note = (
            f"its file's modification time is {duration(-gap)} after the kill, which may be when it "
            f"was copied or touched, not when it ended: give --server-log-end TIME (when its last "
            f"line was written) to set it against the kill; "
            + ("it stops with no error" if facts.ending == "silent" else _ending_words(facts))
        )
    elif gap < -AT_THE_KILL_S:
        # Written after the kill: whatever wrote it was alive then. Never "the signature of a kill".
        ending = "runs-on" if facts.ending == "silent" else facts.ending
        if survivor is not None:
            note = (
                f"the log runs on {duration(-gap)} past the kill ({when}), as it should: "
                f"{survivor} was not killed"
            )
        elif gap < -RUNS_ON_S:
            note = (
                f"the log runs on {duration(-gap)} past the kill ({when}): "
                "it is not the log of the process that died"
            )
        else:
            note = (
                f"the log runs on {duration(-gap)} past the kill ({when}): it may be another process's "
                "log, or the kill came before this process's end"
            )
    elif gap > NOT_THIS_KILL_S:
        note = f"the log ends {duration(gap)} before the kill ({when}): it is not this kill's log"
    elif gap > SAME_DEATH_S:
        note = f"the log ends {duration(gap)} before the kill ({when}); it may have been idle"
    else:
        words = _ending_words(facts)
        if survivor is not None and facts.ending == "silent":
            # No error is the signature of a kill, but not of this one: its victim was another.
            words = f"it stops with no error, yet the kernel log holds no kill of {survivor}"
        note = f"the log ends {duration(max(gap, 0))} before the kill ({when}): {words}"
    return ServerLogReading(facts, gap, note, ending)


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
    if death.doubt is not None:
        # A record any user could have written: the headline says whose word it is.
        claim = "that is unverified" if death.doubt == UNVERIFIED else death.doubt
        headline += f", says a record {claim}"
    restarts = restart_count(death)
    if restarts is not None and restarts > 1:
        headline += f"; systemd restarted it {restarts} times: a crash loop"
    if reading is not None:
        headline += f"; {reading.note}"
    return headline


def _of_many(query: str, kills: int, every: bool) -> str:
    """Which of several kills of the target the headline tells."""
    if kills <= 1:
        return ""
    if every:
        return f"; the last of {kills} kills of {query} in the log, each told below"
    return f"; the last of {kills} kills of {query} in the log (oomtrace why {query} --all tells each)"


def _involvement(analysis: Analysis, target: Target) -> list[Involvement]:
    found = []
    # `why 4121` asks about the process of that pid wherever it stands (a trigger, a row), as
    # `why NAME` asks about the name.
    for episode in analysis.episodes:
        chosen = episode.chosen
        if chosen is not None and target.is_process(chosen.comm, chosen.pid):
            found.append(Involvement("chosen", episode, _rss_of(episode, target)))
            continue
        # A userspace killer's trigger is the daemon itself: it invoked no kernel OOM killer.
        kernel = episode.killer == "kernel"
        trigger = episode.trigger
        if kernel and trigger is not None and target.is_process(trigger.comm, trigger.pid):
            found.append(Involvement("trigger", episode, _rss_of(episode, target)))
            continue
        rss = _rss_of(episode, target)
        if rss is not None and any(target.is_process(h.name, h.pid) for h in large_holders(episode)):
            found.append(Involvement("holder", episode, rss))
        elif any(target.is_process(str(row.get("name", "")), row.get("pid")) for row in episode.tasks):
            found.append(Involvement("bystander", episode, rss))
    return found


def _rss_of(episode: Episode, target: Target) -> int | None:
    holders = top_holders(episode, len(episode.tasks))
    sizes = [h.rss_kb for h in holders if target.is_process(h.name, h.pid)]
    return max(sizes) if sizes else None


def _strongest(involvement: tuple[Involvement, ...]) -> tuple[Involvement, ...]:
    """The kills in which the target played its strongest part (ROLES order), oldest first."""
    for role in ROLES:
        found = tuple(i for i in involvement if i.role == role)
        if found:
            return found
    return ()


def _times(count: int) -> str:
    return "twice" if count == 2 else f"{count} times"


def _when_list(episodes: list[Episode]) -> str:
    """ "at 2026-11-19 21:47:34+00:00 and 21:47:35": the first in full, later ones of the same day
    by their clock time; past three, the first and the last."""
    first = episodes[0].moment
    times = [clock(first)]
    for episode in episodes[1:]:
        moment = episode.moment
        same_day = (
            moment.time is not None
            and first.time is not None
            and (moment.time.date(), moment.time.utcoffset()) == (first.time.date(), first.time.utcoffset())
        )
        times.append(moment.time.strftime("%H:%M:%S") if same_day and moment.time else clock(moment))
    if len(times) > 3:
        return f"first at {times[0]}, last at {times[-1]}"
    return "at " + (times[0] if len(times) == 1 else ", ".join(times[:-1]) + " and " + times[-1])


def _killed_instead(episodes: list[Episode]) -> str:
    victims = [e.victim for e in episodes if e.victim is not None]
    if not victims:
        return "the report does not say whom it killed"
    named = [
        f"{v.comm} (pid {v.pid}{f', {kib(v.anon_rss_kb)} anon' if v.anon_rss_kb is not None else ''})"
        for v in victims[:3]
    ]
    more = f" and {len(victims) - 3} more" if len(victims) > 3 else ""
    listed = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
    missing = len(episodes) - len(victims)
    unknown = f" (and {missing} whose report does not say)" if missing else ""
    return f"the kernel killed {listed}{more}{unknown} instead"


def _process_named(target: Target, episode: Episode) -> str:
    """`dashboard-servi (pid 4121)` for `why 4121`: the comm the kill's report gives that pid."""
    comms = [episode.chosen.comm] if episode.chosen is not None and episode.chosen.pid == target.pid else []
    if episode.trigger is not None and episode.trigger.pid == target.pid:
        comms.append(episode.trigger.comm)
    comms += [str(row.get("name", "")) for row in episode.tasks if row.get("pid") == target.pid]
    comm = next((c for c in comms if c), None)
    return f"{comm} (pid {target.pid})" if comm else f"pid {target.pid}"


def _involved_headline(
    query: str, strongest: tuple[Involvement, ...], reading: ServerLogReading | None
) -> str:
    episodes = [i.episode for i in strongest]
    role = strongest[0].role
    when = _when_list(episodes)
    count = len(episodes)
    kills = "the OOM kill" if count == 1 else f"{count} OOM kills"
    if role == "chosen":
        chosen = [e.chosen for e in episodes if e.chosen is not None]
        scores = ", ".join(f"score {c.score}" for c in chosen[:3])
        children = [f"{e.victim.comm} (pid {e.victim.pid})" for e in episodes if e.victim is not None]
        child = children[0] if len(children) == 1 else f"{len(children)} children"
        return (
            f"{query} was chosen by the OOM killer {_times(count) + ', ' if count > 1 else ''}{when} "
            f"({scores}), and the kernel killed its child {child} in its place"
        )
    if role == "trigger":
        head = (
            f"{query} invoked the OOM killer {when}; never chosen"
            if count == 1
            else f"{query} invoked the OOM killer {_times(count)}, {when}; never chosen"
        )
    elif role == "holder":
        held = max((i.rss_kb for i in strongest if i.rss_kb is not None), default=None)
        size = f" ({kib(held)} resident{' at most' if count > 1 else ''})" if held is not None else ""
        head = f"{query} was one of the largest processes{size} at {kills}, {when}, and was never chosen"
    else:
        head = f"{query} was running beside {kills}, {when}, and was never chosen"
    head += f"; {_killed_instead(episodes)}"
    if reading is not None and reading.ending == "runs-on":
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
    text += f"; its log: {_ending_words(facts)}"
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
