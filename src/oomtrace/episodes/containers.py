"""Container runtimes' status records of an OOM kill, made whole from the lines around them.

A `kubectl describe pod` block, a kubelet status or a `docker inspect` state says a container was
OOMKilled on one line and its name and end on others:

      web:
        Last State:     Terminated
          Reason:       OOMKilled
          Finished:     Tue, 29 Apr 2025 10:11:12 +0200

The name and a `finishedAt` above the reason are read from the lines fed just before it
(messages/runtime.container_context); a `Finished:` below it, or a lastState's name below it
(messages/runtime.name_below), is waited for a few lines. A kill is handed on (`emit`) once
whole, or when anything else comes first.
"""

from __future__ import annotations

from collections.abc import Callable

from oomtrace import events as ev
from oomtrace.episodes.recent import RecentLines
from oomtrace.frozen import replace
from oomtrace.messages.runtime import (
    CONTEXT_LINES,
    FINISHED_LINES,
    STATUS_REASON,
    container_context,
    iso_time,
    name_below,
    same_status,
)
from oomtrace.records import Record
from oomtrace.services import RUNTIME


class ContainerStatuses:
    """Runtime kills in, runtime kills out (through `emit`), with their container's name and end."""

    def __init__(self, emit: Callable[[ev.UserspaceKill, int], None], recent: RecentLines) -> None:
        self._emit = emit
        self._held: tuple[ev.UserspaceKill, int] | None = None
        """A container's `Reason: OOMKilled` awaiting its `Finished:` line, or its name printed
        below it (`-o json`/`-o yaml`'s lastState), for FINISHED_LINES."""
        self._recent = recent
        """The last records fed (at least CONTEXT_LINES + FINISHED_LINES): a container status's
        name and end above its reason, and what lies between the reason and its `Finished:` below."""

    def saw(self, record: Record) -> None:
        """Every record fed, after RecentLines has it: a held status's name printed below it
        (`kubectl get pod -o json`/`-o yaml`'s lastState), and its end of waiting."""
        if self._held is None:
            return
        kill, seq = self._held
        below = record.line_no - kill.record.line_no
        if record.source != kill.record.source or below > FINISHED_LINES:
            self.release()
        elif below > 0 and kill.comm is None:
            lines = [*self._recent.between(kill.record, record), record.message]
            name = name_below(kill.record.message, lines)
            if name is not None:
                self._held = (replace(kill, comm=name), seq)
                if kill.at is not None:
                    self.release()

    def kill(self, event: ev.UserspaceKill, seq: int) -> None:
        """A userspace killer's kill: a container status's is made whole first."""
        self.release()
        if event.killer == RUNTIME and event.reason.startswith(STATUS_REASON):
            event = self._in_context(event)
            if event.at is None or event.comm is None:
                # Its Finished line, or its name, may yet come below (FINISHED_LINES).
                self._held = (event, seq)
                return
        self._emit(event, seq)

    def finished(self, finished: ev.ContainerFinished) -> None:
        """A container's end joined to the `Reason: OOMKilled` just above it in the same source;
        any other `Finished:` (a container that ended otherwise, one too far below) is no time of
        a kill."""
        if self._held is None:
            return
        kill, seq = self._held
        below = finished.record.line_no - kill.record.line_no
        if (
            finished.record.source == kill.record.source
            and 0 < below <= FINISHED_LINES
            and same_status(self._recent.between(kill.record, finished.record))
        ):
            self._held = (replace(kill, at=finished.at, at_raw=finished.raw), seq)
        self.release()

    def release(self) -> None:
        """Hand on a held kill as it is (a new source, another kill, the end of the input)."""
        if self._held is not None:
            kill, seq = self._held
            self._held = None
            self._emit(kill, seq)

    def _in_context(self, kill: ev.UserspaceKill) -> ev.UserspaceKill:
        """A container's status with the name and end that the lines above its reason give."""
        name, finished = container_context(
            kill.record.message, self._recent.before(kill.record, CONTEXT_LINES)
        )
        if name is not None and kill.comm is None:
            kill = replace(kill, comm=name)
        at = iso_time(finished) if finished is not None and kill.at is None else None
        if at is not None:
            kill = replace(kill, at=at, at_raw=finished)
        return kill
