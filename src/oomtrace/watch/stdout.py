"""The watcher's standard output: each notice written whole or not at all, held and retried
while it cannot be (`>> events.jsonl` on a full disk), so that the cursor never passes it."""

from __future__ import annotations

import contextlib
import io
import time
from collections import deque
from collections.abc import Callable
from typing import IO

from oomtrace.errors import OutputError
from oomtrace.watch.blackbox import PENDING_MAX_BYTES, RETRY_S, OnceSaid, write_whole


class StoryOut:
    """Notices as text, appended to standard output. On a regular file a write the disk took
    only part of is taken back (the file keeps whole notices); what cannot be written waits,
    up to PENDING_MAX_BYTES (the oldest dropped beyond it, and counted), and is tried again."""

    def __init__(self, stream: IO[str], say: Callable[[str], None]) -> None:
        self._stream = stream
        self._fd = _descriptor(stream)
        self._pending: deque[bytes] = deque()
        self._pending_bytes = 0
        self.dropped = 0
        then = (
            f"the events are kept (up to {PENDING_MAX_BYTES >> 20} MiB) and retried every "
            f"{RETRY_S:g} s; the cursor stays before them"
        )
        self._failures = OnceSaid("standard output", say, then)
        self._tried = 0.0

    @property
    def behind(self) -> bool:
        """Notices not yet written whole: the cursor must not pass them."""
        return bool(self._pending) or self.dropped > 0

    def write(self, text: str) -> None:
        data = text.encode("utf-8", "surrogateescape")
        self._pending.append(data)
        self._pending_bytes += len(data)
        while self._pending_bytes > PENDING_MAX_BYTES and len(self._pending) > 1:
            self._pending_bytes -= len(self._pending.popleft())
            self.dropped += 1
        if not self._failures.failing or time.monotonic() - self._tried >= RETRY_S:
            self.flush()

    def retry(self) -> None:
        if self._pending and time.monotonic() - self._tried >= RETRY_S:
            self.flush()

    def flush(self) -> None:
        self._tried = time.monotonic()
        while self._pending:
            data = self._pending[0]
            try:
                self._write(data)
            except BrokenPipeError:
                raise  # the reader left: the watcher ends, as `| head` ends any command
            except (OSError, OutputError) as error:
                self._failures.failed(error)
                return
            self._pending.popleft()
            self._pending_bytes -= len(data)
        note = f"; {self.dropped:,} event(s) dropped meanwhile" if self.dropped else ""
        self._failures.worked(note)
        self.dropped = 0

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            # A stream with no descriptor of its own (a test's): written as text, whole.
            self._stream.write(data.decode("utf-8", "surrogateescape"))
            self._stream.flush()
            return
        write_whole(self._fd, data)


def _descriptor(stream: IO[str]) -> int | None:
    """Standard output's descriptor, what Python buffered for it written first; None for a
    stream that has none."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None
    with contextlib.suppress(OSError, OutputError, ValueError):
        stream.flush()
    return fd
