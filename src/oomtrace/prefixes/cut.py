"""What a prefix family hands back: a line cut into its prefix's parts and its message."""

from __future__ import annotations

from oomtrace.frozen import Frozen
from oomtrace.records import Stamp


class Split(Frozen):
    """A line cut into its prefix's parts and its message."""

    stamp: Stamp
    ident: str | None
    host: str | None
    pid: int | None
    message: str
    prefixed: bool
