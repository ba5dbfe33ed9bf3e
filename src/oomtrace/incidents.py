"""Kills → incidents, now oomtrace.episodes.incidents: this name is kept for the modules that import it."""

from oomtrace.episodes.incidents import (
    BURST_GAP_S,
    LOOKBACK_S,
    MAX_BESIDE,
    MEMORY_WARNINGS,
    first_warning,
    incidents_of,
    moment_gap,
    one_shortage,
    scope,
)

__all__ = [
    "BURST_GAP_S",
    "LOOKBACK_S",
    "MAX_BESIDE",
    "MEMORY_WARNINGS",
    "first_warning",
    "incidents_of",
    "moment_gap",
    "one_shortage",
    "scope",
]
