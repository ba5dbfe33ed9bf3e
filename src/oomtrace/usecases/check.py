"""`check`: the OOM kills since the last run, for node-problem-detector; the cursor kept between runs."""

from __future__ import annotations

from collections.abc import Callable

from oomtrace.frozen import Frozen
from oomtrace.model import Episode
from oomtrace.redact import Redactor
from oomtrace.usecases.reading import Say, read, redactor
from oomtrace.usecases.settings import Settings


class CheckResult(Frozen):
    kills: list[Episode]
    """The kills not said before, oldest first."""
    redactor: Redactor
    """How the line that names them is redacted."""
    save: Callable[[], None]
    """Moves the cursor past them: called once their line is written, never before (a line
    that could not be written would otherwise never be said)."""


def check_kills(settings: Settings, cursor_file: str, say: Say) -> CheckResult:
    """The new kills, and how to move the cursor past them. Call it holding check.locked."""
    from oomtrace import check  # its cursor's writer is the watcher's: only this command needs it

    saved = check.read(cursor_file)
    # All of the input, not only what is stamped after the last kill said: a kill stamped
    # earlier (a clock set back) or not at all (uptime-only dmesg) is news too.
    analysis, _ = read(settings, say)
    kills = check.new_kills(analysis, saved)
    return CheckResult(kills, redactor(settings, analysis), lambda: check.save(cursor_file, analysis, saved))
