"""Coverage-guided fuzzing (atheris) of reading a saved log: decompression, encodings, line
ends, line bounds, binary refusal; the line path and the chunk path must agree on each input.

Run: python fuzz/fuzz_inputs.py -max_total_time=300 SEEDS/  (tests/test_fuzz.py writes seeds:
damaged .gz and .zst, UTF-16, CR-only, runs of empty lines, an OTLP export line).
"""

from __future__ import annotations

import os
import sys
import tempfile

import atheris

with atheris.instrument_imports():
    from dateutil import tz

    from oomtrace.errors import InputError
    from oomtrace.sources import bigfile, chunks, compressed, sniff, textfile  # noqa: F401

_DIR = tempfile.mkdtemp(prefix="oomtrace-fuzz-")
_PATH = os.path.join(_DIR, "input.log")


def _read(fast: bool) -> tuple[str, int | None, int]:
    """(the refusal, or "", the lines read, the records) on one path."""
    os.environ["OOMTRACE_FAST_MIN_BYTES"] = "0" if fast else str(1 << 60)
    source = textfile.KernelLogFile(_PATH, zone=tz.UTC, year=2026)
    # The same name in every run, not the random temporary folder's: what is said of the file
    # must not steer the coverage, or the same seed would not try the same inputs twice.
    source.name = "input.log"
    try:
        records = sum(1 for _ in source.records())
    except InputError as error:
        return str(error), None, 0
    return "", source.lines_read, records


def one_input(data: bytes) -> None:
    with open(_PATH, "wb") as out:
        out.write(data)
    line, chunk = _read(False), _read(True)
    # The same refusal, or the same count of lines, on both paths.
    assert line[:2] == chunk[:2], (line, chunk)


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
