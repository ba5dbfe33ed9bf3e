"""The `oomtrace` command: builds sources and a format, maps errors to exit codes."""

from __future__ import annotations

import errno
import importlib
import io
import os
import select
import stat
import sys
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, tzinfo
from typing import IO, TYPE_CHECKING, Any

import click
from rich.console import Console

from oomtrace import __version__, jsonshapes, outputs
from oomtrace.analyze import analyze
from oomtrace.errors import EmptyInputError, ExitCode, NotFoundError, OomtraceError, UsageError
from oomtrace.formats import FORMATS, format_class
from oomtrace.formats.base import Format
from oomtrace.frozen import Frozen, replace
from oomtrace.jsonshapes import Shape
from oomtrace.keep import Lazily
from oomtrace.model import Analysis
from oomtrace.redact import Redactor
from oomtrace.sanitize import inert
from oomtrace.select import between
from oomtrace.sources.base import Source
from oomtrace.sources.serverlog import read_server_log, summarize
from oomtrace.sources.textfile import KernelLogFile
from oomtrace.sources.watchrecord import WatchRecordFile
from oomtrace.story import find_deaths, report, summarised_kill, tell, with_server_warnings
from oomtrace.storyview import report_view, why_view
from oomtrace.timerange import HELP as TIME_HELP
from oomtrace.timerange import parse_when
from oomtrace.units import clock
from oomtrace.verdict import Verdict, judge
from oomtrace.zones import local_zone, named_zone

if TYPE_CHECKING:
    from oomtrace.sources.journal import JournalQuery

EXAMPLE_FIXTURE = "fixtures/seed000_llama_server_gb10/kernel.log"


# Commands that live in their own package, imported only when run (or listed by --help): the
# watcher's modules would add a tenth to every other command's start-up.
LAZY_COMMANDS = {"watch": ("oomtrace.watch.command", "watch_command")}


class _Group(click.Group):
    """Turns every error into one line on stderr and a documented exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *LAZY_COMMANDS])

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Each command's first sentence whole, wrapped: click cuts it at the width with "..."."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=1_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in LAZY_COMMANDS and cmd_name not in self.commands:
            module, name = LAZY_COMMANDS[cmd_name]
            self.add_command(getattr(importlib.import_module(module), name))
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OomtraceError as error:
            if ctx.obj and ctx.obj.get("debug"):
                import traceback  # only for --debug

                traceback.print_exc()
            click.echo(f"oomtrace: error: {inert(str(error))}", err=True)
            ctx.exit(int(error.exit_code))
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except BrokenPipeError:
            # `oomtrace list | head`: the reader left; nothing more to say.
            _quiet_broken_pipe()
        except Exception as error:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(
                f"oomtrace: error: internal error: {inert(repr(error))} (rerun with --debug and "
                "report it with the input that caused it)",
                err=True,
            )
            ctx.exit(int(ExitCode.USAGE))


@click.group(
    cls=_Group,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=f"""Examples:

\b
  oomtrace why llama-server                 # this machine's journal (dmesg without one)
  oomtrace why llama.service -D /mnt/var/log/journal -b -1   # a copied journal, the crashed boot
  oomtrace why llama-server -k {EXAMPLE_FIXTURE}
  journalctl -k -b -1 | oomtrace list -k -   # the boot that crashed
  oomtrace list -k /var/log/kern.log --format json | jq '.episodes[].victim'
  oomtrace watch --record /var/lib/oomtrace/record.jsonl   # warn before the next kill, tell it as it comes
  oomtrace list --by-host -D /var/log/journal/remote        # a fleet's journal-remote store

Exit codes: 0 done, 1 `why` found nothing that explains the death, 2 usage error, unreadable
input or an output that cannot be written, 3 standard input was empty, 130 interrupted, 141 the
reader of the output left.""",
)
@click.option("--debug", is_flag=True, help="Show the traceback of an error.")
@click.version_option(__version__, "--version", "-V", prog_name="oomtrace")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Find the kernel's OOM kills in its logs and tell why a process died."""
    ctx.obj = {"debug": debug}


class _Settings(Frozen):
    kernel_logs: tuple[str, ...]
    zone: tzinfo
    boot_time: datetime | None
    year: int | None
    format: str
    output: str | None
    since: datetime | None
    until: datetime | None
    redact: bool
    journal: JournalQuery | None
    """The journal to read, when one was named or the machine has one and no -k was given."""
    journal_reader: str
    records: tuple[str, ...] = ()
    """`watch --record` files, read after the logs."""
    json_shape: Shape | None = None
    """`--jsonl-fields` / `--host-label`: how to read JSON lines; None: by their content."""
    stdin_implied: bool = False
    """Standard input is read because it was piped in, not because `-k -` said so."""


def _set_debug(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        ctx.ensure_object(dict)["debug"] = True


def _source_options(command: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        # Both also after the command (`oomtrace why x --debug`), where people type them.
        click.option(
            "--debug",
            is_flag=True,
            expose_value=False,
            is_eager=True,
            callback=_set_debug,
            help="Show the traceback of an error.",
        ),
        click.version_option(__version__, "--version", "-V", prog_name="oomtrace"),
        click.option(
            "--kernel-log",
            "-k",
            "kernel_logs",
            multiple=True,
            metavar="FILE",
            help="A saved kernel log (dmesg, journalctl text or -o json, kern.log; .gz/.xz/.bz2); "
            "repeatable; - reads standard input. Default: the system journal, or `dmesg` where "
            "there is none.",
        ),
        click.option(
            "--journal-dir",
            "-D",
            metavar="DIR",
            help="A journal folder copied off the machine that crashed (journalctl -D), or a "
            "systemd-journal-remote store with several hosts.",
        ),
        click.option(
            "--journal-file",
            "journal_files",
            multiple=True,
            metavar="FILE",
            help="A journal file (journalctl --file); repeatable.",
        ),
        click.option("--host", metavar="NAME", help="Only this host's journal entries (_HOSTNAME)."),
        click.option(
            "--jsonl-fields",
            "jsonl_fields",
            metavar="SPEC",
            help="How to read a JSON-lines export whose shape is not recognised (Loki, "
            "Elasticsearch/OpenSearch hits, ECS, Vector, Fluent Bit, OpenTelemetry and journalctl "
            "-o json are): message=PATH,time=PATH,host=PATH with dotted paths, or a shape's name.",
        ),
        click.option(
            "--host-label",
            "host_label",
            metavar="NAME",
            help="The Loki label that names the machine (default: host, hostname, instance, node).",
        ),
        click.option(
            "--record",
            "records",
            multiple=True,
            metavar="FILE",
            help="A `watch --record` file, read beside the log: the watcher's own warnings (PSI, "
            "MemAvailable) join the story, and a kill the journal lost is read from it. Repeatable.",
        ),
        click.option(
            "--boot",
            "-b",
            metavar="BOOT",
            help="Only this boot: 0 the current one, -1 the one before (where a crash's OOM is), or a "
            "boot id. `list --boots` lists them.",
        ),
        click.option(
            "--journal-reader",
            type=click.Choice(["auto", "python", "journalctl"]),
            default="auto",
            show_default=True,
            envvar="OOMTRACE_JOURNAL_READER",
            help="How to read the journal: systemd-python (the journal extra) or journalctl -o json "
            "(also OOMTRACE_JOURNAL_READER).",
        ),
        click.option(
            "--tz",
            "zone_name",
            metavar="ZONE",
            help="Zone for stamps printed without one (syslog, dmesg -T), e.g. UTC or "
            "Europe/Berlin. Default: this machine's.",
        ),
        click.option(
            "--boot-time",
            metavar="TIME",
            help="When the machine booted (e.g. '2026-11-14 08:00:03'): turns [seconds] stamps "
            "into wall-clock times.",
        ),
        click.option(
            "--year",
            type=int,
            help="Year for syslog stamps, which print none. Default: the file's modification year.",
        ),
        click.option(
            "--format",
            "-f",
            "output_format",
            type=click.Choice(sorted(FORMATS)),
            default="text",
            show_default=True,
            help="Report format.",
        ),
        click.option(
            "--output",
            "-o",
            metavar="FILE",
            help="Write the report here instead of stdout. " + outputs.HELP + " An input is refused.",
        ),
        click.option("--since", metavar="TIME", help="Only kills at or after TIME. " + TIME_HELP),
        click.option("--until", metavar="TIME", help="Only kills at or before TIME."),
        click.option(
            "--redact",
            is_flag=True,
            help="Replace host names, user names in paths, IP and MAC addresses, e-mail addresses and "
            "long hex ids with stable placeholders (host-1, user-1, ...), for public issues.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _settings(
    kernel_logs: tuple[str, ...],
    journal_dir: str | None,
    journal_files: tuple[str, ...],
    host: str | None,
    jsonl_fields: str | None,
    host_label: str | None,
    records: tuple[str, ...],
    boot: str | None,
    journal_reader: str,
    zone_name: str | None,
    boot_time: str | None,
    year: int | None,
    output_format: str,
    output: str | None,
    since: str | None,
    until: str | None,
    redact: bool,
    read_piped: bool = True,
) -> _Settings:
    """The options checked and resolved. read_piped: whether piped standard input is the log to
    read without `-k -` (`list`, `why`, `report`, as grep reads it); `check` and `export` run
    unattended, where a pipe on standard input is whatever cron or ssh left open, not a log."""
    zone: tzinfo | None = local_zone()
    if zone_name:
        zone = named_zone(zone_name)
    if year is not None and not 1970 <= year <= 9999:
        raise UsageError(
            f"--year {year if year < 10**12 else 'that long'} is not a year a log can hold",
            hint="use a year from 1970 to 9999",
        )
    assert zone is not None
    booted = None
    if boot_time:
        from dateutil.parser import ParserError
        from dateutil.parser import parse as parse_date

        try:
            booted = parse_date(boot_time)
        except (ParserError, ValueError, ArithmeticError):  # dateutil: OverflowError, decimal errors
            raise UsageError(
                f"cannot read --boot-time {boot_time!r}", hint="use a form like '2026-11-14 08:00:03'"
            ) from None
        if booted.tzinfo is None:
            booted = booted.replace(tzinfo=zone)
    since_time = parse_when(since, zone) if since else None
    until_time = parse_when(until, zone) if until else None
    if since_time and until_time and since_time > until_time:
        raise UsageError(f"--since {since!r} is after --until {until!r}")
    implied = read_piped and not kernel_logs and not journal_dir and not journal_files and _stdin_is_data()
    if implied:
        # `cat kern.log | oomtrace why x`: what is piped in is the log to read.
        kernel_logs = ("-",)
    journal = None
    # The journal's module only where a journal may be read: `-k FILE` runs start faster.
    if journal_dir or journal_files or (not kernel_logs and _system_journal_present()):
        from oomtrace.sources.journal import JournalQuery

        journal = JournalQuery(journal_dir, journal_files, host, boot, since_time, until_time)
    elif boot is not None:
        raise UsageError(
            "--boot needs a journal",
            hint="pass --journal-dir or --journal-file, or run where the system journal is",
        )
    settings = _Settings(
        kernel_logs,
        zone,
        booted,
        year,
        output_format,
        output,
        since_time,
        until_time,
        redact,
        journal,
        journal_reader,
        records,
        _json_shape(jsonl_fields, host_label),
        implied,
    )
    # Before anything is read: `list -k x.log -o x.log` would replace the log with its report.
    outputs.refuse_overlaps({"-o": output}, _read_paths(settings), _journal_folders(settings))
    return settings


def _read_paths(settings: _Settings) -> dict[str, tuple[str, ...]]:
    """The files this run reads, by the option that named them."""
    return {
        "-k": settings.kernel_logs,
        "--journal-file": settings.journal.files if settings.journal else (),
        "--record": settings.records,
    }


def _journal_folders(settings: _Settings) -> dict[str, Iterator[str]]:
    """The journal files this run may open inside a folder: a -D folder's, or the system journal's."""
    if settings.journal is None:
        return {}
    from oomtrace.sources.journal import journal_folders

    return journal_folders(settings.journal.directory, settings.journal.files)


def _json_shape(spec: str | None, host_label: str | None) -> Shape | None:
    shape = jsonshapes.custom(spec) if spec else None
    if host_label:
        if shape is None:
            return jsonshapes.with_host_label(host_label)
        return replace(shape, host=(f"labels.{host_label}",))
    return shape


def _system_journal_present() -> bool:
    from oomtrace.sources.journal import system_journal_present

    return system_journal_present()


def _stdin_is_data() -> bool:
    """Is standard input a pipe or a file (not a terminal, not absent, not /dev/null)?"""
    try:
        info = os.fstat(sys.stdin.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return False
    return stat.S_ISFIFO(info.st_mode) or (stat.S_ISREG(info.st_mode) and info.st_size > 0)


# How long a pipe on standard input may stay silent before oomtrace says it is waiting on it.
STDIN_QUIET_S = 2.0


def _say_if_stdin_is_silent(settings: _Settings) -> None:
    """`ssh host oomtrace why x`, a cron job: a pipe left open on standard input, nothing in it.
    oomtrace waits for it as grep would, but says so once on stderr with the way out, rather than
    hang without a word."""
    if not settings.stdin_implied:
        return
    try:
        ready, _, _ = select.select([sys.stdin.fileno()], [], [], STDIN_QUIET_S)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return
    if not ready:
        click.echo(
            "oomtrace: waiting for a kernel log on standard input (it is a pipe); to read this "
            "machine's journal instead, run it with < /dev/null",
            err=True,
        )


def _refuse_empty_stdin(settings: _Settings, analysis: Analysis) -> None:
    """Piped input that held nothing is no evidence of "no kills": `true | oomtrace list` must not
    say 0 episodes of a machine whose journal holds seven."""
    if "-" not in settings.kernel_logs:
        return
    if any(source.name == "<stdin>" and not source.records for source in analysis.sources):
        if settings.stdin_implied:
            raise EmptyInputError(
                "standard input was empty: no kernel log was read",
                hint="it was piped in, so it was read instead of the journal; to read this "
                "machine's journal, run without the pipe or with < /dev/null",
            )
        raise EmptyInputError(
            "standard input (-k -) was empty: no kernel log was read",
            hint="the command before the pipe wrote nothing: did it fail?",
        )


def _sources(settings: _Settings) -> list[Source]:
    """-k files and a journal as asked; with neither, the system journal, else dmesg."""
    sources: list[Source] = [
        KernelLogFile(path, settings.zone, settings.year, settings.boot_time, settings.json_shape)
        for path in settings.kernel_logs
    ]
    if settings.journal is not None:
        from oomtrace.sources.journal import journal_source

        sources.append(journal_source(settings.journal, settings.zone, settings.journal_reader))
    if not sources:
        from oomtrace.sources.dmesg import RingBuffer

        sources.append(RingBuffer(settings.zone))
    return sources + [WatchRecordFile(path, settings.zone) for path in settings.records]


def _render(settings: _Settings, draw: Callable[[Format], None]) -> None:
    if not settings.output:
        _draw(sys.stdout, settings, draw)
        return
    outputs.write_text(settings.output, lambda stream: _draw(stream, settings, draw), "-o")


def _draw(stream: IO[str], settings: _Settings, draw: Callable[[Format], None]) -> None:
    # COLUMNS=0 would print nothing and COLUMNS=99999999 hundreds of megabytes of padding.
    found = _Console(file=stream)
    width = min(max(found.width, MIN_WIDTH), MAX_WIDTH)
    # JSON is written as json.dumps makes it, never padded: only rich's drawings need unpadding.
    plain = stream.isatty() or settings.format == "json"
    target: IO[str] = stream if plain else _Unpadded(stream)  # type: ignore[assignment]
    # The height as rich finds it, found once: a console without one asks the terminal and the
    # environment again on every print (a tenth of the printing of `why --all` on 5,000 kills).
    console = _Console(file=target, highlight=False, width=width, height=found.height)
    draw(format_class(settings.format)(console))
    target.flush()


class _Unpadded:
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


@cli.command(
    "list",
    epilog=f"""Examples:

\b
  oomtrace list
  oomtrace list -k {EXAMPLE_FIXTURE} --tz UTC
  oomtrace list -k /var/log/kern.log -k /var/log/kern.log.1 --format json
  oomtrace list --by-host -D /var/log/journal/remote""",
)
@click.option(
    "--boots", is_flag=True, help="List the journal's boots instead (index, id, first and last entry)."
)
@click.option(
    "--all",
    "every",
    is_flag=True,
    help="A row for each kill: by default repeated kills of one victim (a crash loop) are one row "
    "with their count.",
)
@click.option(
    "--by-host",
    "by_host",
    is_flag=True,
    help="One row per host (a journal-remote store, a fleet's export): kills, incidents, the last "
    "kill and the victim killed most.",
)
@_source_options
def list_command(boots: bool, every: bool, by_host: bool, **options: Any) -> None:
    """Every OOM kill in the input, one line each (a crash loop's repeats one line)."""
    from oomtrace.listview import hosts_view, list_view  # only `list` shows its view

    settings = _settings(**options)
    if boots:
        _list_boots(settings)
        return
    analysis, _ = _analysis(settings)
    redactor = _redactor(settings, analysis)
    analysis = redactor.apply(analysis)
    if by_host:
        hosts = hosts_view(analysis)
        _render(settings, lambda fmt: fmt.hosts(hosts))
        return
    view = list_view(analysis, every)
    _render(settings, lambda fmt: fmt.list_episodes(analysis, view))


@cli.command(
    "why",
    epilog=f"""NAME may be the name as you know it: the kernel keeps 15 characters,
so `why dashboard-service` finds `dashboard-servi`. With --server-log, the server's own log is
read beside the kernel's: how it ended (silent, an out-of-memory error, a crash, a clean
shutdown), when, and what it said it would spend.

Exit codes: 0 a verdict (a kill, the target's part in one, its own error, a crash, a clean exit);
1 nothing explains how it ended; 2 usage error or unreadable input.

Examples:

\b
  oomtrace why llama-server
  oomtrace why llama-server -k {EXAMPLE_FIXTURE} --tz UTC
  oomtrace why llama-server -k kern.log --server-log llama-server.log
  oomtrace why 1966928 -k kern.log --format json""",
)
@click.argument("name")
@click.option("--all", "every", is_flag=True, help="Every death of NAME, not only the latest.")
@click.option(
    "--server-log",
    "server_logs",
    multiple=True,
    metavar="FILE",
    help="The server's own log (repeatable; .gz/.xz/.bz2 too). Lines without a time stamp take "
    "the file's modification time for the last line.",
)
@click.option(
    "--server-log-end",
    "server_log_end",
    metavar="TIME",
    help="When the server log ended, if you know it better than the log does: a log without "
    "time stamps otherwise ends at its file's modification time, which a copy changes.",
)
@_source_options
def why_command(
    name: str, every: bool, server_logs: tuple[str, ...], server_log_end: str | None, **options: Any
) -> None:
    """Why NAME (a process name or pid) died: when, who killed it, why it, what warned first."""
    settings = _settings(**options)
    outputs.refuse_overlaps({"-o": settings.output}, {"--server-log": server_logs})
    analysis, _ = _analysis(settings)
    logs = [read_server_log(path, settings.zone, settings.year) for path in server_logs]
    if server_log_end is not None:
        if not logs:
            raise UsageError("--server-log-end needs --server-log FILE", hint="name the log it is the end of")
        ended = parse_when(server_log_end, settings.zone)
        logs = [replace(facts, last_time=ended, last_time_from="given") for facts in logs]
    deaths = find_deaths(analysis, name)
    if not deaths:
        analysis, settings = _read_summarised_again(analysis, settings, name)
        deaths = find_deaths(analysis, name)
    if not logs and deaths and deaths[-1].unit and settings.journal is not None:
        # Under systemd the unit's own records are the server's log.
        unit = deaths[-1].unit
        kill = deaths[-1].moment.time
        from oomtrace.sources.journal import unit_log

        lines = unit_log(settings.journal, unit, settings.zone, settings.journal_reader, around=kill)
        facts = summarize(f"journal of {unit}", lines, None)
        if facts.lines:
            logs = [facts]
    verdict = judge(analysis, name, deaths[-1] if deaths else None, logs, len(deaths), every)
    chosen = [e.id for e in (deaths if every else deaths[-1:])]
    redactor = _redactor(settings, analysis, server_logs)
    # Told from the redacted analysis, one at a time as a format reads them: `--all` of 20,000
    # kills holds one story, not all of them.
    verdict, analysis, logs, query = redactor.apply((verdict, analysis, logs, name))
    shown = analysis
    stories = Lazily(
        len(chosen), lambda i: with_server_warnings(tell(shown, shown.episode(chosen[i]), query), logs)
    )
    if verdict.cause == "unknown" and not verdict.involvement:
        _render(settings, lambda fmt: fmt.not_found(analysis, name, verdict))
        raise NotFoundError(redactor.apply(_not_found_message(analysis, name, verdict)))
    view = why_view(analysis, stories, verdict)
    _render(settings, lambda fmt: fmt.why(analysis, view))


@cli.command(
    "report",
    epilog=f"""Examples:

\b
  oomtrace report --since yesterday
  oomtrace report -k {EXAMPLE_FIXTURE} --format markdown --redact > incident.md
  oomtrace report -k /var/log/kern.log --since '2026-11-14 00:00' --until '2026-11-15 00:00' -f json""",
)
@_source_options
def report_command(**options: Any) -> None:
    """Every incident in a time range, each told as `why` tells it, with counts per victim and cause."""
    settings = _settings(**options)
    analysis, untimed = _analysis(settings)
    redactor = _redactor(settings, analysis)
    document = redactor.apply(report(analysis, settings.since, settings.until, untimed))
    analysis = redactor.apply(analysis)
    view = report_view(analysis, document)
    _render(settings, lambda fmt: fmt.report(analysis, view))


@cli.command(
    "export",
    epilog=f"""Writes the file atomically (a temporary file renamed over it), so node_exporter's
textfile collector never reads half of it; a symlink is followed (its target replaced, the link
kept), but not one of another user's in a sticky world-writable folder (/tmp); a device or FIFO
is written directly. Run it from a timer, or let `watch --prom-textfile`
keep it current.

Examples:

\b
  oomtrace export --prom-textfile /var/lib/node_exporter/textfile_collector/oomtrace.prom
  oomtrace export -k {EXAMPLE_FIXTURE} --prom-textfile oomtrace.prom""",
)
@click.option(
    "--prom-textfile",
    "prom_textfile",
    required=True,
    metavar="PATH",
    help="Prometheus text format for node_exporter's textfile collector (a .prom file).",
)
@_source_options
def export_command(prom_textfile: str, **options: Any) -> None:
    """Metrics of the OOM kills and early warnings in the input, for Prometheus."""
    from oomtrace.metrics import from_analysis  # prometheus-client: only this command needs it

    settings = _settings(read_piped=False, **options)
    outputs.refuse_overlaps(
        {"--prom-textfile": prom_textfile}, _read_paths(settings), _journal_folders(settings)
    )
    analysis, _ = _analysis(settings)
    analysis = _redactor(settings, analysis).apply(analysis)
    from_analysis(analysis).write(prom_textfile)


@cli.command(
    "check",
    epilog="""A node-problem-detector custom plugin (contrib/npd-oomtrace.json): exit 0 when there
is no new OOM kill since the last run, 1 when there is (one line under 80 characters on stdout,
naming the victim, its cause, and the pod and container from its cgroup), 2 when it cannot tell
(the line says why). The first run only sets the cursor: the log's old kills are not news.

Examples:

\b
  oomtrace check --cursor-file /var/lib/oomtrace/npd-cursor.json
  oomtrace check --cursor-file /var/lib/oomtrace/npd-cursor.json -D /var/log/journal""",
)
@click.option(
    "--cursor-file",
    "cursor_file",
    required=True,
    metavar="FILE",
    help="Where the kills already said are kept. " + outputs.HELP,
)
@_source_options
def check_command(cursor_file: str, **options: Any) -> None:
    """Exit 1 with one line when there was a new OOM kill since the last run (for NPD)."""
    from oomtrace import check

    try:
        settings = _settings(read_piped=False, **options)
        outputs.refuse_overlaps(
            {"--cursor-file": cursor_file}, _read_paths(settings), _journal_folders(settings)
        )
        saved = check.read(cursor_file)
        # All of the input, not only what is stamped after the last kill said: a kill stamped
        # earlier (a clock set back) or not at all (uptime-only dmesg) is news too.
        analysis, _ = _analysis(settings)
        kills = check.new_kills(analysis, saved)
        check.save(cursor_file, analysis, saved)
        redactor = _redactor(settings, analysis)
    except (OomtraceError, ValueError, OSError) as error:
        # NPD reads stdout: the reason goes there, cut to its line.
        click.echo(inert(f"unknown: {error}")[: check.MAX_LINE])
        raise SystemExit(check.UNKNOWN) from None
    click.echo(inert(check.summary(kills, redactor)))
    raise SystemExit(check.NEW_KILL if kills else check.OK)


def _ranged(settings: _Settings, since: datetime, until: datetime) -> _Settings:
    journal = replace(settings.journal, since=since, until=until) if settings.journal else None
    return replace(settings, since=since, until=until, journal=journal)


def _read_summarised_again(analysis: Analysis, settings: _Settings, name: str) -> tuple[Analysis, _Settings]:
    """A kill of NAME counted but not kept (the middle of a crash loop of thousands) is found
    again by a second read of the seconds around it; without a wall time to select it by, the
    "not found" message says where it is (_not_found_message)."""
    found = summarised_kill(analysis, name)
    if found is None or found.time is None:
        return analysis, settings
    around = _ranged(settings, found.time - timedelta(seconds=1), found.time + timedelta(seconds=1))
    click.echo(
        f"oomtrace: the kill of {inert(name)!r} was summarised in a read of the whole log (it is one of "
        f"its middle kills); read again {_range_options(found.time)}",
        err=True,
    )
    again, _ = _analysis(around)
    return again, around


def _range_options(time: datetime) -> str:
    """`--since '...' --until '...'`: the two seconds around a kill."""
    start, end = ((time + timedelta(seconds=s)).isoformat(sep=" ", timespec="seconds") for s in (-1, 1))
    return f"--since '{start}' --until '{end}'"


def _list_boots(settings: _Settings) -> None:
    if settings.journal is None:
        raise UsageError(
            "--boots needs a journal",
            hint="pass --journal-dir or --journal-file, or run where the system journal is",
        )
    from oomtrace.sources.journal import list_boots

    found = list_boots(replace(settings.journal, boot=None))
    _render(settings, lambda fmt: fmt.boots(found))


def _analysis(settings: _Settings) -> tuple[Analysis, int]:
    """Read every source, then keep what lies within --since/--until."""
    sources = _sources(settings)
    _say_if_stdin_is_silent(settings)
    if not _show_progress(settings):
        analysis = analyze(sources, None, settings.since, settings.until)
        _refuse_empty_stdin(settings, analysis)
        return between(analysis, settings.since, settings.until)
    from rich.progress import (  # only for a person at a terminal
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        MofNCompleteColumn(),  # "done/total", "done/?" when the size is unknown (a pipe)
        TextColumn("{task.fields[unit]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        analysis = analyze(sources, progress, settings.since, settings.until)
    _refuse_empty_stdin(settings, analysis)
    return between(analysis, settings.since, settings.until)


def _show_progress(settings: _Settings) -> bool:
    """A progress bar only for a person at a terminal: never in JSON or piped output."""
    return (
        settings.format != "json" and settings.output is None and sys.stderr.isatty() and sys.stdout.isatty()
    )


def _redactor(settings: _Settings, analysis: Analysis, server_logs: tuple[str, ...] = ()) -> Redactor:
    if not settings.redact:
        return Redactor.disabled()
    # The input files' names may hold a host's name too (`spark-01-kern.log`).
    paths = [*settings.kernel_logs, *settings.records, *server_logs, *(s.name for s in analysis.sources)]
    return Redactor(analysis.hosts, paths=paths)


def _not_found_message(analysis: Analysis, name: str, verdict: Verdict) -> str:
    summarised = summarised_kill(analysis, name)
    if summarised is not None:
        # Only one without a wall time gets here: one with a time was read again (why_command).
        where = f"line {summarised.line} of {summarised.source}"
        uptime = f", uptime {summarised.uptime_s:.0f}s" if summarised.uptime_s is not None else ""
        return (
            f"the kill of {name!r} is in the log ({where}{uptime}) but was summarised with the middle "
            f"kills of a long log, to bound memory; its line has no wall-clock time to select it by: "
            "give --boot-time, then --since/--until around it"
        )
    if verdict.server_log is not None:
        return verdict.headline
    names = analysis.source_names
    first, last = analysis.span()
    span = f" ({clock(first)} to {clock(last)})" if first and last else ""
    victims = [f"{e.victim.comm} (pid {e.victim.pid})" for e in analysis.episodes if e.victim]
    if victims:
        shown = ", ".join(dict.fromkeys(victims[-10:]))
        others = f"; OOM victims in it: {shown}"
    else:
        others = "; it holds no OOM kills at all"
    ranged = analysis.range_note()
    if ranged:
        # The kills the input holds may all be outside the range: say the range, not "none at all".
        others = (others if victims else "") + f"; {ranged}"
    return f"no OOM kill of {name!r} in {names}{span}{others}"


# The widths a report is laid out in, whatever the terminal or COLUMNS says.
MIN_WIDTH, MAX_WIDTH = 40, 300
# The shell's conventions for a process ended by a signal: 128 + its number.
EXIT_SIGPIPE = 128 + 13
EXIT_SIGINT = 128 + 2


class _Console(Console):
    """rich exits 1 when the reader of its output leaves; 1 means "nothing found" here."""

    def on_broken_pipe(self) -> None:
        _quiet_broken_pipe()


def _quiet_broken_pipe() -> None:
    """The reader of our output left (`| head -1`): exit as a shell would, with nothing on
    stderr and no flush of what can no longer be written."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise SystemExit(EXIT_SIGPIPE)


def main() -> None:
    # Not click's standalone mode: it turns a closed pipe and Ctrl-C into exit code 1, which
    # `why` uses for "nothing explains the death".
    for stream in (sys.stdout, sys.stderr):
        # PYTHONIOENCODING=ascii, LANG=C: a name the terminal cannot show is written as \x escapes.
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    outputs.guard_standard_streams()
    try:
        code = cli.main(prog_name="oomtrace", standalone_mode=False)
        sys.stdout.flush()
    except OomtraceError as error:
        # The last of the report, flushed after the command: standard output full or closed.
        click.echo(f"oomtrace: error: {inert(str(error))}", err=True)
        code = int(error.exit_code)
    except click.ClickException as error:
        error.show()
        code = error.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        code = EXIT_SIGINT  # Ctrl-C: quietly, with the shell's code for SIGINT
    except BrokenPipeError:
        _quiet_broken_pipe()
    except OSError as error:
        if error.errno != errno.EPIPE:
            raise
        _quiet_broken_pipe()
    raise SystemExit(code if isinstance(code, int) else 0)
