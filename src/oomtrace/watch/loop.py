"""The watcher's loop: poll the followed log (and a PSI trigger), sample once a second, hand
notices to the sinks (terminal or JSON lines, --record, --exec), keep the cursor."""

from __future__ import annotations

import json
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.text import Text

from oomtrace.errors import InputError
from oomtrace.formats.text import TextFormat
from oomtrace.sanitize import inert
from oomtrace.watch.blackbox import Record, read_cursor, write_cursor
from oomtrace.watch.follow import Follower
from oomtrace.watch.hooks import Hook
from oomtrace.watch.notice import Notice
from oomtrace.watch.probes import open_trigger, read_cgroup, read_memory, read_pressure, trigger_spec
from oomtrace.watch.thresholds import Thresholds
from oomtrace.watch.watcher import Sample, Watcher

# Samples are taken at least this often (MemAvailable can fall 20 GiB in two seconds).
SAMPLE_EVERY_S = 1.0
# The cursor file is rewritten at most this often while records arrive (and always at a notice
# and at exit): each write is an fsync.
CURSOR_EVERY_S = 1.0
_STYLES = {"warning": "yellow", "clear": "green", "gap": "magenta", "kill": "bold red"}


@dataclass
class WatchOptions:
    thresholds: Thresholds
    zone: tzinfo
    output: str = "text"
    """"text" (stories and one line per warning) or "jsonl" (one JSON object per event)."""
    cursor_file: str | None = None
    record_file: str | None = None
    exec_command: str | None = None
    exec_timeout_s: float = 10.0
    cgroups: list[Path] = field(default_factory=list)
    prom_textfile: str | None = None
    """Kept current for node_exporter: kills told and warnings said since the watcher started."""
    pressure_path: str = "/proc/pressure/memory"
    meminfo_path: str = "/proc/meminfo"


class Sinks:
    """Where notices go: the terminal or a JSON-lines stream, the record, the hook."""

    def __init__(self, options: WatchOptions, console: Console, stream: IO[str]) -> None:
        self.options = options
        self.console = console
        self.stream = stream
        self.record = Record(options.record_file) if options.record_file else None
        self.hook = Hook(options.exec_command, options.exec_timeout_s) if options.exec_command else None
        self.metrics = None
        if options.prom_textfile:
            from oomtrace.metrics import Metrics  # prometheus-client: only with --prom-textfile

            self.metrics = Metrics()
        self.saved = False
        self._write_metrics()

    def __call__(self, notice: Notice) -> None:
        if self.record is not None:
            self.record.write(notice)
        if notice.event == "sample":
            return  # samples are for the black box only
        self.saved = False
        if self.hook is not None and notice.event in ("warning", "kill"):
            self.hook.send(notice)
        if self.metrics is not None and notice.event in ("warning", "kill"):
            if notice.event == "warning":
                self.metrics.warning(notice.kind)
            elif notice.view is not None:
                (story,) = notice.view.stories_data
                self.metrics.kill(story.episode, story.lead_time_s)
            self._write_metrics()
        if self.options.output == "jsonl":
            self.stream.write(json.dumps(notice.to_json(), ensure_ascii=False) + "\n")
            self.stream.flush()
        elif notice.event == "started":
            pass  # said on stderr, where progress goes
        elif notice.event == "kill" and notice.view is not None:
            self.console.print()
            TextFormat(self.console).why(None, notice.view)  # type: ignore[arg-type]
            self.console.print()
        else:
            when = notice.time.strftime("%H:%M:%S")
            line = f"{when} {notice.event} {notice.kind}: {notice.text}"
            if notice.meaning:
                line += f" \u2014 {notice.meaning}"
            self.console.print(Text(inert(line), style=_STYLES.get(notice.event, "")))
        self.console.file.flush()

    def _write_metrics(self) -> None:
        if self.metrics is not None and self.options.prom_textfile:
            try:
                self.metrics.write(self.options.prom_textfile)
            except OSError as error:
                raise InputError(f"cannot write --prom-textfile: {error.strerror or error}") from None

    def close(self) -> None:
        if self.hook is not None:
            self.hook.close()
        if self.record is not None:
            self.record.close()


def watch(
    follower: Follower,
    options: WatchOptions,
    console: Console,
    stream: IO[str],
    say: Callable[[str], None],
    stop_after_s: float | None = None,
) -> int:
    """Follow until interrupted (or `stop_after_s`, for tests and benches); returns kills told."""
    sinks = Sinks(options, console, stream)
    started = datetime.now(options.zone)
    watcher = Watcher(options.thresholds, options.zone, follower.name, sinks, follower.boot_id(), started)
    some = options.thresholds.psi_some
    trigger, how = (
        open_trigger(trigger_spec(some), options.pressure_path) if some else (None, "no PSI trigger")
    )
    stopping = False

    def stop(_signum: int, _frame: Any) -> None:
        nonlocal stopping
        stopping = True

    # Before "started" is said: whoever waits for it may stop the watcher at once.
    previous = signal.signal(signal.SIGTERM, stop)
    say(f"watching {follower.description}; {how}{'' if trigger is not None else ', sampling once a second'}")
    sinks(Notice("started", follower.kind, started, f"watching {follower.description}"))
    poller = select.poll()
    poller.register(follower.fileno(), select.POLLIN | select.POLLPRI)
    if trigger is not None:
        poller.register(trigger, select.POLLPRI)
    deadline = time.monotonic() + stop_after_s if stop_after_s is not None else None
    next_sample = 0.0
    cursor: str | None = None
    cursor_saved_at = 0.0
    try:
        # What is there already (the entries after a saved cursor) wakes no poll: read it first.
        first = follower.read()
        cursor = first.cursor
        watcher.feed(first, time.monotonic(), datetime.now(options.zone))
        while not stopping:
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                break
            wait = min(watcher.next_wake(now), max(0.0, next_sample - now), 1.0)
            sampled = False
            for fd, _ in poller.poll(int(wait * 1000) + 1):
                now = time.monotonic()
                if fd == trigger:
                    sampled = True
                    continue
                batch = follower.read()
                cursor = batch.cursor or cursor
                watcher.feed(batch, now, datetime.now(options.zone))
            now = time.monotonic()
            if sampled or now >= next_sample:
                watcher.sample(_sample(options, now))
                next_sample = now + SAMPLE_EVERY_S
            watcher.tick(now, datetime.now(options.zone))
            if (
                options.cursor_file
                and cursor
                and (not sinks.saved or now - cursor_saved_at >= CURSOR_EVERY_S)
            ):
                _save(options.cursor_file, follower, cursor)
                sinks.saved, cursor_saved_at = True, now
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        watcher.flush(datetime.now(options.zone))
        if options.cursor_file and cursor:
            _save(options.cursor_file, follower, cursor)
        follower.close()
        sinks.close()
    return watcher.kills


def _sample(options: WatchOptions, now: float) -> Sample:
    cgroups = tuple(c for c in (read_cgroup(path) for path in options.cgroups) if c is not None)
    return Sample(
        now,
        datetime.now(options.zone),
        read_pressure(options.pressure_path),
        read_memory(options.meminfo_path),
        cgroups,
    )


def _save(path: str, follower: Follower, cursor: str) -> None:
    write_cursor(path, follower.kind, cursor, {"saved": datetime.now(UTC).isoformat(timespec="seconds")})


def saved_cursor(path: str | None, source: str) -> str | None:
    return read_cursor(path, source) if path else None
