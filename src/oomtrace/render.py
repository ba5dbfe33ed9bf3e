"""Draw a format onto standard output or the `-o` file, at a width fixed and without rich's padding.

The CLI's output side: a rich Console made here and passed into the format (a format never
makes its own), and the quiet exit when the reader of the output leaves.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import IO, Any

from rich.console import Console

from oomtrace import outputs
from oomtrace.formats import format_class
from oomtrace.formats.base import Format
from oomtrace.usecases.settings import Settings

# The widths a report is laid out in, whatever the terminal or COLUMNS says.
MIN_WIDTH, MAX_WIDTH = 40, 300
# The shell's convention for a process ended by SIGPIPE: 128 + its number.
EXIT_SIGPIPE = 128 + 13


class OutputConsole(Console):
    """rich exits 1 when the reader of its output leaves; 1 means "nothing found" here."""

    def on_broken_pipe(self) -> None:
        quiet_broken_pipe()


def quiet_broken_pipe() -> None:
    """The reader of our output left (`| head -1`): exit as a shell would, with nothing on
    stderr and no flush of what can no longer be written."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise SystemExit(EXIT_SIGPIPE)


def render(settings: Settings, draw: Callable[[Format], None]) -> None:
    if not settings.output:
        draw_on(sys.stdout, settings, draw)
        return
    outputs.write_text(settings.output, lambda stream: draw_on(stream, settings, draw), "-o")


def draw_on(stream: IO[str], settings: Settings, draw: Callable[[Format], None]) -> None:
    # COLUMNS=0 would print nothing and COLUMNS=99999999 hundreds of megabytes of padding.
    found = OutputConsole(file=stream)
    width = min(max(found.width, MIN_WIDTH), MAX_WIDTH)
    # JSON is written as json.dumps makes it, never padded: only rich's drawings need unpadding.
    plain = stream.isatty() or settings.format == "json"
    target: IO[str] = stream if plain else Unpadded(stream)  # type: ignore[assignment]
    # The height as rich finds it, found once: a console without one asks the terminal and the
    # environment again on every print (a tenth of the printing of `why --all` on 5,000 kills).
    console = OutputConsole(file=target, highlight=False, width=width, height=found.height)
    draw(format_class(settings.format)(console))
    target.flush()


class Unpadded:
    """A text stream that drops the spaces rich pads lines with (tables, panels): piped or
    saved output has no trailing blanks to diff or grep past. A terminal gets rich as it is."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._partial = ""

    def write(self, text: str) -> int:
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        if lines:
            self._stream.write("\n".join(line.rstrip(" ") for line in lines) + "\n")
        return len(text)

    def flush(self) -> None:
        if self._partial:
            self._stream.write(self._partial.rstrip(" "))
            self._partial = ""
        self._stream.flush()

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
