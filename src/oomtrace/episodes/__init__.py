"""Events → OOM episodes, warning runs and incidents (a pure, streaming pipeline of small stages).

The stages, in the order a record meets them: assemble.py (which report lines belong to which
report: drafts), freeze.py with victim.py, constraint.py and memory.py (a closed draft → an
Episode), runs.py (warning runs), ledger.py (what each source said of itself), elide.py (the
kills a long log does not keep whole), incidents.py (kills → shortages). build.py's
EpisodeBuilder feeds them. This package imports model, records, events, parse and services;
never a view, a story or a format.

The names other modules import from `oomtrace.episodes` are re-exported here.
"""

from oomtrace.episodes.assemble import PENDING_EVENTS, REAP_WINDOW, REPORT_GAP_S, REPORT_LINE_EVENTS
from oomtrace.episodes.build import (
    DEFER_EVENTS,
    KEPT_FIRST,
    KEPT_LAST,
    KEPT_RECORDS,
    NAMED_VICTIM_LINES,
    RANGE_MARGIN_S,
    SEEN_KILLS,
    EpisodeBuilder,
)
from oomtrace.episodes.draft import MAX_RAW_LINES, MAX_REPORT_EVENTS, MAX_TASK_ROWS, table_columns
from oomtrace.episodes.freeze import MAX_FRAMES, Freezer
from oomtrace.episodes.incidents import LOOKBACK_S, moment_gap
from oomtrace.episodes.ledger import MAX_UNPARSED_KEPT
from oomtrace.episodes.moments import record_gap
from oomtrace.episodes.runs import REPEAT_GAP_S

__all__ = [
    "DEFER_EVENTS",
    "KEPT_FIRST",
    "KEPT_LAST",
    "KEPT_RECORDS",
    "LOOKBACK_S",
    "MAX_FRAMES",
    "MAX_RAW_LINES",
    "MAX_REPORT_EVENTS",
    "MAX_TASK_ROWS",
    "MAX_UNPARSED_KEPT",
    "NAMED_VICTIM_LINES",
    "PENDING_EVENTS",
    "RANGE_MARGIN_S",
    "REAP_WINDOW",
    "REPEAT_GAP_S",
    "REPORT_GAP_S",
    "REPORT_LINE_EVENTS",
    "SEEN_KILLS",
    "EpisodeBuilder",
    "Freezer",
    "moment_gap",
    "record_gap",
    "table_columns",
]
