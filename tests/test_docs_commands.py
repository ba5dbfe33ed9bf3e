"""Every `oomtrace` command shown in README.md and docs/*.md runs as shown, on the shipped fixtures.

Each line of a fenced `sh` block is read as a shell line; each part of it that runs oomtrace
(`oomtrace ...`, `.venv/bin/oomtrace ...`, after `sudo`, after `&&` or a pipe) is one command.
A command that can run here is run in-process on a shipped fixture: a file it names that is not
shipped (`kern.log`, `/var/log/kern.log.1.gz`) stands for seed 000's kernel log, what a pipe
feeds it is that log, and the files it writes go to a temporary folder. It must exit 0, or the
code its line's comment gives (`# exit 1`), which must be one of errors.ExitCode.

A command that needs the live system (sudo, `watch`, this machine's journal or dmesg, a journal
store or record that is not shipped) is not run: click parses it against the real CLI, so an
option that does not exist or a value it refuses still fails here, and the reason it was not run
is part of the test's id.
"""

from __future__ import annotations

import gzip
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from oomtrace.cli import cli
from oomtrace.errors import ExitCode
from tests.conftest import FIXTURES, ROOT, run

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)
EXIT_NOTE = re.compile(r"#.*\bexit (\d+)")
SEED000 = FIXTURES / "seed000_llama_server_gb10"
# What a placeholder stands for: the shipped reconstruction of a real DGX Spark incident.
PLACEHOLDER_INPUT = {"-k": SEED000 / "kernel.log", "--server-log": SEED000 / "server.log"}
OUTPUT_OPTIONS = ("-o", "--output", "--prom-textfile", "--cursor-file")
JOURNAL_OPTIONS = ("-D", "--journal-dir", "--journal-file")
SEPARATORS = ("|", "&&", "||", ";", "{", "}")


@dataclass(frozen=True)
class Shown:
    """One oomtrace command as a page shows it."""

    page: str
    line: str
    argv: tuple[str, ...]  # after the program name
    sudo: bool
    piped: bool  # a pipe feeds its standard input
    exit_code: int

    def live_reason(self) -> str | None:
        """Why this command cannot run here, or None."""
        options = set(self.argv)
        if self.sudo:
            return "runs as root on this machine"
        if self.argv[0] == "watch":
            return "follows the live kernel log until interrupted"
        if options & set(JOURNAL_OPTIONS):
            return "reads a journal that is not shipped"
        if "--record" in options:
            return "reads a watch --record file that is not shipped"
        if not self.piped and not options & {"-k", "--kernel-log"}:
            return "reads this machine's journal or dmesg"
        return None


def _words(line: str) -> list[str]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    return list(lexer)


def shown_commands() -> list[Shown]:
    shown: list[Shown] = []
    for page in PAGES:
        for block in SH_BLOCK.findall(page.read_text()):
            for line in block.splitlines():
                note = EXIT_NOTE.search(line)
                part: list[str] = []
                after = None
                for word in [*_words(line), ";"]:
                    if word not in SEPARATORS:
                        part.append(word)
                        continue
                    sudo = part[:1] == ["sudo"]
                    program = part[1:] if sudo else part
                    if program and Path(program[0]).name == "oomtrace":
                        argv = program[1:]
                        if ">" in argv:  # the output is captured; the file it names is not written
                            argv = argv[: argv.index(">")]
                        shown.append(
                            Shown(
                                page=str(page.relative_to(ROOT)),
                                line=line,
                                argv=tuple(argv),
                                sudo=sudo,
                                piped=after == "|",
                                exit_code=int(note.group(1)) if note else 0,
                            )
                        )
                    part, after = [], word
    return shown


COMMANDS = shown_commands()


def _id(shown: Shown) -> str:
    reason = shown.live_reason()
    return f"{shown.page}: oomtrace {' '.join(shown.argv)}" + (f" [parsed only: {reason}]" if reason else "")


def _here(shown: Shown, tmp_path: Path) -> list[str]:
    """The command's arguments with placeholders swapped for shipped fixtures and outputs for
    files in tmp_path, and shipped paths made absolute (no dependence on the working folder)."""
    argv, option = [], None
    for word in shown.argv:
        shipped = ROOT / word
        if option in PLACEHOLDER_INPUT and word != "-" and not shipped.exists():
            fixture = PLACEHOLDER_INPUT[option]
            if word.endswith(".gz"):
                packed = tmp_path / (fixture.name + ".gz")
                packed.write_bytes(gzip.compress(fixture.read_bytes()))
                fixture = packed
            word = str(fixture)
        elif option in OUTPUT_OPTIONS:
            word = str(tmp_path / Path(word).name)
        elif shipped.exists() and not word.startswith("-"):
            word = str(shipped)
        argv.append(word)
        option = word if word.startswith("-") else None
    return argv


def test_the_pages_show_commands_that_run_here() -> None:
    """Most commands shown run for real: the parsed-only ones are the exception."""
    ran = [c for c in COMMANDS if c.live_reason() is None]
    assert len(COMMANDS) >= 15, [c.line for c in COMMANDS]
    assert len(ran) >= 10, [c.line for c in ran]
    assert {c.page for c in ran} >= {"README.md", "docs/usage.md", "docs/fleets.md"}
    readme = [c for c in COMMANDS if c.page == "README.md"]
    assert any(c.argv[:2] == ("why", "llama-server") and c.live_reason() is None for c in readme)


@pytest.mark.parametrize("shown", COMMANDS, ids=_id)
def test_every_command_shown_runs(shown: Shown, tmp_path: Path) -> None:
    assert shown.exit_code in {code.value for code in ExitCode}, shown.line
    argv = _here(shown, tmp_path)
    if shown.live_reason() is not None:
        # click's own parse of the whole line: unknown options, refused values and missing
        # arguments raise here, as they would for the user.
        name, *rest = argv
        parent = cli.make_context("oomtrace", [name], resilient_parsing=True)
        command = cli.get_command(parent, name)
        assert command is not None, shown.line
        command.make_context(name, rest, parent=parent).close()
        return
    stdin = PLACEHOLDER_INPUT["-k"].read_text() if shown.piped else None
    result = run(*argv, input=stdin)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code == shown.exit_code, (shown.line, result.output)
    assert "Traceback" not in result.output


def test_the_readmes_output_is_what_oomtrace_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's example is a real run at 80 columns, not an old copy (run from the checkout,
    as the README's reader does: the footer names the file as given)."""
    monkeypatch.chdir(ROOT)
    readme = (ROOT / "README.md").read_text()
    shown = re.search(
        r"^`oomtrace (why [^`]+)` at 80\ncolumns prints:\n\n```\n(.*?)^```", readme, re.S | re.M
    )
    assert shown, "the README's example output"
    result = run(*shlex.split(shown.group(1)))
    assert result.exit_code == 0, result.output
    assert result.stdout == shown.group(2)
