"""`oomtrace watch`: the click command; it only builds the follower and options and hands over."""

from __future__ import annotations

import sys
from datetime import tzinfo
from typing import Any

import click
from rich.console import Console

from oomtrace import outputs
from oomtrace.errors import InputError, UsageError
from oomtrace.sanitize import inert
from oomtrace.sources.journal import JournalQuery, journal_folders, system_journal_present
from oomtrace.watch.blackbox import check_cursor_file
from oomtrace.watch.follow import (
    Follower,
    JournalctlFollower,
    JournalReaderFollower,
    KmsgFollower,
)
from oomtrace.watch.loop import WatchOptions, saved_cursor, watch
from oomtrace.watch.probes import find_cgroup
from oomtrace.watch.thresholds import HELP as WARN_HELP
from oomtrace.watch.thresholds import parse_warn
from oomtrace.zones import local_zone, named_zone


@click.command(
    "watch",
    epilog="""Runs until interrupted (Ctrl-C or SIGTERM end it quietly, exit 0); SIGHUP reopens
--record and --prom-textfile, SIGUSR1 says on stderr how it stands. Warnings come
from the kernel log (NVRM NV_ERR_NO_MEMORY and Xid, page allocation failures, journald's
memory-pressure flush, hung tasks) and from the watcher's own samples, taken every second: PSI
memory pressure, MemAvailable and how fast it falls, and the memory events of each --cgroup.
A warning of one kind is said at most once a minute, and again when it clears. A kill is told as
`oomtrace why` tells it, within a second of its kill line, with the warnings before it.

Examples:

\b
  oomtrace watch
  oomtrace watch --source kmsg --warn psi-some=20,memavail=2G
  oomtrace watch --cursor-file /var/lib/oomtrace/cursor --record /var/lib/oomtrace/record.jsonl
  oomtrace watch --format jsonl --exec 'logger -t oomtrace "$OOMTRACE_EVENT"'
  oomtrace why llama-server --record /var/lib/oomtrace/record.jsonl""",
)
@click.option(
    "--source",
    type=click.Choice(["auto", "journal", "kmsg"]),
    default="auto",
    show_default=True,
    help="What to follow: the journal (the system's, or -D/--journal-file), or /dev/kmsg. auto: "
    "the journal where there is one, else /dev/kmsg.",
)
@click.option("--journal-dir", "-D", metavar="DIR", help="Follow this journal folder (journalctl -D).")
@click.option(
    "--journal-file", "journal_files", multiple=True, metavar="FILE", help="Follow this journal file."
)
@click.option("--host", metavar="NAME", help="Only this host's journal entries (a journal-remote store).")
@click.option(
    "--journal-reader",
    type=click.Choice(["auto", "python", "journalctl"]),
    default="auto",
    show_default=True,
    envvar="OOMTRACE_JOURNAL_READER",
    help="systemd-python's Reader, or `journalctl -f -o json --all`.",
)
@click.option(
    "--cursor-file",
    metavar="FILE",
    help="Keep the position here (the journal cursor, or the boot id and kmsg sequence number) and "
    "resume after it: nothing replayed, nothing missed, and a gap said if the cursor is gone. "
    + outputs.HELP,
)
@click.option("--warn", "warn_spec", metavar="SPEC", help=WARN_HELP)
@click.option(
    "--cgroup",
    "cgroups",
    multiple=True,
    metavar="UNIT|PATH",
    help="Warn on this cgroup's memory events (v2 memory.events high/max/oom/oom_kill; v1 failcnt "
    "and oom_kill): a systemd unit such as llama.service, or a cgroup path. Repeatable.",
)
@click.option(
    "--exec",
    "exec_command",
    metavar="CMD",
    help="Run CMD (through /bin/sh) for every warning and kill, with the event as JSON on stdin, "
    "OOMTRACE_EVENT=warning|kill and OOMTRACE_KIND. Never blocks the watcher.",
)
@click.option(
    "--exec-timeout",
    type=click.FloatRange(0.1, 3600),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="Kill a --exec command that runs longer.",
)
@click.option(
    "--record",
    "record_file",
    metavar="FILE",
    help="Append every warning, kill and (while a warning is active) each second's sample to FILE "
    "as JSON lines, fsync'd: a black box that survives a machine that wedges. `why` and `list` "
    "read it with --record FILE. A symlink is followed (not one of another user's in a sticky "
    "world-writable folder such as /tmp); a device is refused.",
)
@click.option(
    "--prom-textfile",
    "prom_textfile",
    metavar="PATH",
    help="Keep Prometheus metrics here for node_exporter's textfile collector (kills told and "
    "warnings said since the watcher started), rewritten at each. " + outputs.HELP,
)
@click.option(
    "--format",
    "-f",
    "output_format",
    type=click.Choice(["text", "jsonl"]),
    default="text",
    show_default=True,
    help="text: one line per warning, the story of each kill. jsonl: one JSON object per event "
    '({"schema": "oomtrace/1", "event": "warning"|"clear"|"kill"|"gap"|"started", ...}).',
)
@click.option(
    "--tz", "zone_name", metavar="ZONE", help="Zone for the times printed. Default: this machine's."
)
@click.option(
    "--duration",
    type=click.FloatRange(0, None),
    metavar="SECONDS",
    help="Stop after this many seconds (for scripts and tests); default: run until interrupted.",
)
def watch_command(**options: Any) -> None:
    """Follow the kernel log live: warn before an OOM kill, tell its story the second it happens."""
    from oomtrace.cli import _Unpadded

    written = {name: options[key] for name, key in _WRITTEN.items()}
    journal_files = options["journal_files"]
    # /dev/kmsg is the only file --source kmsg reads; any other source may read a journal.
    folders = journal_folders(options["journal_dir"], journal_files) if options["source"] != "kmsg" else {}
    outputs.refuse_overlaps(written, {"--journal-file": journal_files}, folders)
    zone: tzinfo = named_zone(options["zone_name"]) if options["zone_name"] else local_zone()
    thresholds = parse_warn(options["warn_spec"])
    cgroups = []
    for name in options["cgroups"]:
        path = find_cgroup(name)
        if path is None:
            raise UsageError(f"--cgroup {inert(name)!r}: no such cgroup with memory accounting")
        cgroups.append(path)
    if options["cursor_file"]:
        check_cursor_file(options["cursor_file"])
    follower = _follower(options, zone)
    watch_options = WatchOptions(
        thresholds,
        zone,
        output=options["output_format"],
        cursor_file=options["cursor_file"],
        record_file=options["record_file"],
        exec_command=options["exec_command"],
        exec_timeout_s=options["exec_timeout"],
        cgroups=cgroups,
        prom_textfile=options["prom_textfile"],
    )
    # Piped or saved, the stories carry no padding (as `why` prints them); a terminal gets rich's.
    out = sys.stdout if sys.stdout.isatty() else _Unpadded(sys.stdout)
    console = Console(file=out, highlight=False)  # type: ignore[arg-type]
    # Never wrapped: under systemd each stderr line is one journal record.
    errors = Console(file=sys.stderr, highlight=False, soft_wrap=True)
    watch(
        follower,
        watch_options,
        console,
        out,  # type: ignore[arg-type]
        lambda line: errors.print(f"oomtrace: {inert(line)}", style="dim", markup=False),
        options["duration"],
    )


# The files the watcher writes, by option: none may be another, nor a journal file it reads.
_WRITTEN = {"--record": "record_file", "--prom-textfile": "prom_textfile", "--cursor-file": "cursor_file"}


def _follower(options: dict[str, Any], zone: tzinfo) -> Follower:
    source = options["source"]
    named = options["journal_dir"] or options["journal_files"]
    if source == "kmsg" and named:
        raise UsageError("--source kmsg follows /dev/kmsg: -D and --journal-file name a journal")
    if source == "auto":
        source = "journal" if named or system_journal_present() else "kmsg"
    elif source == "journal" and not named and not system_journal_present():
        # Following a journal nobody writes would wait for ever, saying nothing.
        raise InputError(
            "this machine has no system journal to follow",
            hint="use --source kmsg, or name one with -D DIR or --journal-file FILE",
        )
    cursor_file = options["cursor_file"]
    if source == "kmsg":
        return KmsgFollower(zone, saved_cursor(cursor_file, "kmsg"))
    query = JournalQuery(options["journal_dir"], options["journal_files"], options["host"], None, None, None)
    cursor = saved_cursor(cursor_file, "journal")
    reader = options["journal_reader"]
    if reader == "auto":
        try:
            import systemd.journal  # noqa: F401
        except ImportError:
            reader = "journalctl"
        else:
            reader = "python"
    if reader == "python":
        return JournalReaderFollower(query, zone, cursor)
    return JournalctlFollower(query, zone, cursor)
