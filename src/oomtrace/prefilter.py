"""Which lines of a big log the full grammar must see: anchors, and the report bodies they open.

Every line that matters to an OOM story holds one of ANCHORS, or lies inside a report that an
anchor opened (Mem-Info counters, zone lines, tasks-table rows, call frames hold none). The same
rule serves Hyperscan over a big file's chunks (sources/chunks.py) and a line-by-line check over
the journal, so every reader keeps the same lines.
"""

from __future__ import annotations

import re

from oomtrace.messages import MESSAGES

# Short literals that stand for many anchors at once: the fewer literals, the faster Hyperscan
# searches them (its cost follows their count). Each must be part of some kind's anchor.
COVERS = ("oom", "OOM", "Kill", "ill process", "emory", "failure", "SIGTERM", "SIGKILL")


def _literals() -> tuple[str, ...]:
    """The registry's anchors, each replaced by the cover literal it holds, without repeats."""
    literals: dict[str, None] = {}
    for kind in MESSAGES:
        if kind.in_report:
            continue
        for anchor in kind.anchors:
            cover = next((c for c in COVERS if c in anchor), anchor)
            literals[cover] = None
    return tuple(literals)


# Literals, not patterns: Hyperscan searches them all at once and Python's `in` finds each fast.
ANCHORS = _literals()
# The anchor a noisy driver can print hundreds of thousands of times: a big file's scan counts
# these lines in bulk (sources/chunks.py) instead of handing each to the grammar.
XID_ANCHOR = "NVRM: Xid ("
# Anchors that open a report whose other lines hold no anchor.
REGION_STARTS = tuple(a for kind in MESSAGES if kind.opens_report for a in kind.anchors)
# A report is read to its kill line, or this far when the kill line never comes (a cut report).
REGION_MAX_LINES = 20_000


# `[  1234]  1000  1234  ...`: a tasks-table row, whatever prefix stands before it.
_TASK_ROW = re.compile(r"\[ *\d+\] +\d+ +\d+")


class Prefilter:
    """Decides line by line, in input order, whether a line goes to the full grammar."""

    def __init__(self) -> None:
        self._left = 0

    @property
    def in_region(self) -> bool:
        return self._left > 0

    def wants(self, text: str) -> bool:
        if self._left:
            self._left -= 1
            if "Killed process" in text:
                self._left = 1  # the report ends at its kill (and the kill line's wrapped rest)
            elif "invoked oom-killer" in text:
                self._left = REGION_MAX_LINES  # a new report begins inside this one
            elif not self._left and self._anchored(text):
                self._left = 1
            elif self._left < REGION_MAX_LINES // 2 and _TASK_ROW.search(text):
                # A tasks table of a big machine can outrun the region: it goes on while rows do.
                self._left = REGION_MAX_LINES
            return True
        if not holds_anchor(text):
            return False
        if "Killed process" not in text and any(start in text for start in REGION_STARTS):
            self._left = REGION_MAX_LINES
        elif XID_ANCHOR not in text:
            self._left = 1  # a wrapped line's rest holds no anchor of its own (parse.parse_records)
        return True

    @staticmethod
    def _anchored(text: str) -> bool:
        return XID_ANCHOR not in text and holds_anchor(text)


def holds_anchor(text: str) -> bool:
    """Does `text` hold any of ANCHORS?"""
    # A plain loop, not any() over a generator: a third faster, and the journal readers call
    # this once an entry (a million times for a big journal).
    for anchor in ANCHORS:  # noqa: SIM110 (measured: the loop is the faster)
        if anchor in text:
            return True
    return False
