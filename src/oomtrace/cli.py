"""The `oomtrace` command: builds sources and a format, maps errors to exit codes."""

from __future__ import annotations

import errno
import importlib
import io
import sys
from collections.abc import Callable, Iterator
from typing import Any

import click

from oomtrace import __version__, outputs
from oomtrace.errors import ExitCode, NotFoundError, OomtraceError, OutputError
from oomtrace.formats import FORMATS
from oomtrace.render import Unpadded, quiet_broken_pipe, render
from oomtrace.sanitize import inert
from oomtrace.timerange import HELP as TIME_HELP
from oomtrace.usecases.check import check_kills
from oomtrace.usecases.export import export_metrics
from oomtrace.usecases.listing import list_boots, list_kills
from oomtrace.usecases.report import report_incidents
from oomtrace.usecases.settings import Settings, settle
from oomtrace.usecases.why import why

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
            quiet_broken_pipe()
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


def _settings(read_piped: bool = True, **options: Any) -> Settings:
    """The options checked and resolved (settings.settle), and the outputs checked against them."""
    settings = settle(read_piped=read_piped, **options)
    # Before anything is read: `list -k x.log -o x.log` would replace the log with its report.
    outputs.refuse_overlaps({"-o": settings.output}, _read_paths(settings), _journal_folders(settings))
    return settings


def _read_paths(settings: Settings) -> dict[str, tuple[str, ...]]:
    """The files this run reads, by the option that named them."""
    return {
        "-k": settings.kernel_logs,
        "--journal-file": settings.journal.files if settings.journal else (),
        "--record": settings.records,
    }


def _journal_folders(settings: Settings) -> dict[str, Iterator[str]]:
    """The journal files this run may open inside a folder: a -D folder's, or the system journal's."""
    if settings.journal is None:
        return {}
    from oomtrace.sources.journal import journal_folders

    return journal_folders(settings.journal.directory, settings.journal.files)


def _say(text: str) -> None:
    """A use case's note to the person: one line on stderr, never in the report."""
    click.echo(text, err=True)


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
    settings = _settings(**options)
    if boots:
        found = list_boots(settings)
        render(settings, lambda fmt: fmt.boots(found))
        return
    result = list_kills(settings, every, by_host, _say)
    if result.hosts is not None:
        hosts = result.hosts
        render(settings, lambda fmt: fmt.hosts(hosts))
        return
    analysis, view = result.analysis, result.view
    assert view is not None
    render(settings, lambda fmt: fmt.list_episodes(analysis, view))


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
    result = why(settings, name, every, server_logs, server_log_end, _say)
    analysis, verdict, view = result.analysis, result.verdict, result.view
    if view is None:
        render(settings, lambda fmt: fmt.not_found(analysis, name, verdict))
        raise NotFoundError(result.not_found)
    render(settings, lambda fmt: fmt.why(analysis, view))


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
    result = report_incidents(settings, _say)
    analysis, view = result.analysis, result.view
    render(settings, lambda fmt: fmt.report(analysis, view))


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
    settings = _settings(read_piped=False, **options)
    outputs.refuse_overlaps(
        {"--prom-textfile": prom_textfile}, _read_paths(settings), _journal_folders(settings)
    )
    export_metrics(settings, _say).write(prom_textfile)


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
        with check.locked(cursor_file):
            check.check_writable(cursor_file)
            found = check_kills(settings, cursor_file, _say)
            # The line first: a cursor saved past kills whose line was never written (stdout
            # closed, a full disk) would never say them.
            unsaid = _write_line(inert(check.summary(found.kills, found.redactor)))
            if unsaid is None:
                found.save()
    except (OomtraceError, ValueError, OSError) as error:
        # NPD reads stdout: the reason goes there, cut to its line.
        click.echo(inert(f"unknown: {error}")[: check.MAX_LINE])
        raise SystemExit(check.UNKNOWN) from None
    if unsaid is not None:
        raise unsaid  # standard output itself failed: one line on stderr, the cursor unmoved
    raise SystemExit(check.NEW_KILL if found.kills else check.OK)


def _write_line(line: str) -> OutputError | None:
    """`check`'s line on standard output, flushed; the failure to write it, if it failed."""
    try:
        click.echo(line)
        sys.stdout.flush()
    except OutputError as error:
        return error
    return None


# The watcher draws its stories unpadded as `why` does, and imports this from here (watch/command.py).
_Unpadded = Unpadded

# The shell's convention for a process ended by SIGINT: 128 + its number.
EXIT_SIGINT = 128 + 2


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
        quiet_broken_pipe()
    except OSError as error:
        if error.errno != errno.EPIPE:
            raise
        quiet_broken_pipe()
    raise SystemExit(code if isinstance(code, int) else 0)
