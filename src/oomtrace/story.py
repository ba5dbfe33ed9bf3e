"""`why NAME`: find a process's death and tell it as a story: cause, victims, warnings, timeline."""

from __future__ import annotations

import bisect
from collections import Counter
from datetime import datetime, timedelta

from oomtrace.explain import MemoryPicture, memory_picture, warning_summary
from oomtrace.frozen import Frozen, replace
from oomtrace.incidents import LOOKBACK_S, first_warning, moment_gap
from oomtrace.model import (
    CONTAINER_NAMED,
    SAMPLES_BEFORE_S,
    Analysis,
    Episode,
    Incident,
    KernelWarning,
    Moment,
    ProbeSample,
)
from oomtrace.services import RUNTIME, cause_of, victim_label
from oomtrace.sources.serverlog import ServerLogFacts
from oomtrace.target import Target
from oomtrace.units import duration, kib, time_of_day


class TimelineEntry(Frozen):
    moment: Moment
    offset_s: float | None
    """Seconds relative to the victim's kill (negative: before it)."""
    kind: str
    """"warning", "server-warning", "invoked", "kill", "collateral", "unit", "reaped"."""
    text: str
    """The full text (for warnings, the kernel's line)."""
    short: str
    """The same in a few words, for the terminal."""
    episode_id: int | None = None


# A story names the other kills of its incident nearest its own, and the warnings nearest
# before it: however many the incident holds (a crash loop joined into one incident of 1,000
# kills), each story is the same size, and `why --all` the sum of them, not their square.
MAX_COLLATERAL = 10
MAX_TIMELINE_WARNINGS = 10


class Story(Frozen):
    query: str
    episode: Episode
    cause: str
    """"kernel-oom" (global, cpuset or mempolicy) or "cgroup-oom"."""
    incident: Incident | None
    collateral: tuple[Episode, ...]
    """The other kills of the incident nearest this one (at most MAX_COLLATERAL), in log order."""
    earliest_warning: KernelWarning | None
    lead_time_s: float | None
    timeline: tuple[TimelineEntry, ...]
    """This kill, the collateral listed and the warnings nearest before it, in time order."""
    memory: MemoryPicture | None
    warnings_before: tuple[KernelWarning, ...] = ()
    """The warning runs before this kill: the incident's, and those that began after its first
    kill and before this one (a later kill's own warnings)."""
    elsewhere: tuple[tuple[Episode, int | None], ...] = ()
    """Kills of other incidents on the same host at the same time, each with its incident's id:
    what else happened on the machine, never collateral."""
    collateral_more: int = 0
    """Other kills of the incident, further from this one, not listed (nor in the timeline)."""
    warnings_more: int = 0
    """The incident's warnings not in the timeline (earlier than the ones it shows)."""
    samples: tuple[ProbeSample, ...] = ()
    """The watcher's samples of the half hour before this kill on its host (a `--record` file's)."""

    @property
    def first_of_incident(self) -> bool:
        return self.incident is None or self.incident.episode_ids[0] == self.episode.id

    @property
    def warned_before_incident(self) -> bool:
        """Did the first warning come before the incident's first kill (not only before this one)?"""
        warning = self.earliest_warning
        return warning is not None and self.incident is not None and warning in self.incident.warnings


def find_deaths(analysis: Analysis, target: Target) -> list[Episode]:
    """Episodes whose victim is the target (its pid, name or systemd unit), oldest first."""
    if target.by_pid:
        pid = target.pid
        return [e for e in analysis.episodes if e.victim and e.victim.pid == pid]
    return [e for e in analysis.episodes if target.died_in(e)]


def summarised_kill(analysis: Analysis, target: Target) -> Moment | None:
    """When the latest kill of the target among those counted, not kept, was."""
    elided = analysis.elided
    if elided is None:
        return None
    if target.by_pid:
        found = elided.find(target.pid)
        return found[-1] if found else None
    span = elided.span_of(target.names)
    return span[2] if span is not None else None


def tell(analysis: Analysis, episode: Episode, query: str) -> Story:
    incident = analysis.incident_of(episode)
    ids = incident.episode_ids if incident else (episode.id,)
    nearest = _nearest(ids, episode.id, MAX_COLLATERAL)
    members = [analysis.episode(i) for i in nearest]
    before = warnings_before(episode, incident)
    earliest = first_warning(before)
    every_warning = (*incident.warnings, *incident.during) if incident else ()
    shown = _warnings_before(every_warning, episode.moment, MAX_TIMELINE_WARNINGS)
    lead = None
    if earliest is not None:
        lead = moment_gap(earliest.first, episode.moment)
    beside = (analysis.find(i) for i in (incident.beside if incident else ()))
    elsewhere = tuple(
        (other, found.id if (found := analysis.incident_of(other)) else None)
        for other in beside
        if other is not None
    )
    return Story(
        query=query,
        episode=episode,
        cause=cause_of(episode),
        incident=incident,
        collateral=tuple(e for e in members if e.id != episode.id),
        earliest_warning=earliest,
        lead_time_s=lead,
        timeline=_timeline(episode, members, shown, elsewhere),
        memory=memory_picture(episode, analysis.previous_in_memcg(episode)),
        warnings_before=before,
        elsewhere=elsewhere,
        # The kills counted, not kept, within the incident are of it too (further from this one).
        collateral_more=len(ids) - len(nearest) + (incident.elided if incident else 0),
        warnings_more=len(every_warning) - len(shown),
        samples=_samples_before(analysis, episode),
    )


def _samples_before(analysis: Analysis, episode: Episode) -> tuple[ProbeSample, ...]:
    """The watcher's samples of SAMPLES_BEFORE_S before the kill, of the kill's machine: a
    sample whose host is not known is the kill's only when the input names one host at most."""
    kill = episode.moment.time
    if kill is None or not analysis.samples:
        return ()
    one_host = len(analysis.hosts) <= 1
    samples = analysis.samples  # oldest first: the half hour is found by bisection
    start = bisect.bisect_left(samples, kill - timedelta(seconds=SAMPLES_BEFORE_S), key=lambda s: s.time)
    end = bisect.bisect_right(samples, kill, key=lambda s: s.time)
    return tuple(
        s
        for s in samples[start:end]
        if s.host == episode.host or (one_host and None in (s.host, episode.host))
    )


def warnings_before(episode: Episode, incident: Incident | None) -> tuple[KernelWarning, ...]:
    """The incident's warnings, and those that began within it before this kill."""
    if incident is None:
        return ()
    later = tuple(w for w in incident.during if _before(w.first, episode.moment))
    return incident.warnings + later


def _before(moment: Moment, kill: Moment) -> bool:
    gap = moment_gap(moment, kill)
    if gap is None or gap == 0:
        return moment.source == kill.source and moment.seq < kill.seq
    return gap > 0


def _nearest(ids: tuple[int, ...], own: int, count: int) -> list[int]:
    """`own` and the `count` ids around it in the incident's order (kills nearest in the log)."""
    at = ids.index(own) if own in ids else 0
    start = max(0, min(at - count // 2, len(ids) - count - 1))
    return list(ids[start : start + count + 1])


def _warnings_before(
    warnings: tuple[KernelWarning, ...], kill: Moment, count: int
) -> tuple[KernelWarning, ...]:
    """The `count` warnings that began nearest before the kill (and any after it), in order."""
    if len(warnings) <= count:
        return warnings
    gaps = [(moment_gap(w.first, kill), number) for number, w in enumerate(warnings)]
    chosen = sorted(gaps, key=lambda g: g[0] if g[0] is not None and g[0] >= 0 else -1.0)[:count]
    return tuple(warnings[number] for number in sorted(number for _, number in chosen))


def with_server_warnings(story: Story, logs: list[ServerLogFacts]) -> Story:
    """The story with the server's own memory warnings of the hour before the kill in its
    timeline, beside the kernel's (a CUDA out-of-memory error it survived, memory under its reserve)."""
    kill = story.episode.moment
    if kill.time is None:
        return story
    added = []
    for facts in logs:
        for line, time in facts.warnings:
            gap = (time - kill.time).total_seconds()
            if -LOOKBACK_S <= gap <= 0:
                moment = Moment(time, None, time.isoformat(), facts.path, 0, 0, 0)
                short = line if len(line) <= _SHORT_LINE else line[: _SHORT_LINE - 1] + "\u2026"
                added.append(TimelineEntry(moment, gap, "server-warning", line, f"the server: {short}"))
    if not added:
        return story
    entries = sorted(
        (*story.timeline, *added), key=lambda e: (e.offset_s if e.offset_s is not None else 0.0, e.moment.seq)
    )
    return replace(story, timeline=tuple(entries))


# A server's line in the timeline is cut to this for the terminal (the JSON keeps it whole).
_SHORT_LINE = 100


def _timeline(
    episode: Episode,
    members: list[Episode],
    warnings: tuple[KernelWarning, ...],
    elsewhere: tuple[tuple[Episode, int | None], ...] = (),
) -> tuple[TimelineEntry, ...]:
    kill = episode.moment
    entries: list[TimelineEntry] = []

    def add(
        moment: Moment, kind: str, text: str, episode_id: int | None = None, short: str | None = None
    ) -> None:
        gap = moment_gap(kill, moment)
        entries.append(TimelineEntry(moment, gap, kind, text, short or text, episode_id))

    for warning in warnings:
        repeat = f" (×{warning.count}, last {_short(warning.last)})" if warning.count > 1 else ""
        summary = warning_summary(warning.kind, warning.key, warning.text)
        add(warning.first, "warning", warning.text + repeat, short=summary + repeat)
    for member in members:
        if member.trigger is not None:
            pid = f" (pid {member.trigger.pid})" if member.trigger.pid is not None else ""
            add(member.began, "invoked", f"{member.trigger.comm}{pid} invoked the OOM killer", member.id)
        kind = "kill" if member.id == episode.id else "collateral"
        if member.victim is not None:
            anon = member.victim.anon_rss_kb
            size = f", anon-rss {kib(anon)}" if anon is not None else ""
            if member.killer == RUNTIME:
                add(
                    member.moment,
                    kind,
                    f"the container runtime reports the OOM kill of {victim_name(member)}",
                    member.id,
                )
            else:
                by = "" if member.killer == "kernel" else f"{member.killer} "
                add(
                    member.moment,
                    kind,
                    f"{by}killed {member.victim.comm} (pid {member.victim.pid}{size})",
                    member.id,
                )
        elif member.unit is not None:
            add(member.moment, kind, f"{member.killer} reports a kill in {member.unit}", member.id)
        elif member.killer == RUNTIME:
            add(member.moment, kind, "the container runtime reports an OOM kill", member.id)
        for note in member.unit_notes:
            add(note.moment, "unit", note.text, member.id)
        for witness in member.witnesses:
            add(witness.moment, "witness", witness.text, member.id)
        if member.reaped is not None:
            add(member.reaped.moment, "reaped", f"oom_reaper freed {member.reaped.comm}'s memory", member.id)
    for other, number in elsewhere:
        where = f"{scope_words(other)}, incident {number}" if number is not None else scope_words(other)
        by = "" if other.killer == "kernel" else f"{other.killer} "
        who = f"{by}killed {victim_name(other)}" if other.victim else f"{other.killer} reports a kill"
        if other.killer == RUNTIME:
            who = "the container runtime reports an OOM kill" + (
                f" of {victim_name(other)}" if other.victim else ""
            )
        text = f"{who} in another incident ({where})"
        add(other.moment, "elsewhere", text, other.id, short=f"elsewhere: {text}")
    entries.sort(key=lambda e: (e.offset_s if e.offset_s is not None else 0.0, e.moment.seq))
    return tuple(entries)


def _short(moment: Moment) -> str:
    if moment.time is not None:
        return moment.time.strftime("%H:%M:%S")
    if moment.uptime_s is not None:
        return f"{moment.uptime_s:.0f}s"
    if moment.clock_s is not None:
        return time_of_day(moment.clock_s)
    return "?"


class Report(Frozen):
    """`oomtrace report`: every incident in a time range, told like `why`, with counts."""

    since: datetime | None
    until: datetime | None
    stories: tuple[Story, ...]
    """One per incident, told from its first kill."""
    by_victim: tuple[tuple[str, int], ...]
    by_cause: tuple[tuple[str, int], ...]
    untimed: int
    """Episodes left out because the log gave them no wall-clock time."""
    kill_times: tuple[datetime, ...] = ()
    """When each kill kept in the range happened, for the kills-over-time chart."""
    elided_times: tuple[tuple[datetime, int], ...] = ()
    """The kills counted, not kept (model.Elided.per_minute), for the chart too."""
    kept: int = 0
    """Kills kept whole and told (the counts above are of the whole log, these and the elided)."""
    incidents: int = 0
    """Incidents of the whole log: those told, and the shortages among the kills not kept."""


def report(analysis: Analysis, since: datetime | None, until: datetime | None, untimed: int) -> Report:
    stories = []
    for incident in analysis.incidents:
        members = [analysis.episode(i) for i in incident.episode_ids]
        first = next((e for e in members if e.is_kill), None)
        if first is not None:
            stories.append(tell(analysis, first, victim_label(first)))
    victims = Counter(victim_label(e) for e in analysis.episodes if e.is_kill)
    causes = Counter(cause_of(e) for e in analysis.episodes if e.is_kill)
    times = tuple(e.moment.time for e in analysis.episodes if e.is_kill and e.moment.time)
    kept = sum(victims.values())
    if analysis.elided is not None:
        # Counts are of the whole log: the kills counted, not kept, are in them too.
        victims.update(dict((name, count) for name, count, _, _ in analysis.elided.spans))
        causes.update(dict(analysis.elided.causes))
        zone = times[0].tzinfo if times else None
        elided_times = tuple((when.astimezone(zone), n) for when, n in analysis.elided.per_minute)
    return Report(
        since=since,
        until=until,
        stories=tuple(stories),
        by_victim=tuple(victims.most_common()),
        by_cause=tuple(causes.most_common()),
        untimed=untimed,
        kill_times=times,
        elided_times=elided_times if analysis.elided is not None else (),
        kept=kept,
        incidents=len(stories) + (analysis.elided.incidents if analysis.elided is not None else 0),
    )


def victim_name(episode: Episode) -> str:
    """Who died: `comm (pid N)`, or the unit when only systemd's record says."""
    if episode.victim is not None:
        if episode.victim.comm_from == CONTAINER_NAMED:
            # A container's name is no process's: never "X (pid not in the log)" as if it were.
            return f"a process of container {episode.victim.comm} (its name and pid not in the log)"
        pid = f"pid {episode.victim.pid}" if episode.victim.pid is not None else "pid not in the log"
        return f"{episode.victim.comm} ({pid})"
    if episode.unit is None and episode.killer != "kernel":
        return f"an unnamed victim ({episode.killer}'s record names none)"
    return episode.unit or "an unknown process"


def scope_words(episode: Episode) -> str:
    """What ran short in a few words: "memory cgroup /b", "global OOM", or the userspace killer
    that acted ("by earlyoom")."""
    if episode.killer == "kernel":
        if episode.constraint == "memcg":
            return f"memory cgroup {episode.memcg}" if episode.memcg else "a memory cgroup"
        return f"{episode.constraint} OOM" if episode.constraint else "scope not in the log"
    return f"by {episode.killer}"


def killed_by(episode: Episode) -> str:
    """Which killer, and in what scope: "the kernel OOM killer (global OOM)", "systemd-oomd (...)"."""
    if episode.killer == "kernel":
        scope = f"memory cgroup {episode.memcg}" if episode.constraint == "memcg" else "global OOM"
        return f"the kernel OOM killer ({scope})"
    if episode.killer == "systemd":
        return "the OOM killer, by systemd's record of its unit (the kernel's own report is not in the input)"
    if episode.killer == RUNTIME:
        said = f" ({episode.killer_reason})" if episode.killer_reason else ""
        return (
            f"the kernel's OOM killer, by the container runtime's record{said}; the kernel's own report "
            "is not in the input: the node's `journalctl -k` around that time holds it"
        )
    # The record's own words, inside a sentence that goes on: without their closing period
    # (`... in this unit.` then ` at 21:16:28`).
    reason = f": {episode.killer_reason.rstrip('. ')}" if episode.killer_reason else ""
    if episode.killer == "lowmemorykiller":
        return f"Android's in-kernel lowmemorykiller{reason}"
    return f"the userspace OOM killer {episode.killer}{reason}"


def lead_words(story: Story) -> str:
    """When the first warning came, in words: "3m13s before the kill", or for a run that began
    long before, "since 12d11h before the kill, last 3m13s before"."""
    warning = story.earliest_warning
    if warning is None or story.lead_time_s is None:
        return "before the kill"
    lead = duration(story.lead_time_s)
    if story.lead_time_s <= LOOKBACK_S:
        return f"{lead} before the kill"
    last = moment_gap(warning.last, story.episode.moment)
    tail = f", last {duration(last)} before" if last is not None and last >= 0 else ""
    return f"a run since {lead} before the kill{tail}"
