"""Inputs as they come: damaged and zstd-compressed rotations, other encodings and line ends,
random bytes, huge JSON lines, and files of nothing but newlines. Each is read the same way by
the line path and the chunk path (OOMTRACE_FAST_MIN_BYTES=0 sends a small file through it)."""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import json
import lzma
import os
import random
import re
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import zstandard

from oomtrace.sources import compressed
from oomtrace.sources.compressed import Damaged, Decompressed, compression_of
from oomtrace.sources.textfile import KernelLogFile
from tests.conftest import FIXTURES, ROOT, run
from tests.journals import REMOTE, kernel_entries, write_journal

SEED000 = FIXTURES / "seed000_llama_server_gb10" / "kernel.log"
PATHS = ["line", "chunk"]


def listing(log: Path | str, path: str, monkeypatch: pytest.MonkeyPatch, stdin: bytes | None = None) -> Any:
    """The run on one path: its JSON document, or the run itself when it failed."""
    monkeypatch.setenv("OOMTRACE_FAST_MIN_BYTES", "0" if path == "chunk" else str(1 << 60))
    result = run("list", "-k", str(log), "--format", "json", "--tz", "UTC", "--year", "2026", input=stdin)
    return json.loads(result.stdout) if result.exit_code == 0 else result


def same_on_both_paths(log: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    line, chunk = (listing(log, path, monkeypatch) for path in PATHS)
    if isinstance(line, dict):
        assert isinstance(chunk, dict), chunk.output
        for key in ("episodes", "warnings", "incidents", "source"):
            assert line[key] == chunk[key], key
    else:
        assert not isinstance(chunk, dict)
        assert (line.exit_code, line.stderr) == (chunk.exit_code, chunk.stderr)
    return line


def generated(tmp_path: Path, reports: int = 4) -> Path:
    sys.path.insert(0, str(ROOT / "bench"))
    from make_log import write

    plain = tmp_path / "kern.log"
    write(plain, mib=2, reports=reports)
    return plain


def zstd_compress(data: bytes) -> bytes:
    # As the zstd command writes it: with the content checksum.
    return zstandard.ZstdCompressor(write_checksum=True).compress(data)


COMPRESSORS = {
    ".gz": gzip.compress,
    ".xz": lzma.compress,
    ".bz2": bz2.compress,
    ".zst": zstd_compress,
}


def flipped(data: bytes, where: float) -> bytes:
    damaged = bytearray(data)
    damaged[int(len(damaged) * where)] ^= 0x01
    return bytes(damaged)


# ---- damaged compressed logs --------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".gz", ".zst"])
@pytest.mark.parametrize("where", [0.3, 0.5, 0.7])
def test_a_bit_flipped_gzip_or_zstd_is_refused_not_read_as_garbage(
    suffix: str, where: float, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # gzip checks a member only at its end: before, a flipped bit in a .gz of 1,000 kills was
    # read as 1,175 episodes with a phantom crash loop, and the CRC failure was one note.
    plain = generated(tmp_path)
    packed = tmp_path / f"kern.log{suffix}"
    packed.write_bytes(flipped(COMPRESSORS[suffix](plain.read_bytes()), where))
    result = same_on_both_paths(packed, monkeypatch)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"oomtrace: error: cannot trust {packed}: it is damaged (")
    assert "none was read" in result.stderr and result.stderr.count("\n") == 1
    assert result.stdout == ""  # no episode, no footer: nothing of it is told


def test_a_bit_flipped_gzip_on_standard_input_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    damaged = flipped(gzip.compress(SEED000.read_bytes() * 3), 0.5)
    result = listing("-", "line", monkeypatch, stdin=damaged)
    assert result.exit_code == 2 and "cannot trust <stdin>" in result.stderr


@pytest.mark.parametrize("suffix", [".xz", ".bz2"])
def test_xz_and_bzip2_check_as_they_go_and_keep_what_came_before(
    suffix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = generated(tmp_path)
    packed = tmp_path / f"kern.log{suffix}"
    packed.write_bytes(flipped(COMPRESSORS[suffix](plain.read_bytes()), 0.6))
    document = same_on_both_paths(packed, monkeypatch)
    [problem] = document["source"]["problems"]
    assert problem["problem"].startswith("cut short after line ")
    lines = int(problem["problem"].split()[4])
    # Every line read is the file's own: the kills are those of the lines before the damage.
    original = listing(plain, "line", monkeypatch)
    kept = [e for e in original["episodes"] if e["lines"][1] <= lines]
    assert len(document["episodes"]) in (len(kept), len(kept) + 1)  # + a report the cut ends
    assert [e["victim"] for e in document["episodes"][: len(kept)]] == [e["victim"] for e in kept]


@pytest.mark.parametrize("suffix", [".xz", ".bz2"])
@pytest.mark.parametrize("where", [0.2, 0.5, 0.8, 0.95])
def test_a_damaged_xz_or_bzip2_gives_only_the_files_own_bytes(
    tmp_path: Path, suffix: str, where: float
) -> None:
    # bz2.BZ2File gave a failing block's 900 KB of scrambled lines before its check failed (a
    # phantom tasks table and kill among them); lzma gave a few KB of garbage before it noticed.
    plain = generated(tmp_path, reports=8).read_bytes()
    damaged = flipped(COMPRESSORS[suffix](plain), where)
    stream = Decompressed(io.BufferedReader(io.BytesIO(damaged)), compression_of(damaged))  # type: ignore[arg-type]
    given = bytearray()
    with pytest.raises(Damaged) as failure:
        while data := stream.read1(65536):
            given += data
    assert failure.value.trusted
    assert plain.startswith(given)
    # What came before is kept, but for the damaged bzip2 block (900 KB of text) or the last
    # MiB xz gave (XZ_HELD_BACK).
    assert len(given) >= where * len(plain) - 1_500_000


@pytest.mark.parametrize(("suffix", "flips"), [(".xz", 120), (".bz2", 30)])
def test_no_flipped_bit_in_an_xz_or_bzip2_gives_garbage(tmp_path: Path, suffix: str, flips: int) -> None:
    # One flip in 25 gave up to 10.8 KB of garbage through lzma.LZMAFile before its error.
    plain = generated(tmp_path, reports=8).read_bytes()[:1_500_000]
    packed = COMPRESSORS[suffix](plain)
    rng = random.Random(suffix)
    for _ in range(flips):
        damaged = bytearray(packed)
        damaged[rng.randrange(100, len(damaged) - 100)] ^= 1 << rng.randrange(8)
        stream = Decompressed(io.BufferedReader(io.BytesIO(damaged)), compression_of(bytes(damaged)))  # type: ignore[arg-type]
        given = bytearray()
        with contextlib.suppress(Damaged):
            while data := stream.read1(65536):
                given += data
        assert plain.startswith(given)


def test_bzip2_streams_one_after_another_are_read_and_bytes_after_them_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed = SEED000.read_bytes()
    packed = tmp_path / "kern.log.bz2"
    packed.write_bytes(bz2.compress(seed) + bz2.compress(seed.replace(b"1966928", b"1966929")))
    document = same_on_both_paths(packed, monkeypatch)
    assert [e["victim"]["pid"] for e in document["episodes"]] == [1966928, 1966929]
    assert document["source"]["problems"] == []
    # The next stream's magic cut between two of the pieces the decoder is given.
    first, piece = bz2.compress(seed), compressed._BZIP2_PIECE
    for cut in (1, 2, 3):
        monkeypatch.setattr(compressed, "_BZIP2_PIECE", len(first) + cut)
        stream = Decompressed(io.BufferedReader(io.BytesIO(packed.read_bytes())), compression_of(first))  # type: ignore[arg-type]
        given = bytearray()
        while data := stream.read1(65536):
            given += data
        assert given.count(b"1966929") == seed.count(b"1966928")
    monkeypatch.setattr(compressed, "_BZIP2_PIECE", piece)
    packed.write_bytes(bz2.compress(seed) + b"not bzip2 at all")
    document = same_on_both_paths(packed, monkeypatch)
    assert [e["victim"]["pid"] for e in document["episodes"]] == [1966928]
    [problem] = document["source"]["problems"]
    assert "bytes after the last bzip2 stream are not bzip2" in problem["problem"]


def test_xz_streams_one_after_another_are_read_and_bytes_after_them_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # lzma.LZMAFile dropped bytes after the last stream without a word.
    seed = SEED000.read_bytes()
    packed = tmp_path / "kern.log.xz"
    second = lzma.compress(seed.replace(b"1966928", b"1966929"))
    packed.write_bytes(lzma.compress(seed) + b"\0" * 8 + second + b"\0" * 4)  # with stream padding
    document = same_on_both_paths(packed, monkeypatch)
    assert [e["victim"]["pid"] for e in document["episodes"]] == [1966928, 1966929]
    assert document["source"]["problems"] == []
    for after in (b"not xz at all", b"x"):
        packed.write_bytes(lzma.compress(seed) + after)
        document = same_on_both_paths(packed, monkeypatch)
        assert [e["victim"]["pid"] for e in document["episodes"]] == [1966928]
        [problem] = document["source"]["problems"]
        assert "bytes after the last xz stream are not xz" in problem["problem"]


def test_a_gzip_with_bytes_after_its_member_keeps_the_member(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # The member's check passed: what follows it (not gzip) is said, the log is all there.
    packed = tmp_path / "kern.log.gz"
    packed.write_bytes(gzip.compress(SEED000.read_bytes()) + b"not gzip at all")
    document = same_on_both_paths(packed, monkeypatch)
    assert [e["victim"]["pid"] for e in document["episodes"]] == [1966928]
    [problem] = document["source"]["problems"]
    assert "Not a gzipped file" in problem["problem"]


# ---- zstd ---------------------------------------------------------------------------------


def test_zstd_is_read_as_gzip_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = generated(tmp_path)
    packed = tmp_path / "kern.log.1.zst"
    # Two frames, as `cat a.zst b.zst` or a multi-threaded zstd leaves them.
    data = plain.read_bytes()
    packed.write_bytes(zstd_compress(data[: len(data) // 3]) + zstd_compress(data[len(data) // 3 :]))
    document = same_on_both_paths(packed, monkeypatch)
    assert story(document) == story(listing(plain, "line", monkeypatch))
    assert len(document["episodes"]) == 4 and document["source"]["problems"] == []


def story(document: Any) -> tuple[list[Any], list[Any]]:
    """Who died on which lines, and what warned how often: what a reading of a log must keep."""
    return (
        [(e["victim"], e["lines"]) for e in document["episodes"]],
        [(w["text"], w["count"]) for w in document["warnings"]],
    )


def test_a_cut_zstd_keeps_what_came_before_the_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = generated(tmp_path)
    packed = tmp_path / "kern.log.zst"
    whole = zstd_compress(plain.read_bytes())
    packed.write_bytes(whole[: len(whole) * 6 // 10])
    document = same_on_both_paths(packed, monkeypatch)
    [problem] = document["source"]["problems"]
    assert problem["problem"].startswith("cut short after line ")
    assert "ends inside a zstd frame" in problem["problem"]
    assert 0 < len(document["episodes"]) < 4


# ---- what is binary, what is text --------------------------------------------------------


@pytest.mark.parametrize("attempt", range(4))
def test_random_bytes_are_always_refused(attempt: int, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # A 4 KiB sample sat on its threshold: refused in two runs of three, else read for ever.
    noise = os.urandom(3 << 20)
    # One run in 65,536 begins with gzip's magic (1f 8b), and is refused as a damaged .gz
    # instead (exit 2 all the same): a noise that opens like a compressed file is drawn again.
    while noise.startswith((b"\x1f\x8b", b"BZh", b"\x28\xb5\x2f\xfd", b"\xfd7zXZ\x00")):
        noise = os.urandom(3 << 20)
    result = listing("-", "chunk", monkeypatch, stdin=noise)
    assert result.exit_code == 2 and "<stdin> looks binary, not a text kernel log" in result.stderr
    blob = tmp_path / "noise.bin"
    blob.write_bytes(noise)
    assert "looks binary" in same_on_both_paths(blob, monkeypatch).stderr


def test_latin1_and_coloured_logs_are_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = SEED000.read_text()
    log = tmp_path / "kern.log"
    log.write_bytes(
        "".join(f"\x1b[32m{line}\x1b[0m caf\xe9\n" for line in text.splitlines()).encode("latin-1", "replace")
    )
    document = same_on_both_paths(log, monkeypatch)
    assert [e["victim"]["pid"] for e in document["episodes"]] == [1966928]


@pytest.mark.parametrize(
    "encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be", "utf-8-sig"]
)
def test_utf16_and_utf32_logs_are_read(
    encoding: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PowerShell's `>` writes UTF-16 with a byte order mark; "-le"/"-be" have none (issue 41: UTF-32
    # without one was refused as "does not look like a kernel log").
    log = tmp_path / "kern.log"
    log.write_bytes(SEED000.read_text().encode(encoding))
    assert_reads_as_seed000(same_on_both_paths(log, monkeypatch), monkeypatch)


def assert_reads_as_seed000(document: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    original = listing(SEED000, "line", monkeypatch)
    assert document["source"]["records"] == original["source"]["records"]
    assert story(document) == story(original)
    assert document["warnings"]


def test_a_log_with_cr_line_ends_is_read_line_by_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: one line of the whole file, its warnings lost.
    text = SEED000.read_text()
    log = tmp_path / "kern.log"
    log.write_bytes(text.replace("\n", "\r").encode())
    document = same_on_both_paths(log, monkeypatch)
    assert document["source"]["records"] == text.count("\n")
    assert_reads_as_seed000(document, monkeypatch)


# ---- JSON lines longer than a log line ---------------------------------------------------


def otlp_export(path: Path, records_a_line: int) -> int:
    """An OpenTelemetry Collector file export of seed 000's kernel lines and noise: one request
    a line, `records_a_line` log records each. Returns the longest line's length."""
    start = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
    messages = [
        line.split("kernel: ", 1)[1] for line in SEED000.read_text().splitlines() if "kernel: " in line
    ]
    noise = [
        f'audit: type=1400 apparmor="DENIED" operation="open" name="/proc/{n}/cgroup"' for n in range(4000)
    ]
    stream = noise[:2000] + messages + noise[2000:]

    def record(i: int, message: str) -> dict[str, Any]:
        when = start + timedelta(milliseconds=10 * i)
        return {
            "timeUnixNano": str(int(when.timestamp() * 1e9)),
            "body": {"stringValue": message},
            "attributes": [{"key": "syslog.identifier", "value": {"stringValue": "kernel"}}],
        }

    longest = 0
    with path.open("w") as out:
        for first in range(0, len(stream), records_a_line):
            batch = [record(first + i, m) for i, m in enumerate(stream[first : first + records_a_line])]
            line = json.dumps(
                {
                    "resourceLogs": [
                        {
                            "resource": {
                                "attributes": [{"key": "host.name", "value": {"stringValue": "spark-01"}}]
                            },
                            "scopeLogs": [{"scope": {}, "logRecords": batch}],
                        }
                    ]
                }
            )
            longest = max(longest, len(line))
            out.write(line + "\n")
    return longest


def test_an_otlp_export_with_372_kb_lines_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    export = tmp_path / "otel-export.jsonl"
    longest = otlp_export(export, records_a_line=1600)
    assert longest > 372_000
    document = same_on_both_paths(export, monkeypatch)
    assert [(e["host"], e["victim"]["pid"]) for e in document["episodes"]] == [("spark-01", 1966928)]
    assert document["source"]["problems"] == []


def test_a_json_line_over_its_bound_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from oomtrace.sources import lines

    monkeypatch.setattr(lines, "MAX_JSON_LINE_BYTES", 256 * 1024)
    export = tmp_path / "otel-export.jsonl"
    otlp_export(export, records_a_line=1600)
    document = same_on_both_paths(export, monkeypatch)
    # The two long lines are cut and read as text (its messages found by their words, without their time
    # or host), and that is said.
    [problem] = document["source"]["problems"]
    assert problem["problem"].startswith(
        "2 lines longer than 64 KiB (256 KiB for a JSON line: 2 such, their records lost) cut to it"
    )
    # A cut export that holds nothing else is not "not a log" alone: the refusal says why.
    quiet = tmp_path / "quiet.jsonl"
    quiet.write_text('{"resourceLogs": [' + "x" * (400 * 1024) + "\n")
    result = listing(quiet, "line", monkeypatch)
    assert result.exit_code == 2
    assert "does not look like a kernel log" in result.stderr
    assert "(1 line longer than 64 KiB (256 KiB for a JSON line: 1 such, their records lost)" in result.stderr


# ---- empty lines ---------------------------------------------------------------------------


def test_empty_lines_cost_nearly_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 60 MB of newlines ran past 120 s: each empty line was a record, and each line a copy of
    # the rest of the piece read. A run of them is now one record.
    report = SEED000.read_bytes()
    log = tmp_path / "kern.log"
    # The second report a kill of its own (another pid): the same kill twice is one (issue 41).
    second = report.replace(b"1966928", b"1966929")
    log.write_bytes(b"\n" * (8 << 20) + report + b"\r\n" * 100_000 + second + b"\n" * 1000)
    began = time.monotonic()
    source = KernelLogFile(str(log), zone=UTC, year=2026)
    records = sum(1 for _ in source.records())
    assert time.monotonic() - began < 20  # about 0.1 s; it was minutes
    assert source.lines_read == (8 << 20) + 100_000 + 1000 + 2 * report.count(b"\n")
    assert records < 2 * report.count(b"\n") + 10
    document = same_on_both_paths(log, monkeypatch)
    kills = [e["lines"][1] for e in document["episodes"]]
    original = listing(SEED000, "line", monkeypatch)["episodes"][0]["lines"][1]
    # Line numbers count every empty line.
    assert kills == [(8 << 20) + original, (8 << 20) + 100_000 + report.count(b"\n") + original]
    assert document["source"]["last"]["line"] == source.lines_read


def test_a_file_of_newlines_is_not_a_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "newlines.log"
    log.write_bytes(b"\n" * (20 << 20))
    packed = tmp_path / "newlines.log.gz"
    packed.write_bytes(gzip.compress(log.read_bytes()))
    for each in (log, packed):
        began = time.monotonic()
        result = same_on_both_paths(each, monkeypatch)
        assert time.monotonic() - began < 30
        assert result.exit_code == 2 and "does not look like a kernel log" in result.stderr


def test_dmesgs_boot_time_is_to_the_microsecond_not_btimes_whole_second() -> None:
    """Issue 39: uptimes from dmesg were made wall time with /proc/stat's btime, whole seconds, so
    a kill was told up to a second early, before the server log's last line. The boot time is
    now the wall clock less the time since boot; btime stays the fallback."""
    import time
    from datetime import UTC

    from oomtrace.sources.dmesg import RingBuffer

    source = RingBuffer(UTC)
    ours, btime = source.boot_time(), source._btime()
    expected = time.clock_gettime(time.CLOCK_REALTIME) - time.clock_gettime(time.CLOCK_BOOTTIME)
    assert ours is not None and abs(ours.timestamp() - expected) < 0.05
    if btime is not None:  # btime is the same moment cut to its second
        assert -0.05 <= (ours - btime).total_seconds() < 1.05


@pytest.mark.skipif(REMOTE is None, reason="needs systemd-journal-remote to write journal files")
def test_a_journal_file_or_folder_passed_as_k_is_pointed_to_oomtraces_own_options(tmp_path: Path) -> None:
    """Issue 39: `-k x.journal` said to export it with journalctl, `-k DIR` of journal files to
    pass a log file: oomtrace reads both itself, with --journal-file and -D."""
    folder = tmp_path / "journal" / "0123456789abcdef"
    folder.mkdir(parents=True)
    boot = "f" * 32
    entries = kernel_entries(FIXTURES / "seed000_llama_server_gb10" / "kernel.log", "spark-01", boot)
    journal = write_journal(folder / "system.journal", entries, {boot: datetime(2026, 11, 14, 8, tzinfo=UTC)})
    as_file = run("list", "-k", str(journal))
    assert as_file.exit_code == 2
    assert f"read it with --journal-file {journal}" in as_file.stderr
    as_folder = run("list", "-k", str(tmp_path / "journal"))
    assert as_folder.exit_code == 2
    assert f"a folder of journal files is read with -D {tmp_path / 'journal'}" in as_folder.stderr
    assert run("list", "--journal-file", str(journal)).exit_code == 0  # and the hint is right


@pytest.mark.parametrize(
    ("redirect", "said"),
    [
        ("< /dev/null", "standard input is a device that gave nothing (such as /dev/null)"),
        ("< {empty}", "the file given as standard input is empty"),
        ("| true", None),
    ],
)
def test_an_empty_standard_input_is_said_by_what_it_is(
    tmp_path: Path, redirect: str, said: str | None
) -> None:
    """Issue 39: `-k - < /dev/null` was told 'the command before the pipe wrote nothing'."""
    empty = tmp_path / "empty.log"
    empty.write_text("")
    command = f'"$@" {redirect.format(empty=empty)}' if redirect.startswith("<") else 'true | "$@"'
    done = subprocess.run(
        ["/bin/sh", "-c", command, "sh", sys.executable, "-m", "oomtrace", "list", "-k", "-"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3
    assert (said or "the command before the pipe wrote no log: did it fail?") in done.stderr


@pytest.fixture(scope="module")
def rotated_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bench/make_log.py's 8 MiB kernel log with 20 reports: over 65,536 lines, so the line-by-line
    path tells its progress once before its end."""
    sys.path.insert(0, str(ROOT / "bench"))
    from make_log import write

    log = tmp_path_factory.mktemp("rotated") / "kern.log"
    write(log, mib=8, reports=20)
    return log


def _read_while(log: Path, tmp_path: Path, change: Any) -> KernelLogFile:
    """The copy of `log` read whole, `change` done to it at the reader's first progress report
    (a deterministic point in the middle of the read: logrotate's copytruncate would come there)."""
    tmp_path.mkdir()
    copy = tmp_path / "kern.log"
    copy.write_bytes(log.read_bytes())
    source = KernelLogFile(str(copy), UTC)
    calls: list[int] = []

    def progress(done: int) -> None:
        calls.append(done)
        if len(calls) == 1:
            change(copy)

    source.progress = progress
    for _ in source.records():
        pass
    assert calls, "no progress report: the change was never made"
    return source


@pytest.mark.parametrize("path", ["line by line", "chunk scan"])
def test_a_log_that_shrinks_while_it_is_read_is_said(
    rotated_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """Issue 41: logrotate's copytruncate empties kern.log while oomtrace reads it; the read ended
    early without a word. Both paths now say it shrank, from what size to what, and how far
    reading came."""
    from oomtrace.sources import chunks

    monkeypatch.setenv("OOMTRACE_FAST_MIN_BYTES", str(1 << 40) if path == "line by line" else "1")
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 256 << 10)  # the scan threads read ahead by chunks
    size = rotated_log.stat().st_size
    whole = _read_while(rotated_log, tmp_path / "whole", lambda copy: None)
    assert whole.problem is None
    source = _read_while(rotated_log, tmp_path / "cut", lambda copy: os.truncate(copy, 0))
    assert source.problem is not None
    said = re.fullmatch(
        rf"\S+kern\.log shrank from {size:,} to 0 bytes while it was read \(logrotate's copytruncate "
        r"does this\): read up to (byte|line) ([\d,]+); lines after it may be missing",
        source.problem,
    )
    assert said is not None, source.problem
    read_to = int(said.group(2).replace(",", ""))
    if path == "chunk scan":
        # Its threads read ahead of the lines counted: how far is said as the lines read.
        assert said.group(1) == "line" and read_to == source.lines_read
        assert 0 < read_to < rotated_log.read_bytes().count(b"\n")
    else:
        assert said.group(1) == "byte" and 0 < read_to < size
        # Every line said read is one of the file's first `read_to` bytes (a last one cut there too).
        first = rotated_log.read_bytes()[:read_to]
        assert source.lines_read == first.count(b"\n") + (not first.endswith(b"\n"))
    # A log that grows while it is read (the usual: the kernel goes on writing) says nothing.
    grown = _read_while(rotated_log, tmp_path / "grown", lambda copy: copy.open("ab").write(b"x\n" * 10))
    assert grown.problem is None


def test_a_log_read_whole_says_nothing_of_shrinking(rotated_log: Path, tmp_path: Path) -> None:
    """A log that keeps its size while it is read says nothing of the kind on the command line."""
    copy = tmp_path / "kern.log"
    copy.write_bytes(rotated_log.read_bytes()[: 1 << 20])
    result = run("list", "-k", str(copy), "--tz", "UTC")
    assert result.exit_code == 0 and "shrank" not in result.output
