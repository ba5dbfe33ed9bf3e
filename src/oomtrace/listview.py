"""`list`'s rows, worded once for every format that draws a table (text, Markdown).

A server restarted by systemd until someone notices is killed the same way hundreds of times: by
default those repeats are one row with a count, so the list shows what happened, not a wall of
identical lines. `list --all` gives each kill its row; JSON always lists every episode.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from oomtrace.charts import Bars, kills_per_host
from oomtrace.model import Analysis, Episode
from oomtrace.storyview import footer, nothing_found
from oomtrace.units import kib, time_of_day

# Every column, in order: (name, alignment); list_view leaves out those that would say nothing.
COLUMNS = (
    ("#", "right"),
    ("time", "left"),
    ("host", "left"),
    ("victim", "left"),
    ("kills", "right"),
    ("pid", "right"),
    ("anon-rss", "right"),
    ("adj", "right"),
    ("oom", "left"),
    ("incident", "right"),
    ("trigger", "left"),
)


@dataclass(frozen=True, slots=True)
class ListRow:
    """One kill, or a run of repeated kills of one victim (count > 1: numbers are the last's)."""

    cells: dict[str, str]
    count: int
    has_victim: bool


@dataclass(frozen=True, slots=True)
class ListView:
    title: str
    """"OOM kills in /var/log/kern.log"."""
    columns: tuple[tuple[str, str], ...]
    rows: tuple[ListRow, ...]
    note: str | None
    """What the grouping did, when it did something."""
    empty: str
    """What to say when there are no rows."""
    footer: str


def list_view(analysis: Analysis, every: bool = False) -> ListView:
    groups: list[list[Episode]] = []
    for episode in analysis.episodes:
        if not every and groups and _repeats(groups[-1][-1], episode):
            groups[-1].append(episode)
        else:
            groups.append([episode])
    rows = tuple(_row(group, analysis) for group in groups)
    # A column that would say nothing is left out: one host, no repeats, or no incident with
    # several kills (its number would be the row's).
    silent = set()
    if len({e.host for e in analysis.episodes}) <= 1:
        silent.add("host")
    if all(row.count == 1 for row in rows):
        silent.add("kills")
    if all(len(i.episode_ids) == 1 for i in analysis.incidents) and all(r.count == 1 for r in rows):
        silent.add("incident")
    columns = tuple(c for c in COLUMNS if c[0] not in silent)
    folded = sum(len(g) for g in groups if len(g) > 1)
    note = None
    if folded:
        loops = sum(1 for g in groups if len(g) > 1)
        note = (
            f"{folded:,} kills of the same victim, one after another, are shown as {loops:,} "
            "row(s) with their count (the first kill's time, the last one's numbers); "
            "`oomtrace list --all` lists each"
        )
    title = f"OOM kills in {analysis.source_names or 'no input'}"
    return ListView(title, columns, rows, note, nothing_found(analysis), footer(analysis))


def _repeats(previous: Episode, episode: Episode) -> bool:
    """The same death again: the next kill, same host, victim, killer, limit and trigger."""
    if previous.victim is None or episode.victim is None or episode.id != previous.id + 1:
        return False
    return (
        previous.host == episode.host
        and previous.killer == episode.killer
        and previous.victim.comm == episode.victim.comm
        and previous.constraint == episode.constraint
        and previous.memcg == episode.memcg
        and (previous.trigger.comm if previous.trigger else None)
        == (episode.trigger.comm if episode.trigger else None)
    )


def _row(group: list[Episode], analysis: Analysis) -> ListRow:
    first, last = group[0], group[-1]
    victim = last.victim
    number = str(first.id) if len(group) == 1 else f"{first.id}-{last.id}"
    cells = {
        "#": number,
        "time": _time(first),
        "host": last.host or "",
        "victim": victim.comm if victim else (last.unit or "(no kill line)"),
        "kills": f"{len(group):,}",
        "pid": str(victim.pid) if victim and victim.pid is not None else "",
        "anon-rss": kib(victim.anon_rss_kb) if victim and victim.anon_rss_kb is not None else "",
        "adj": str(victim.oom_score_adj) if victim and victim.oom_score_adj is not None else "",
        "oom": last.constraint or (last.killer if last.killer != "kernel" else "?"),
        "incident": _incidents(analysis, first, last),
        "trigger": last.trigger.comm if last.trigger else "?",
    }
    return ListRow(cells, len(group), victim is not None)


def _incidents(analysis: Analysis, first: Episode, last: Episode) -> str:
    start, end = analysis.incident_of(first), analysis.incident_of(last)
    if start is None or end is None:
        return ""
    return str(start.id) if start.id == end.id else f"{start.id}-{end.id}"


def _time(episode: Episode) -> str:
    moment = episode.moment
    if moment.time is not None:
        return moment.time.strftime("%m-%d %H:%M:%S")
    if moment.uptime_s is not None:
        return f"up {moment.uptime_s:.1f}s"
    if moment.clock_s is not None:
        # A time of day with no date: the list never prints a date the log does not hold.
        return time_of_day(moment.clock_s)
    return "?"


@dataclass(frozen=True, slots=True)
class HostsView:
    """`list --by-host`: one row per host of a store (journal-remote, a fleet's export)."""

    title: str
    header: tuple[str, ...]
    align: str
    rows: tuple[tuple[str, ...], ...]
    hosts: tuple[dict[str, object], ...]
    """The same as data, for JSON: host, kills, incidents, last_kill (ISO), top_victim, top_victim_kills."""
    chart: Bars | None
    """Kills per host, for a picture above the table."""
    empty: str
    footer: str


def hosts_view(analysis: Analysis) -> HostsView:
    by_host: dict[str, list[Episode]] = {}
    for episode in analysis.episodes:
        by_host.setdefault(episode.host or "(no host name)", []).append(episode)
    incidents: Counter[str] = Counter()
    for incident in analysis.incidents:
        first = analysis.episode(incident.episode_ids[0])
        incidents[first.host or "(no host name)"] += 1
    rows = []
    data = []
    # The host with the latest kill first: where to look now.
    for host, episodes in sorted(by_host.items(), key=lambda item: _last_time(item[1]), reverse=True):
        victims = Counter(e.victim.comm if e.victim else str(e.unit) for e in episodes)
        top, top_kills = victims.most_common(1)[0]
        last = episodes[-1]
        rows.append(
            (host, f"{len(episodes):,}", f"{incidents[host]:,}", _time(last), f"{top} ×{top_kills:,}")
        )
        data.append(
            {
                "host": host,
                "kills": len(episodes),
                "incidents": incidents[host],
                "last_kill": last.moment.time.isoformat() if last.moment.time else None,
                "top_victim": top,
                "top_victim_kills": top_kills,
            }
        )
    return HostsView(
        title=f"OOM kills by host in {analysis.source_names or 'no input'}",
        header=("host", "kills", "incidents", "last kill", "top victim"),
        align="lrrll",
        rows=tuple(rows),
        hosts=tuple(data),
        chart=kills_per_host([(host, len(episodes)) for host, episodes in by_host.items()]),
        empty=nothing_found(analysis),
        footer=footer(analysis),
    )


def _last_time(episodes: list[Episode]) -> float:
    times = [e.moment.time.timestamp() for e in episodes if e.moment.time]
    return max(times, default=0.0)
