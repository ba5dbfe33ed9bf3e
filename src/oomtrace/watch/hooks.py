"""`--exec CMD`: a command run for each warning and kill, off the watcher's own thread."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from typing import Any

from oomtrace.sanitize import inert
from oomtrace.watch.notice import Notice

# Notices waiting for the hook beyond this are dropped (and counted): a hook slower than the
# events must not grow the watcher's memory.
QUEUE_MAX = 256
# Of a hook's stderr, the first and the last this many bytes are kept for its failure message;
# the rest is read and dropped (a hook that floods it grew the watcher to 3.5 GB).
KEEP_BYTES = 4096
# A hook that has exited but left a child holding its stderr open is read until it has said
# nothing for this long (what it wrote before exiting is read whatever the machine's load).
AFTER_EXIT_S = 0.2
# A group sent SIGTERM (the watcher is stopping) has this long before SIGKILL.
TERM_GRACE_S = 1.0
# While a hook's children outlive it, the hook's thread looks at them this often.
LINGER_CHECK_S = 0.5
# The kills whose hook ran that the cursor file keeps (as many as the kills told it keeps).
RAN_KEPT = 1024


class Hook:
    """Runs CMD through /bin/sh with the notice as JSON on stdin and its event in
    OOMTRACE_EVENT (its kind in OOMTRACE_KIND). One at a time, each in a process group of its
    own, which is ended at its time limit and when the watcher stops, children it left in the
    background (`cmd & exit 0`) too; the first failure of each sort is said on stderr, the rest
    counted."""

    def __init__(self, command: str, timeout_s: float = 10.0) -> None:
        self.command = command
        self.timeout_s = timeout_s
        self.dropped = 0
        self.failures = 0
        self._said: set[str] = set()
        self.ran: deque[tuple[Any, ...]] = deque(maxlen=RAN_KEPT)
        """The kills (Notice.key) whose hook has run, newest last: saved with the cursor, so a kill
        a restart tells again (a repeat) runs its hook again only if it had not run."""
        self._queue: queue.Queue[Notice | None] = queue.Queue(QUEUE_MAX)
        self._running: subprocess.Popen[bytes] | None = None
        # Groups of hooks that exited leaving children behind (`cmd & exit 0`), each with the
        # end of its hook's time limit: the limit is the group's, not only its shell's.
        self._lingering: list[tuple[int, float]] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="oomtrace-exec", daemon=True)
        self._thread.start()

    def send(self, notice: Notice) -> None:
        try:
            self._queue.put_nowait(notice)
        except queue.Full:
            self.dropped += 1
            self._say("queue", f"--exec is slower than the events: {self.dropped} dropped so far")

    def close(self, wait_s: float = 5.0) -> None:
        """Let the queued hooks run for up to `wait_s`, then end the one still running (its
        whole group) rather than leave it orphaned."""
        deadline = time.monotonic() + wait_s
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=wait_s)
        self._thread.join(max(0.0, deadline - time.monotonic()))
        if self._thread.is_alive():
            self._stopping.set()
            running = self._running
            if running is not None:
                _end_group(running, signal.SIGTERM)
            self._thread.join(TERM_GRACE_S + 1)
        self._end_lingering(at_stop=True)

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._end_lingering()
            try:
                notice = self._queue.get(timeout=LINGER_CHECK_S if self._lingering else None)
            except queue.Empty:
                continue
            if notice is None:
                return
            try:
                self._call(notice)
            except Exception as error:
                self._fail("error", f"--exec: {type(error).__name__}: {error}")

    def _end_lingering(self, *, at_stop: bool = False) -> None:
        """Children a hook left running past its time limit (or the watcher stopping) are ended
        with their group, as a hook still running then would be."""
        now = time.monotonic()
        waiting = []
        for pgid, deadline in self._lingering:
            if not _group_alive(pgid):
                continue
            if at_stop or now >= deadline:
                _end_group_id(pgid)
            else:
                waiting.append((pgid, deadline))
        self._lingering = waiting

    def _call(self, notice: Notice) -> None:
        environment = {**os.environ, "OOMTRACE_EVENT": notice.event, "OOMTRACE_KIND": notice.kind}
        payload = (json.dumps(notice.to_json()) + "\n").encode()
        try:
            process = subprocess.Popen(
                ["/bin/sh", "-c", self.command],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=environment,
                start_new_session=True,  # its own group: its children are ended with it
            )
        except OSError as error:
            self._fail("start", f"--exec cannot start: {error.strerror}")
            return
        self._running = process
        deadline = time.monotonic() + self.timeout_s
        try:
            said = _drain(process, payload, deadline)
        finally:
            self._running = None
        if notice.key is not None:
            self.ran.append(notice.key)  # deque.append is atomic: the loop reads it for its cursor
        if process.poll() is not None and _group_alive(process.pid):
            self._lingering.append((process.pid, deadline))
        if process.poll() is None:
            _end_group(process, signal.SIGKILL)
            if not self._stopping.is_set():
                self._fail("timeout", f"--exec ran over {self.timeout_s:g} s and was killed")
            return
        if process.returncode != 0 and not self._stopping.is_set():
            self._fail("exit", f"--exec failed (exit {process.returncode}){said.summary()}")

    def _fail(self, sort: str, message: str) -> None:
        self.failures += 1
        self._say(sort, message + " (said once; later failures are counted)")

    def _say(self, sort: str, message: str) -> None:
        if sort not in self._said:
            self._said.add(sort)
            print(f"oomtrace: {inert(message)}", file=sys.stderr, flush=True)


class _Kept:
    """A stream's first and last KEEP_BYTES, and how much it was in all."""

    def __init__(self) -> None:
        self.head = b""
        self.tail = b""
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = KEEP_BYTES - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail = (self.tail + data)[-KEEP_BYTES:]

    def summary(self) -> str:
        """`: first line … last line (N bytes of stderr)`, or nothing when it said nothing."""
        first = self.head.decode("utf-8", "replace").strip().splitlines()
        last = self.tail.decode("utf-8", "replace").strip().splitlines()
        if not first:
            return ""
        said = first[-1] if not last and len(first) == 1 else first[0]
        ending = last[-1] if last else (first[-1] if len(first) > 1 else "")
        text = said[:200] + (f" \u2026 {ending[-200:]}" if ending and ending != said else "")
        if self.total > len(self.head) + len(self.tail):
            text += f" ({self.total:,} bytes of stderr; its first and last {KEEP_BYTES >> 10} KiB kept)"
        return f": {text}"


def _drain(process: subprocess.Popen[bytes], payload: bytes, deadline: float) -> _Kept:
    """Feed the hook its stdin and read its stderr as it comes, keeping only the ends, until it
    has exited and closed stderr (or the deadline): a flood costs time, never memory."""
    assert process.stdin is not None and process.stderr is not None
    kept = _Kept()
    selector = selectors.DefaultSelector()
    os.set_blocking(process.stderr.fileno(), False)
    selector.register(process.stderr, selectors.EVENT_READ)
    if payload:
        os.set_blocking(process.stdin.fileno(), False)
        selector.register(process.stdin, selectors.EVENT_WRITE)
    else:
        process.stdin.close()
    exited_at: float | None = None  # once it has exited: when stderr last gave something
    try:
        while selector.get_map():
            now = time.monotonic()
            if now >= deadline or (exited_at is not None and now - exited_at > AFTER_EXIT_S):
                break
            for key, _ in selector.select(min(0.1, deadline - now)):
                if key.fileobj is process.stdin:
                    payload = _feed(process, payload)
                    if not payload:
                        selector.unregister(process.stdin)
                        process.stdin.close()
                    continue
                try:
                    data = os.read(process.stderr.fileno(), 1 << 16)
                except BlockingIOError:
                    continue
                if data:
                    kept.add(data)
                    exited_at = time.monotonic() if exited_at is not None else None
                else:
                    selector.unregister(process.stderr)
            if exited_at is None and process.poll() is not None:
                exited_at = time.monotonic()
        if process.stderr.fileno() in {key.fd for key in selector.get_map().values()}:
            _read_what_is_there(process, kept)
        if exited_at is None and not selector.get_map():  # stderr closed; it may still be running
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
    finally:
        selector.close()
        for stream in (process.stdin, process.stderr):
            with contextlib.suppress(OSError):
                stream.close()
    return kept


def _read_what_is_there(process: subprocess.Popen[bytes], kept: _Kept, reads: int = 16) -> None:
    """What the pipe holds now (a hook descheduled past the wait still said it), up to a bound."""
    assert process.stderr is not None
    for _ in range(reads):
        try:
            data = os.read(process.stderr.fileno(), 1 << 16)
        except (BlockingIOError, OSError):
            return
        if not data:
            return
        kept.add(data)


def _feed(process: subprocess.Popen[bytes], payload: bytes) -> bytes:
    """What is left of the payload after one write (nothing once the hook closed its stdin)."""
    assert process.stdin is not None
    try:
        written = os.write(process.stdin.fileno(), payload[: 1 << 16])
    except BlockingIOError:
        return payload
    except (BrokenPipeError, OSError):
        return b""
    return payload[written:]


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _end_group_id(pgid: int) -> None:
    """A group whose leader has exited: SIGTERM, then SIGKILL for what outlives the grace."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE_S
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _end_group(process: subprocess.Popen[bytes], first: signal.Signals) -> None:
    """The hook's whole process group: `first`, then SIGKILL for what outlives the grace."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, first)
    if first != signal.SIGKILL:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=TERM_GRACE_S)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=TERM_GRACE_S)
