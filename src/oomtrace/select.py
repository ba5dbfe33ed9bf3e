"""Keep what falls within --since/--until (episodes, warnings, incidents)."""

from __future__ import annotations

from datetime import datetime

from oomtrace.frozen import replace
from oomtrace.model import Analysis, Moment


def _inside(moment: Moment, since: datetime | None, until: datetime | None) -> bool:
    if moment.time is None:
        return False
    return (since is None or moment.time >= since) and (until is None or moment.time <= until)


def between(analysis: Analysis, since: datetime | None, until: datetime | None) -> tuple[Analysis, int]:
    """The analysis cut to a time range, and how many episodes had no wall time to judge by."""
    if since is None and until is None:
        return analysis, 0
    untimed = sum(1 for e in analysis.episodes if e.moment.time is None)
    # The range selects kills, exactly as a journal read does: an incident that straddles its
    # edge keeps only the kills inside (its warnings and lead time are still the incident's).
    kept = {e.id for e in analysis.episodes if _inside(e.moment, since, until)}
    incidents = tuple(
        replace(
            i,
            episode_ids=tuple(e for e in i.episode_ids if e in kept),
            beside=tuple(e for e in i.beside if e in kept),
        )
        for i in analysis.incidents
        if kept.intersection(i.episode_ids)
    )
    episodes = tuple(e for e in analysis.episodes if e.id in kept)
    warnings = tuple(w for w in analysis.warnings if _inside(w.last, since, until))
    trimmed = replace(
        analysis,
        episodes=episodes,
        warnings=warnings,
        incidents=incidents,
        range_since=since,
        range_until=until,
        # Kills far outside the range were dropped while reading (episodes.RANGE_MARGIN_S).
        outside_range=analysis.outside_range + len(analysis.episodes) - len(episodes),
    )
    return trimmed, untimed
