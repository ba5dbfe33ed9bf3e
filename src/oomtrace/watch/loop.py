"""The watcher's loop: poll the followed log (and a PSI trigger), sample once a second, hand
notices to the sinks (terminal or JSON lines, --record, --exec), keep the cursor."""

from __future__ import annotations

import contextlib
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

from oomtrace import outputs
from oomtrace.errors import OutputError
from oomtrace.formats.text import TextFormat
from oomtrace.sanitize import inert
from oomtrace.watch.blackbox import CursorFile, OnceSaid, Record, read_cursor, read_told
from oomtrace.watch.follow import Follower, FollowerEnded
from oomtrace.watch.hooks import Hook
from oomtrace.watch.notice import Notice
from oomtrace.watch.probes import (
    open_trigger,
    read_cgroup,
    read_memory,
    read_pressure,
    trigger_spec,
    trigger_words,
)
from oomtrace.watch.stdout import StoryOut
from oomtrace.watch.thresholds import Thresholds
from oomtrace.watch.watcher import Sample, Watcher

# Samples are taken at least this often (MemAvailable can fall 20 GiB in two seconds).
SAMPLE_EVERY_S = 1.0
# The cursor file is rewritten at most this often while records arrive (and always at a notice
# and at exit): each write is an fsync.
CURSOR_EVERY_S = 1.0
# Reads of the log are at least this far apart, so that a driver printing line after line wakes
# the loop once a batch, not once a line (a wake-up costs more than a noise line): at most 100
# a second. The kernel's ring buffer (128 KiB by default) holds over a tenth of a second of lines
# even at 10,000 a second, and a story waits 0.3 s for the rest of its report anyway.
READ_EVERY_S = 0.01
# How long a follower's program killed by a signal waits for the watcher's own (_read).
STOP_GRACE_S = 2.0
_STYLES = {"warning": "yellow", "clear": "green", "gap": "magenta", "kill": "bold red", "claim": "magenta"}


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
    """Where notices go: the terminal or a JSON-lines stream, the record, the hook, the metrics.
    A notice is handed to all of them before the call returns (the hook's queue included)."""

    def __init__(
        self, options: WatchOptions, console: Console, stream: IO[str], say: Callable[[str], None]
    ) -> None:
        self.options = options
        self.console = console
        self.stream = stream
        self.say = say
        self.out = StoryOut(stream, say)
        self.record = Record(options.record_file, say) if options.record_file else None
        self.hook = Hook(options.exec_command, options.exec_timeout_s) if options.exec_command else None
        self.metrics = None
        self._metrics_due = False
        self._metrics_failures = OnceSaid(f"--prom-textfile {options.prom_textfile}", say)
        if options.prom_textfile:
            from oomtrace.metrics import Metrics  # prometheus-client: only with --prom-textfile

            self.metrics = Metrics()
            # At start a file it cannot write is an error (outputs' one line); later it is retried.
            # A FIFO with no reader yet is not: it is said once and written when one comes.
            try:
                self.metrics.write(options.prom_textfile, wait_for_reader=False)
            except OutputError as error:
                if not outputs.is_fifo(options.prom_textfile):
                    raise
                self._metrics_failures.failed(error)
                self._metrics_due = True
        self.saved = False
        self.hooked_before: frozenset[Any] = frozenset()
        """The kills whose hook the last run ran (read_told)."""

    @property
    def hooked(self) -> list[list[Any]]:
        return [list(key) for key in self.hook.ran] if self.hook is not None else []

    @property
    def behind(self) -> bool:
        """Something told is not yet in every file: the cursor must not pass it."""
        return self._metrics_due or self.out.behind or (self.record is not None and self.record.behind)

    def __call__(self, notice: Notice) -> None:
        if self.record is not None:
            self.record.write(notice)
        if notice.event == "sample":
            return  # samples are for the black box only
        self.saved = False
        # A repeat (told by the last run, stopped before its cursor passed the kill): its metric
        # counted then, and its hook ran then unless that run was stopped first.
        repeat = bool(notice.data.get("repeat"))
        hooked = repeat and notice.key in self.hooked_before
        if self.hook is not None and notice.event in ("warning", "kill") and not hooked:
            self.hook.send(notice)
        if self.metrics is not None and notice.event in ("warning", "kill") and not repeat:
            if notice.event == "warning" and "same_kill" not in notice.data:
                self.metrics.warning(notice.kind)
            elif notice.view is not None:
                (story,) = notice.view.stories_data
                self.metrics.kill(story.episode, story.lead_time_s)
            self._metrics_due = True
            self._write_metrics()
        if self.options.output == "jsonl":
            self.out.write(json.dumps(notice.to_json(), ensure_ascii=False) + "\n")
        elif notice.event != "started":  # "started" is said on stderr, where progress goes
            self.out.write(self._text(notice))

    def _text(self, notice: Notice) -> str:
        """The notice as the terminal shows it, made whole before any of it is written."""
        with self.console.capture() as captured:
            if notice.event == "kill" and notice.view is not None:
                self.console.print()
                TextFormat(self.console).why(None, notice.view)  # type: ignore[arg-type]
                self.console.print()
            else:
                when = notice.time.strftime("%H:%M:%S")
                line = f"{when} {notice.event} {notice.kind}: {notice.text}"
                if notice.meaning:
                    line += f" \u2014 {notice.meaning}"
                self.console.print(Text(inert(line), style=_STYLES.get(notice.event, "")))
        text = captured.get()
        if self.console.is_terminal:
            return text
        # Piped or saved: no trailing blanks to diff or grep past (as `why` prints).
        return "\n".join(line.rstrip(" ") for line in text.split("\n"))

    def retry(self) -> None:
        """Files that failed, tried again."""
        self.out.retry()
        if self.record is not None:
            self.record.retry()
        if self._metrics_due:
            self._write_metrics()

    def _write_metrics(self) -> None:
        if self.metrics is None or not self.options.prom_textfile:
            return
        try:
            # A FIFO whose reader left must not hold up the stories: said once, retried.
            self.metrics.write(self.options.prom_textfile, wait_for_reader=False)
        except (OSError, OutputError) as error:
            self._metrics_failures.failed(error)
            return
        self._metrics_failures.worked()
        self._metrics_due = False

    def reopen(self) -> None:
        """SIGHUP, as daemons take it: files that logrotate may have moved are opened anew."""
        if self.record is not None:
            self.record.reopen()
        if self.metrics is not None:
            self._metrics_due = True
            self._write_metrics()

    def close(self) -> None:
        with contextlib.suppress(BrokenPipeError):
            self.out.flush()
        if self.hook is not None:
            self.hook.close()
        if self.record is not None:
            self.record.close()


class _Signals:
    """SIGTERM stops the watcher (quietly, exit 0); SIGHUP reopens its files; SIGUSR1 has it say
    how it stands. Each only sets a flag: the loop acts on it within a second, between reads, so
    that a kill being told is never cut short."""

    def __init__(self) -> None:
        self.stop = self.reopen = self.status = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _Signals:
        for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1):
            self._previous[number] = signal.signal(number, self._got)
        return self

    def _got(self, number: int, _frame: Any) -> None:
        if number == signal.SIGTERM:
            self.stop = True
        elif number == signal.SIGHUP:
            self.reopen = True
        else:
            self.status = True

    def __exit__(self, *_: object) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)


def watch(
    follower: Follower,
    options: WatchOptions,
    console: Console,
    stream: IO[str],
    say: Callable[[str], None],
    stop_after_s: float | None = None,
) -> int:
    """Follow until interrupted (or `stop_after_s`, for tests and benches); returns kills told."""
    sinks = Sinks(options, console, stream, say)
    started = datetime.now(options.zone)
    told, hooked = read_told(options.cursor_file, follower.kind) if options.cursor_file else ([], [])
    sinks.hooked_before = frozenset(hooked)
    if sinks.hook is not None:
        sinks.hook.ran.extend(hooked)
    watcher = Watcher(
        options.thresholds, options.zone, follower.name, sinks, follower.boot_id(), started, told
    )
    some = options.thresholds.psi_some
    trigger, how = (
        open_trigger(trigger_spec(some), options.pressure_path) if some else (None, "no PSI trigger")
    )
    cursor_file = CursorFile(options.cursor_file, follower.kind, say) if options.cursor_file else None
    if cursor_file is not None:
        watcher.before_telling = lambda: _save(cursor_file, watcher, sinks)
    # Before "started" is said: whoever waits for it may stop the watcher at once.
    with _Signals() as signals:
        say(f"watching {follower.description}; {_how(some, trigger, how)}")
        sinks(Notice("started", follower.kind, started, f"watching {follower.description}"))
        try:
            _follow(follower, options, watcher, sinks, trigger, signals, cursor_file, stop_after_s)
        except KeyboardInterrupt:
            pass
        finally:
            watcher.flush(time.monotonic(), datetime.now(options.zone))
            follower.close()
            sinks.close()
            if cursor_file is not None:
                _save(cursor_file, watcher, sinks)
    return watcher.kills


def _follow(
    follower: Follower,
    options: WatchOptions,
    watcher: Watcher,
    sinks: Sinks,
    trigger: int | None,
    signals: _Signals,
    cursor_file: CursorFile | None,
    stop_after_s: float | None,
) -> None:
    poller = select.poll()
    poller.register(follower.fileno(), select.POLLIN | select.POLLPRI)
    if trigger is not None:
        poller.register(trigger, select.POLLPRI)
    deadline = time.monotonic() + stop_after_s if stop_after_s is not None else None
    next_sample = 0.0
    cursor_saved_at = 0.0
    read_at = 0.0
    # What is there already (the entries after a saved cursor) wakes no poll: read it first.
    if not _read(follower, watcher, options, signals):
        return
    while not signals.stop:
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            break
        wait = min(watcher.next_wake(now), max(0.0, next_sample - now), 1.0)
        sampled = False
        for fd, _ in poller.poll(int(wait * 1000) + 1):
            if fd == trigger:
                sampled = True
                continue
            if (rest := read_at + READ_EVERY_S - time.monotonic()) > 0:
                time.sleep(rest)  # what arrives meanwhile comes in the same batch
            read_at = time.monotonic()
            if not _read(follower, watcher, options, signals):
                return
        now = time.monotonic()
        if sampled or now >= next_sample:
            watcher.sample(_sample(options, now))
            next_sample = now + SAMPLE_EVERY_S
        watcher.tick(now, datetime.now(options.zone))
        sinks.retry()
        if signals.reopen:
            signals.reopen = False
            sinks.reopen()
            sinks.say("SIGHUP: reopened " + (", ".join(_files(options)) or "nothing (no files to reopen)"))
        if signals.status:
            signals.status = False
            sinks.say(watcher.status())
        if cursor_file is not None and (not sinks.saved or now - cursor_saved_at >= CURSOR_EVERY_S):
            _save(cursor_file, watcher, sinks)
            sinks.saved, cursor_saved_at = True, now


def _read(follower: Follower, watcher: Watcher, options: WatchOptions, signals: _Signals) -> bool:
    """Feed the watcher what the follower has; False when the watcher was stopped meanwhile.

    `systemctl stop` and Ctrl-C signal journalctl and the watcher at once: journalctl's end is
    often read before the watcher's own SIGTERM is handled. A follower killed by a signal is a
    stop, not a failure, when that signal reaches the watcher within STOP_GRACE_S."""
    try:
        batch = follower.read()
    except FollowerEnded as ended:
        if not ended.by_signal:
            raise
        deadline = time.monotonic() + STOP_GRACE_S
        while not signals.stop and time.monotonic() < deadline:
            time.sleep(0.01)  # the handler runs between bytecodes; Ctrl-C raises KeyboardInterrupt
        if signals.stop:
            return False
        raise
    watcher.feed(batch, time.monotonic(), datetime.now(options.zone))
    return True


def _how(some: float | None, trigger: int | None, how: str) -> str:
    """How the samples are taken, in words (not the trigger's `some 200000 2000000`)."""
    if trigger is not None and some is not None:
        return f"samples once a second, and {trigger_words(some)} ({how})"
    return f"samples once a second ({how})"


def _files(options: WatchOptions) -> list[str]:
    named = (("--record", options.record_file), ("--prom-textfile", options.prom_textfile))
    return [f"{option} {path}" for option, path in named if path]


def _sample(options: WatchOptions, now: float) -> Sample:
    cgroups = tuple(c for c in (read_cgroup(path) for path in options.cgroups) if c is not None)
    return Sample(
        now,
        datetime.now(options.zone),
        read_pressure(options.pressure_path),
        read_memory(options.meminfo_path),
        cgroups,
    )


def _save(cursor_file: CursorFile, watcher: Watcher, sinks: Sinks) -> None:
    """The position past what every output has: never past a kill not yet told, nor past an
    event that a failing --record or --prom-textfile does not hold yet."""
    cursor = watcher.cursor
    told = [list(key) for key in watcher.told_keys]
    hooked = sinks.hooked
    if cursor is None or (cursor == cursor_file.saved and (told, hooked) == cursor_file.told) or sinks.behind:
        return
    saved = datetime.now(UTC).isoformat(timespec="seconds")
    cursor_file.save(cursor, {"saved": saved, "told": told, "hooked": hooked})


def saved_cursor(path: str | None, source: str) -> str | None:
    return read_cursor(path, source) if path else None
