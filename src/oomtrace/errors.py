"""The one error hierarchy and the exit codes the CLI maps it to."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Documented process exit codes (see README, "Exit codes")."""

    OK = 0
    NOT_FOUND = 1
    USAGE = 2


class OomtraceError(Exception):
    """Base of every error the CLI turns into a one-line message."""

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} ({self.hint})"


class InputError(OomtraceError):
    """A source could not be read: missing, unreadable, binary, or not a log."""


class UsageError(OomtraceError):
    """An option value that cannot be used (a bad --tz or --boot-time)."""


class NotFoundError(OomtraceError):
    """`why` found no record of the process in the input."""

    exit_code = ExitCode.NOT_FOUND
