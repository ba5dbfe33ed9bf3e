"""Kills the kernel did not report alone: systemd's unit records and userspace OOM killers."""

from __future__ import annotations

import bisect
import re

from oomtrace import events as ev
from oomtrace.frozen import replace
from oomtrace.lazyregex import lazy_compile
from oomtrace.messages.userspace import cut_oomd_path
from oomtrace.model import CONTAINER_NAMED, UNVERIFIED, Episode, Moment, Trigger, UnitNote, Victim, Witness
from oomtrace.prefixes.stamps import in_zone, parse_iso, zone_at
from oomtrace.records import PROVEN

# A unit record this long after a kill (systemd notices the exit, then restarts) belongs to it.
UNIT_AFTER_S = 300.0
UNIT_BEFORE_S = 10.0
# Unit records of one unit closer together than this are one death.
UNIT_GROUP_S = 60.0
# Unit records with no times: this many records apart at most to be one death.
UNIT_GROUP_LINES = 20
# How many of the latest unit-record groups a record may join (units interleave on a busy host).
_RECENT_GROUPS = 64
_UNIT = re.compile(r"[^/]+\.(?:service|scope)$")
USERSPACE_KILLERS = ("systemd-oomd", "earlyoom", "nohang", "lmkd", "lowmemorykiller")
# Killers whose records any local user can write too (`logger -t earlyoom`): a kill of theirs is
# a claim until the journal proves its sender (records.Record.sender).
CLAIMING_KILLERS = ("systemd-oomd", "earlyoom", "nohang", "systemd")


# systemctl status's `since` time: `Sat 2025-10-04 21:13:58 UTC` (weekday, date, clock, zone).
_SINCE = lazy_compile(
    r"(?:\S{2,4} )?(?P<wall>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?: (?P<zone>[A-Za-z][\w/+-]{1,31}))?"
)


def since_moment(moment: Moment, since: str | None) -> Moment:
    """A unit status's record at the time its `since` says the unit entered that state; the
    line's own prefix, if it has one, is when the status was printed. A time in a zone not
    known is no time (it might be any offset)."""
    if since is None:
        return moment
    match = _SINCE.fullmatch(since)
    wall = parse_iso(match["wall"]) if match else None
    zone = zone_at(match["zone"], wall, None) if wall is not None and match and match["zone"] else None
    if wall is None or zone is None:
        return replace(moment, time=None, uptime_s=None, clock_s=None)
    return replace(moment, time=in_zone(wall, zone), raw=since, uptime_s=None, clock_s=None)


def doubt_of(killer: str, sender: str | None) -> str | None:
    """Episode.doubt of a kill `killer` is said to have made, written by `sender`. A kernel kill
    is doubted only where the journal shows another writer (a text log's kernel lines are
    trusted as the log itself is)."""
    if sender == PROVEN or (killer == "kernel" and sender is None):
        return None
    if killer not in (*CLAIMING_KILLERS, "kernel"):
        return None
    if sender is None:
        return UNVERIFIED
    if sender.startswith("uid 0,"):
        return f"claimed by another process than {killer} ({sender})"
    return f"claimed by an unprivileged process ({sender})"


def cause_of(episode: Episode) -> str:
    """The verdict for a kill on record: which killer, global or a cgroup's limit."""
    if episode.killer in USERSPACE_KILLERS:
        return "userspace-oom-killer"
    return "cgroup-oom" if episode.constraint == "memcg" else "kernel-oom"


def victim_label(episode: Episode) -> str:
    """Who died, as counts name it: the process name, else the unit systemd said it of."""
    if episode.victim is not None:
        return episode.victim.comm
    if episode.unit is not None:
        return str(episode.unit)
    return "(not named)" if episode.killer != "kernel" else "(unknown)"


def unit_of(cgroup: str | None) -> str | None:
    """The innermost systemd unit a cgroup path names (llama.service, session-3.scope)."""
    if not cgroup:
        return None
    for part in reversed([p for p in cgroup.split("/") if p]):
        if _UNIT.match(part):
            return part
    return None


def bare_episode(killer: str, moment: Moment, host: str | None, **fields: object) -> Episode:
    """An episode with no kernel report behind it: every report field empty, nothing invented."""
    empty: dict[str, object] = {
        "id": 0,
        "killer": killer,
        "moment": moment,
        "began": moment,
        "host": host,
        "trigger": None,
        "constraint": None,
        "constraint_from": None,
        "memcg": None,
        "task_memcg": None,
        "victim": None,
        "chosen": None,
        "task_columns": (),
        "tasks": (),
        "kernel": None,
        "hardware": None,
        "call_trace": (),
        "mem_info": {},
        "zones": (),
        "node_counters": {},
        "swap_total_kb": None,
        "swap_free_kb": None,
        "pages": {},
        "page_size_kb": 4,
        "page_size_from": "assumed",
        "memcg_usage": (),
        "memcg_stats_path": None,
        "memcg_stats": {},
        "reaped": None,
        "no_killable": False,
        "panic": None,
        "suppressed_reports": 0,
        "missing": (),
        "lines": (moment.line, moment.line),
        "raw_lines": (),
    }
    empty.update(fields)
    return Episode(**empty)  # type: ignore[arg-type]


# A container runtime's record of a kill the kernel made: its report is in the node's kernel log.
RUNTIME = "container-runtime"


def userspace_episode(kill: ev.UserspaceKill, moment: Moment) -> Episode:
    """One kill by systemd-oomd, earlyoom, nohang or lmkd; or a container runtime's record of one."""
    if kill.killer == RUNTIME:
        return runtime_episode(kill, moment)
    victim = None
    if kill.pid is not None:
        victim = Victim(
            comm=kill.comm or "?",
            pid=kill.pid,
            uid=kill.uid,
            total_vm_kb=None,
            anon_rss_kb=None,
            file_rss_kb=None,
            shmem_rss_kb=None,
            pgtables_kb=None,
            oom_score_adj=kill.oom_score_adj,
            oom_score_adj_from="kill line" if kill.oom_score_adj is not None else None,
            rss_kb=kill.rss_kb,
        )
    record = kill.record
    # The trigger of a userspace kill is the daemon that decided (lowmemorykiller names the task
    # it killed for); its pid comes from the `name[pid]:` prefix where one was printed. The
    # kernel's lowmemorykiller runs in the task it kills for: where its `on behalf of` line is
    # lost (a paste's indent or list marks kept it from joining), who that was is not known.
    daemon = kill.trigger or (record.ident if record.ident not in (None, "kernel") else None) or kill.killer
    daemon_pid = kill.trigger_pid if kill.trigger is not None else record.pid
    trigger: Trigger | None = Trigger(daemon, daemon_pid, None, None, None, None, None, None, None)
    if kill.killer == "lowmemorykiller" and kill.trigger is None:
        trigger = None
    return bare_episode(
        kill.killer,
        moment,
        kill.record.host,
        trigger=trigger,
        constraint=kill.constraint,
        constraint_from="the killer's record" if kill.constraint else None,
        victim=victim,
        task_memcg=kill.cgroup,
        unit=unit_of(kill.cgroup),
        killer_reason=kill.reason,
        raw_lines=(kill.record.raw,),
        doubt=doubt_of(kill.killer, record.sender),
    )


def runtime_episode(kill: ev.UserspaceKill, moment: Moment) -> Episode:
    """A kill the kernel made, told by a container runtime (containerd, Docker, the kubelet):
    the container or process it names, and no kernel details, as systemd's unit record."""
    victim = None
    if kill.comm is not None:
        victim = Victim(
            comm=kill.comm,
            pid=kill.pid,
            uid=None,
            total_vm_kb=None,
            anon_rss_kb=None,
            file_rss_kb=None,
            shmem_rss_kb=None,
            pgtables_kb=None,
            oom_score_adj=None,
            oom_score_adj_from=None,
            # A process name where the kubelet names the victim process; else a container's.
            comm_from=None if kill.pid is not None else CONTAINER_NAMED,
        )
    if kill.at is not None:
        # The record's own time (containerd's `time=`, the container's `Finished:`) over the
        # line's prefix: a pasted status has no prefix, a journal's lacks the year.
        moment = replace(moment, time=kill.at, raw=kill.at_raw or moment.raw, uptime_s=None, clock_s=None)
    return bare_episode(
        RUNTIME,
        moment,
        kill.record.host,
        victim=victim,
        task_memcg=kill.cgroup,
        killer_reason=kill.reason,
        raw_lines=(kill.record.raw,),
        missing=("runtime_report",),
    )


def join_units(episodes: list[Episode], notes: list[UnitNote]) -> list[Episode]:
    """Attach each unit record to the kill in its unit; the rest that report kills become episodes."""
    attached: dict[int, list[UnitNote]] = {}
    leftover = []
    # Kills by unit and host, in time order: a note is joined by time, so only kills with one.
    by_unit: dict[tuple[str | None, str | None], list[tuple[float, int]]] = {}
    for index, episode in enumerate(episodes):
        if episode.unit is not None and episode.moment.time is not None:
            by_unit.setdefault((episode.unit, episode.host), []).append(
                (episode.moment.time.timestamp(), index)
            )
    for kills in by_unit.values():
        kills.sort()
    named: dict[int, str] = {}
    # systemd-oomd kills whose `Killed /…` line was cut inside its cgroup's name (rarely any).
    cut = [
        (index, path)
        for index, e in enumerate(episodes)
        if e.killer == "systemd-oomd" and e.unit is None and (path := cut_oomd_path(e.killer_reason or ""))
    ]
    for note in notes:
        target = _episode_for(note, episodes, by_unit.get((note.unit, note.moment_host), []))
        if target is None and cut and (target := _cut_oomd_kill_of(note, episodes, cut)) is not None:
            named[target] = str(note.unit)
        if target is None:
            leftover.append(note)
        else:
            attached.setdefault(target, []).append(note)
    joined = [
        replace(e, unit_notes=tuple(attached[i]), unit=named.get(i, e.unit)) if i in attached else e
        for i, e in enumerate(episodes)
    ]
    return joined + _unit_only_episodes(leftover)


def _cut_oomd_kill_of(note: UnitNote, episodes: list[Episode], cut: list[tuple[int, str]]) -> int | None:
    """systemd's `X.scope: systemd-oomd killed N process(es)` for a systemd-oomd `Killed /…`
    cut inside its cgroup's name (`cut`: those kills and their paths), on the same host within
    seconds, whose path's last piece begins X's name: that kill, and X is its unit (else it
    would be told as a second kill)."""
    if note.kind != "oomd-killed" or note.unit is None or note.moment.time is None:
        return None
    for index, path in cut:
        episode = episodes[index]
        gap = _gap(episode.moment, note.moment)
        if gap is None or episode.host != note.moment_host:
            continue
        if -UNIT_BEFORE_S <= gap <= UNIT_BEFORE_S and note.unit.startswith(path.rsplit("/", 1)[-1]):
            return index
    return None


def _episode_for(note: UnitNote, episodes: list[Episode], kills: list[tuple[float, int]]) -> int | None:
    """The kill in the note's unit and host nearest before it (`kills`: theirs, by time)."""
    if note.moment.time is None:
        return None
    at = note.moment.time.timestamp()
    start = bisect.bisect_left(kills, (at - UNIT_AFTER_S, -1))
    end = bisect.bisect_right(kills, (at + UNIT_BEFORE_S, len(episodes)))
    best = None
    for _, index in kills[start:end]:
        episode = episodes[index]
        gap = _gap(episode.moment, note.moment)
        near = gap is not None and -UNIT_BEFORE_S <= gap <= UNIT_AFTER_S
        if near and gap is not None and (best is None or gap < best[0]):
            best = (gap, index)
    return best[1] if best else None


def _unit_only_episodes(notes: list[UnitNote]) -> list[Episode]:
    """Unit records with no kill to join: an episode only where they report a kill."""
    groups: list[list[UnitNote]] = []
    statuses = _statuses_of_records_below(notes)
    for note in notes:
        if id(note) in statuses:
            continue
        # Records of one death are close: the latest groups are the only ones it can join.
        for group in reversed(groups[-_RECENT_GROUPS:]):
            last = group[-1]
            gap = _gap(last.moment, note.moment)
            if gap is None and last.moment.time is None and note.moment.time is None:
                # No times at all (`journalctl -o cat`, `systemctl status`): records close in the
                # same source are one death.
                near = (
                    last.moment.source == note.moment.source
                    and note.moment.seq - last.moment.seq <= UNIT_GROUP_LINES
                )
                gap = 0.0 if near else None
            if last.unit == note.unit and gap is not None and 0 <= gap <= UNIT_GROUP_S:
                group.append(note)
                break
        else:
            groups.append([note])
    for status, below in statuses.values():
        group = next(g for g in groups if any(n is below for n in g))
        # At its excerpt's time: a syslog line's year is a guess the status's own may contradict,
        # and the two would stand a year apart in the timeline.
        group.append(replace(status, moment=replace(status.moment, time=below.moment.time)))
    episodes = []
    for group in groups:
        if not any(_reports_a_kill(n) for n in group):
            continue
        first = next(n for n in group if _reports_a_kill(n))
        killer = "systemd-oomd" if first.kind == "oomd-killed" else "systemd"
        episodes.append(
            bare_episode(
                killer,
                first.moment,
                first.moment_host,
                unit=first.unit,
                unit_notes=tuple(group),
                killer_reason=first.text,
                raw_lines=tuple(n.text for n in group),
                missing=("kernel_report",) if killer == "systemd" else (),
                doubt=doubt_of(killer, first.sender),
            )
        )
    return episodes


def _statuses_of_records_below(notes: list[UnitNote]) -> dict[int, tuple[UnitNote, UnitNote]]:
    """`systemctl status` lines whose own journal excerpt, printed below them, holds a record of
    the same unit that reports the kill: the status sums those records up, and is joined to
    them, not told as a death of its own (their times may not even agree: a syslog line's year
    is guessed, the status prints its own). By id(status) -> (status, that record)."""
    found: dict[int, tuple[UnitNote, UnitNote]] = {}
    for index, status in enumerate(notes):
        if status.since is None or status.unit is None:
            continue
        for below in notes[index + 1 :]:
            if below.moment.seq - status.moment.seq > UNIT_GROUP_LINES:
                break
            if below.moment.source != status.moment.source:
                continue
            if below.since is None and below.unit == status.unit and _reports_a_kill(below):
                found[id(status)] = (status, below)
                break
    return found


def _reports_a_kill(note: UnitNote) -> bool:
    return note.kind in ("oom-kill", "oomd-killed") or (note.kind == "failed" and note.detail == "oom-kill")


# ActivityManager hears of an lmkd kill within a second or so (a busy system_server: a few).
WITNESS_AFTER_S = 10.0
WITNESS_LINES = 40
_WITNESSED = ("lmkd", "lowmemorykiller")


def join_witnesses(episodes: list[Episode], deaths: list[tuple[ev.ProcessDied, Moment]]) -> list[Episode]:
    """Attach ActivityManager's `has died` (and Zygote's `exited due to signal 9`) to the lmkd (or
    lowmemorykiller) kill of the same pid on the same host just before it; a death with no such
    kill is no kill and is dropped."""
    by_pid: dict[tuple[str | None, int], list[int]] = {}
    for index, episode in enumerate(episodes):
        if episode.killer in _WITNESSED and episode.victim is not None and episode.victim.pid is not None:
            by_pid.setdefault((episode.host, episode.victim.pid), []).append(index)
    attached: dict[int, list[Witness]] = {}
    for death, moment in deaths:
        best = None
        for index in by_pid.get((death.record.host, death.pid), ()):
            kill = episodes[index].moment
            if moment.seq <= kill.seq:
                continue
            gap = _gap(kill, moment)
            if gap is None:
                near = kill.source == moment.source and moment.line - kill.line <= WITNESS_LINES
            else:
                near = 0.0 <= gap <= WITNESS_AFTER_S
            if near and (best is None or kill.seq > episodes[best].moment.seq):
                best = index
        if best is not None:
            state = f" ({death.state})" if death.state else ""
            if death.comm is None:  # Zygote: the pid and the signal
                text = f"{death.who} saw pid {death.pid} exit on signal 9{state}"
            else:
                text = f"{death.who} saw {death.comm} (pid {death.pid}) die{state}"
            attached.setdefault(best, []).append(Witness(death.who, text, moment))
    return [replace(e, witnesses=tuple(attached[i])) if i in attached else e for i, e in enumerate(episodes)]


def _gap(a: Moment, b: Moment) -> float | None:
    if a.time is not None and b.time is not None:
        return (b.time - a.time).total_seconds()
    return None


def restart_count(episode: Episode) -> int | None:
    """The highest restart counter systemd reported after this death: a crash loop when above 1."""
    counts = [n.count for n in episode.unit_notes if n.kind == "restart" and n.count is not None]
    return max(counts) if counts else None
