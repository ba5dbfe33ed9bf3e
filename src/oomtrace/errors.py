"""The one error hierarchy and the exit codes the CLI maps it to."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Documented process exit codes (see docs/exit-codes.md)."""

    OK = 0
    NOT_FOUND = 1
    USAGE = 2
    EMPTY_INPUT = 3
    """Standard input was piped in and held nothing: no log was read, so no answer is given."""


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


class EmptyInputError(InputError):
    """Standard input held nothing: `true | oomtrace list` is no evidence of "no kills"."""

    exit_code = ExitCode.EMPTY_INPUT


class UsageError(OomtraceError):
    """An option value that cannot be used (a bad --tz or --boot-time)."""


class NotFoundError(OomtraceError):
    """`why` found no record of the process in the input."""

    exit_code = ExitCode.NOT_FOUND


class OutputError(OomtraceError):
    """The report or a file could not be written: a full disk, a closed standard output, a
    device that refuses it."""
