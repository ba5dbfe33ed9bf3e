"""systemd-oomd 247/248's kill decisions: a kill once no failure follows.

Those versions log the decision before acting (`Memory pressure for /x is greater than 10 for
more than 10 seconds and there was reclaim activity`) and afterwards only a failure (`Failed to
kill any cgroup(s) under /x based on pressure`, a dry run's `Would have tried to kill`): with
nothing eligible to kill, the two repeat every second and nothing dies. A decision is held
until its source has gone DECISION_LINES lines on, or another kill or the end comes, with no
failure from its host, and is then handed on (`emit`) as a kill.
"""

from __future__ import annotations

from collections.abc import Callable

from oomtrace import events as ev
from oomtrace.records import Record

# oomd logs its failure in the same pass as its decision: the next line of its own, a few lines
# on where other services' records interleave in the journal.
DECISION_LINES = 10


class KillDecisions:
    """Userspace kills in, kills out (through `emit`): a decided kill only if no failure follows."""

    def __init__(self, emit: Callable[[ev.UserspaceKill, int], None]) -> None:
        self._emit = emit
        self._held: tuple[ev.UserspaceKill, int] | None = None

    def saw(self, record: Record) -> None:
        """Every record fed, in order: past DECISION_LINES (or in another source) a decision stands."""
        if self._held is None:
            return
        held = self._held[0].record
        if record.source != held.source or record.line_no - held.line_no > DECISION_LINES:
            self.release()

    def kill(self, event: ev.UserspaceKill, seq: int) -> None:
        self.release()
        if event.decided:
            self._held = (event, seq)
        else:
            self._emit(event, seq)

    def failed(self, event: ev.KillFailed) -> None:
        """The held decision of this killer on this host was not carried out: no kill."""
        if self._held is None:
            return
        held = self._held[0]
        if held.killer == event.killer and held.record.host == event.record.host:
            self._held = None

    def release(self) -> None:
        """Hand on a held decision as a kill (a new source, another kill, the end of the input)."""
        if self._held is not None:
            kill, seq = self._held
            self._held = None
            self._emit(kill, seq)
