"""`list`'s rows, worded once for every format that draws a table (text, Markdown).

A server restarted by systemd until someone notices is killed the same way hundreds of times: by
default those repeats are one row with a count, so the list shows what happened, not a wall of
identical lines. `list --all` gives each kill its row; JSON always lists every episode.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

from oomtrace.charts import Bars, kills_per_host
from oomtrace.frozen import Frozen
from oomtrace.model import Analysis, Episode, HostSpan
from oomtrace.services import victim_label
from oomtrace.storyview import footer, nothing_found
from oomtrace.units import clock_time, duration, iso_time, kib, time_of_day

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


class ListRow(Frozen):
    """One kill, or a run of repeated kills of one victim (count > 1: numbers are the last's)."""

    cells: dict[str, str]
    count: int
    has_victim: bool


class ListView(Frozen):
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
        "victim": victim.comm if victim else (last.unit or _unnamed(last)),
        "kills": f"{len(group):,}",
        "pid": str(victim.pid) if victim and victim.pid is not None else "",
        "anon-rss": kib(victim.anon_rss_kb) if victim and victim.anon_rss_kb is not None else "",
        "adj": str(victim.oom_score_adj) if victim and victim.oom_score_adj is not None else "",
        "oom": last.constraint or (last.killer if last.killer != "kernel" else "?"),
        "incident": _incidents(analysis, first, last),
        "trigger": last.trigger.comm if last.trigger else "?",
    }
    return ListRow(cells, len(group), victim is not None)


def _unnamed(episode: Episode) -> str:
    # A kernel report without its kill line names none; a userspace killer's record may not.
    return "(no kill line)" if episode.killer == "kernel" else "(not named)"


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


class HostsView(Frozen):
    """`list --by-host`: one row per host read (journal-remote, a fleet's export), kills or not."""

    title: str
    header: tuple[str, ...]
    align: str
    rows: tuple[tuple[str, ...], ...]
    hosts: tuple[dict[str, object], ...]
    """The same as data, for JSON: host, kills, incidents, warnings, warning_kinds, first, last,
    last_kill (ISO), top_victim, top_victim_kills, log_ends_early, damaged_file and read_to (its
    journal file, when a damaged entry ended the read of it early, and the time read up to)."""
    chart: Bars | None
    """Kills per host, for a picture above the table."""
    notes: tuple[str, ...]
    """Hosts whose log ends long before the others': their silence may be no log, not no kill;
    hosts whose journal file is damaged: what was read of it."""
    empty: str
    footer: str


# A host whose log ends this long before the latest one's has stopped sending (or stopped):
# journal-remote uploads lag by seconds, and a quiet host still logs now and then.
EARLY_END = timedelta(hours=1)
_NO_HOST = "(no host name)"


def hosts_view(analysis: Analysis) -> HostsView:
    by_host: dict[str, list[Episode]] = {span.host: [] for span in analysis.host_spans}
    for episode in analysis.episodes:
        by_host.setdefault(episode.host or _NO_HOST, []).append(episode)
    spans = {span.host: span for span in analysis.host_spans}
    # The kills a long log counted, not kept, are of their hosts too: counts are of the whole log.
    counted: dict[str, Counter[str]] = {}
    for host, name, count in analysis.elided.by_host if analysis.elided is not None else ():
        counted.setdefault(host or _NO_HOST, Counter())[name] += count
        by_host.setdefault(host or _NO_HOST, [])
    incidents: Counter[str] = Counter()
    for incident in analysis.incidents:
        incidents[analysis.episode(incident.episode_ids[0]).host or _NO_HOST] += 1
    warnings: dict[str, Counter[str]] = {}
    for warning in analysis.warnings:
        warnings.setdefault(warning.host or _NO_HOST, Counter())[warning.kind] += warning.count
    ends = [s.last for s in analysis.host_spans if s.last is not None]
    latest = max(ends, default=None)
    latest_host = next((s.host for s in analysis.host_spans if s.last == latest), None)
    rows, data, notes = [], [], []
    # The host with the latest kill first: where to look now; then the quiet ones, latest log first.
    for host, episodes in sorted(by_host.items(), key=lambda item: _host_order(item[1], spans.get(item[0]))):
        span = spans.get(host, HostSpan(host, None, None))
        victims = Counter(victim_label(e) for e in episodes)
        victims.update(counted.get(host, Counter()))
        victims.pop("(other)", None)
        victims.pop("(unknown)", None)  # a kill whose victim the log lost is no one's top victim
        kills = len(episodes) + sum(counted.get(host, Counter()).values())
        top, top_kills = victims.most_common(1)[0] if victims else ("", 0)
        last = episodes[-1] if episodes else None
        kinds = warnings.get(host, Counter())
        early = latest is not None and span.last is not None and latest - span.last > EARLY_END
        rows.append(
            (
                host,
                f"{kills:,}",
                f"{incidents[host]:,}",
                f"{sum(kinds.values()):,}",
                _clock(span.first),
                _clock(span.last) + (" (early)" if early else ""),
                _time(last) if last else "",
                f"{top} ×{top_kills:,}" if top_kills else "",
            )
        )
        if early and span.last is not None and latest is not None:
            notes.append(
                f"{host}: its log ends at {clock_time(span.last)}, "
                f"{duration((latest - span.last).total_seconds())} before {latest_host}'s "
                f"({clock_time(latest)}); a kill there after that would not be in this log"
            )
        if span.damaged is not None:
            kills_read = f"{kills:,} kill{'s' if kills != 1 else ''}"
            notes.append(
                f"{host}: its journal file {span.damaged} is damaged: "
                + (
                    f"read only up to {clock_time(span.read_to)} ({kills_read} read before that); "
                    if span.read_to is not None
                    else "none of it could be read; "
                )
                + "the entries after could not be read (a kill there is not in this list)"
            )
        data.append(
            {
                "host": host,
                "kills": kills,
                "incidents": incidents[host],
                "warnings": sum(kinds.values()),
                "warning_kinds": dict(kinds),
                "first": iso_time(span.first),
                "last": iso_time(span.last),
                "log_ends_early": early,
                "last_kill": iso_time(last.moment.time) if last else None,
                "top_victim": top or None,
                "top_victim_kills": top_kills,
                "damaged_file": span.damaged,
                "read_to": iso_time(span.read_to) if span.damaged is not None else None,
            }
        )
    return HostsView(
        title=f"OOM kills by host in {analysis.source_names or 'no input'}",
        header=("host", "kills", "incidents", "warnings", "log from", "log to", "last kill", "top victim"),
        align="lrrrllll",
        rows=tuple(rows),
        hosts=tuple(data),
        # A quiet host is a bar of 0: "no kill" is part of the picture, as it is of the table.
        chart=kills_per_host(
            [
                (host, len(episodes) + sum(counted.get(host, Counter()).values()))
                for host, episodes in by_host.items()
            ]
        ),
        notes=tuple(notes),
        empty=nothing_found(analysis),
        footer=footer(analysis),
    )


def _host_order(episodes: list[Episode], span: HostSpan | None) -> tuple[int, float]:
    if episodes:
        return 0, -max((e.moment.time.timestamp() for e in episodes if e.moment.time), default=0.0)
    return 1, -(span.last.timestamp() if span is not None and span.last is not None else 0.0)


def _clock(time: datetime | None) -> str:
    return time.strftime("%m-%d %H:%M:%S") if time is not None else "?"
