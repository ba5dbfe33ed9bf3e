"""`--exec CMD`: a command run for each warning and kill, off the watcher's own thread."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading

from oomtrace.sanitize import inert
from oomtrace.watch.notice import Notice

# Notices waiting for the hook beyond this are dropped (and counted): a hook slower than the
# events must not grow the watcher's memory.
QUEUE_MAX = 256


class Hook:
    """Runs CMD through /bin/sh with the notice as JSON on stdin and its event in
    OOMTRACE_EVENT (its kind in OOMTRACE_KIND). One at a time, each cut off after `timeout_s`;
    the first failure of each sort is said on stderr, the rest counted."""

    def __init__(self, command: str, timeout_s: float = 10.0) -> None:
        self.command = command
        self.timeout_s = timeout_s
        self.dropped = 0
        self.failures = 0
        self._said: set[str] = set()
        self._queue: queue.Queue[Notice | None] = queue.Queue(QUEUE_MAX)
        self._thread = threading.Thread(target=self._run, name="oomtrace-exec", daemon=True)
        self._thread.start()

    def send(self, notice: Notice) -> None:
        try:
            self._queue.put_nowait(notice)
        except queue.Full:
            self.dropped += 1
            self._say("queue", f"--exec is slower than the events: {self.dropped} dropped so far")

    def close(self, wait_s: float = 5.0) -> None:
        try:
            self._queue.put(None, timeout=wait_s)
        except queue.Full:
            return
        self._thread.join(wait_s)

    def _run(self) -> None:
        while True:
            notice = self._queue.get()
            if notice is None:
                return
            self._call(notice)

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
                start_new_session=True,  # so a timeout kills the hook's children too
            )
        except OSError as error:
            self._fail("start", f"--exec cannot start: {error.strerror}")
            return
        try:
            _, error_output = process.communicate(payload, timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
            self._fail("timeout", f"--exec ran over {self.timeout_s:g} s and was killed")
            return
        if process.returncode != 0:
            said = error_output.decode("utf-8", "replace").strip().splitlines()
            last = f": {said[-1]}" if said else ""
            self._fail("exit", f"--exec failed (exit {process.returncode}){last}")

    def _fail(self, sort: str, message: str) -> None:
        self.failures += 1
        self._say(sort, message + " (said once; later failures are counted)")

    def _say(self, sort: str, message: str) -> None:
        if sort not in self._said:
            self._said.add(sort)
            print(f"oomtrace: {inert(message)}", file=sys.stderr, flush=True)
