"""Coverage-guided fuzzing (atheris) of the option values a user types: every value is an answer
or a one-line error, never an internal error (issue 26: `--since 0001-01-01` was an OverflowError).

An input is up to six lines: --since, --until, --boot-time, --tz, --year and
OOMTRACE_FAST_MIN_BYTES (an empty line leaves that one out). Seeds: fuzz/seeds/options/.
Run: python fuzz/fuzz_options.py -max_total_time=300 fuzz/seeds/options/
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

with atheris.instrument_imports():
    from click.testing import CliRunner

    from oomtrace.cli import cli

LOG = str(Path(__file__).resolve().parents[1] / "fixtures" / "seed000_llama_server_gb10" / "kernel.log")
OPTIONS = ("--since", "--until", "--boot-time", "--tz", "--year")


def one_input(data: bytes) -> None:
    fields = data.decode("utf-8", "replace").split("\n")[: len(OPTIONS) + 1]
    fields += [""] * (len(OPTIONS) + 1 - len(fields))
    args = ["list", "-k", LOG]
    for option, value in zip(OPTIONS, fields, strict=False):
        if value and "\x00" not in value:
            args += [option, value]
    fast = fields[-1] if fields[-1] and "\x00" not in fields[-1] else None
    result = CliRunner().invoke(cli, args, env={"OOMTRACE_FAST_MIN_BYTES": fast, "COLUMNS": "80"})
    if "internal error" in result.stderr or result.exit_code not in (0, 2):
        raise AssertionError(f"{args} {fast!r}: exit {result.exit_code}: {result.stderr}")


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
