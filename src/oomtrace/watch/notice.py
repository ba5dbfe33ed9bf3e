"""What the watcher says: one frozen notice per warning, clearance, kill or gap."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from oomtrace.frozen import Frozen, field
from oomtrace.units import iso_time

SCHEMA = "oomtrace/1"
# The event names of the `--format jsonl` stream, the `--record` file and `--exec`'s OOMTRACE_EVENT.
EVENTS = ("started", "warning", "clear", "kill", "gap", "sample", "claim")


class Notice(Frozen):
    event: str
    """One of EVENTS."""
    kind: str
    """The warning kind (`psi-some`, `nvrm-no-memory`), the kill's cause, or the gap's reason."""
    time: datetime
    text: str
    """What happened, in one line."""
    meaning: str = ""
    """What it means for the machine, for a reader woken at 3 a.m."""
    data: dict[str, Any] = field(default_factory=dict)
    """Figures (a PSI value and its threshold) or, for a kill, its story as `why --format json` has it."""
    lines: tuple[dict[str, Any], ...] = ()
    """The log records behind it (time, uptime_s, message, ident, host): what `--record` keeps so
    that `why --record FILE` can read the kill even when the journal lost it."""
    view: Any = None
    """For a kill, its `why` view (storyview.WhyView), which the terminal prints; not in the JSON."""
    key: tuple[Any, ...] | None = None
    """For a kill, what tells it from every other (Watcher._key), kept in the cursor file with
    whether its hook ran; not in the JSON."""

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "schema": SCHEMA,
            "event": self.event,
            "kind": self.kind,
            "time": iso_time(self.time),
            "text": self.text,
        }
        if self.meaning:
            document["meaning"] = self.meaning
        # The figures never take the place of the fields every event has.
        document.update((key, value) for key, value in self.data.items() if key not in document)
        if self.lines:
            document["lines"] = list(self.lines)
        return document
