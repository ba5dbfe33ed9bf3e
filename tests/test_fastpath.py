"""The chunk scan of big files gives the same answers as reading every line."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import os
import sys
import zlib
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oomtrace.messages import MESSAGE_KINDS
from oomtrace.prefilter import ANCHORS, XID_ANCHOR
from oomtrace.sources import textfile
from oomtrace.sources.textfile import KernelLogFile
from tests.conftest import CORPUS, FIXTURES, ROOT, run

# Dependencies on Linux x86_64 and aarch64; where they have no wheel, big files are read line by line.
pytest.importorskip("hyperscan", reason="the chunk scan needs hyperscan (no wheel for this platform)")
pytest.importorskip("numpy", reason="the chunk scan needs numpy (no wheel for this platform)")
from oomtrace.sources import bigfile, chunks, compressed

DEFAULT_CHUNK_BYTES = chunks.CHUNK_BYTES
LOGS = sorted(FIXTURES.glob("*/kernel.log")) + (sorted(CORPUS.glob("**/*.txt")) if CORPUS.is_dir() else [])


def listing(log: Path, fast: bool, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("OOMTRACE_FAST_MIN_BYTES", "0" if fast else str(1 << 60))
    result = run("list", "-k", str(log), "--format", "json", "--tz", "UTC", "--year", "2026")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def records_read(log: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """(records the fast path hands to the grammar, lines in the file)."""
    monkeypatch.setenv("OOMTRACE_FAST_MIN_BYTES", "0")
    monkeypatch.setattr(bigfile, "HEAD_LINES", 5)
    source = KernelLogFile(str(log), zone=UTC)
    count = sum(1 for _ in source.records())
    assert source.lines_read is not None
    return count, source.lines_read


def assert_same(log: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    fast, full = listing(log, True, monkeypatch), listing(log, False, monkeypatch)
    assert fast["episodes"] == full["episodes"]
    assert fast["warnings"] == full["warnings"]
    assert fast["incidents"] == full["incidents"]
    assert fast["source"] == full["source"]
    return fast


@pytest.mark.parametrize("log", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fast_path_equals_full_read(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, full = listing(log, True, monkeypatch), listing(log, False, monkeypatch)
    assert fast["episodes"] == full["episodes"]
    assert fast["warnings"] == full["warnings"]
    assert fast["incidents"] == full["incidents"]
    assert fast["source"]["records"] == full["source"]["records"]


@pytest.mark.parametrize("chunk_bytes", [4096, 65536, DEFAULT_CHUNK_BYTES])
def test_fast_path_on_a_generated_log_with_noise(
    chunk_bytes: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small chunks put report bodies, Xid runs and long lines across chunk edges.
    monkeypatch.setattr(chunks, "CHUNK_BYTES", chunk_bytes)
    sys.path.insert(0, str(ROOT / "bench"))
    from make_log import write

    log = tmp_path / "kern.log"
    write(log, mib=4, reports=3)
    fast = assert_same(log, monkeypatch)
    assert len(fast["episodes"]) == 3
    xids = [w for w in fast["warnings"] if w["kind"] == "nvrm-xid"]
    # One run per stretch between kills: a run ends at a kill.
    assert len(xids) == 4 and sum(w["count"] for w in xids) > 1000
    if chunk_bytes == DEFAULT_CHUNK_BYTES:
        records, _ = records_read(log, monkeypatch)
        # The three reports (about 70 lines each) and a few Xid lines per chunk: the rest counted.
        assert records < 300 < sum(w["count"] for w in xids)


def test_without_the_scanning_libraries_every_line_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Where hyperscan or numpy has no wheel, a big file is read line by line: slower, same answers.
    sys.path.insert(0, str(ROOT / "bench"))
    from make_log import write

    log = tmp_path / "kern.log"
    write(log, mib=1, reports=1)
    fast = listing(log, True, monkeypatch)
    monkeypatch.setattr(textfile, "_scanner_importable", lambda: False)
    assert listing(log, True, monkeypatch) == fast
    records, lines = records_read(log, monkeypatch)
    assert records == lines


def test_a_pipe_is_read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    # `-k <(journalctl -k)` names a pipe: deciding how to read it must not eat its first lines.
    log = FIXTURES / "seed000_llama_server_gb10" / "kernel.log"
    monkeypatch.setenv("OOMTRACE_FAST_MIN_BYTES", "0")
    read_end, write_end = os.pipe()
    os.write(write_end, log.read_bytes())  # fits in the pipe's buffer
    os.close(write_end)
    try:
        result = run("list", "-k", f"/dev/fd/{read_end}", "--format", "json")
    finally:
        os.close(read_end)
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["source"]["records"] == len(log.read_text().splitlines())
    assert [e["victim"]["pid"] for e in document["episodes"]] == [1966928]


def compressed_log(tmp_path: Path, suffix: str, opener: Any, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A generated 2 MiB log with two reports, compressed, read in 64 KiB chunks."""
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 65536)
    sys.path.insert(0, str(ROOT / "bench"))
    from make_log import write

    plain = tmp_path / "kern.log"
    write(plain, mib=2, reports=2)
    packed = tmp_path / f"kern.log{suffix}"
    with opener(packed, "wb") as out:
        out.write(plain.read_bytes())
    return packed


@pytest.mark.parametrize(("suffix", "opener"), [(".gz", gzip.open), (".xz", lzma.open), (".bz2", bz2.open)])
def test_compressed_big_files_are_scanned_too(  # type: ignore[no-untyped-def]
    suffix: str, opener, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Rotated logs are compressed: they go through the same chunk scan, fed by the decompressor.
    packed = compressed_log(tmp_path, suffix, opener, monkeypatch)
    fast = assert_same(packed, monkeypatch)
    assert len(fast["episodes"]) == 2 and fast["source"]["problems"] == []
    records, lines = records_read(packed, monkeypatch)
    assert records < lines / 20


@pytest.mark.parametrize(("suffix", "opener"), [(".gz", gzip.open), (".xz", lzma.open)])
def test_a_cut_compressed_big_file_keeps_the_same_lines(  # type: ignore[no-untyped-def]
    suffix: str, opener, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    packed = compressed_log(tmp_path, suffix, opener, monkeypatch)
    packed.write_bytes(packed.read_bytes()[: packed.stat().st_size // 2])
    fast = assert_same(packed, monkeypatch)
    [problem] = fast["source"]["problems"]
    assert problem["problem"].startswith("cut short after line ")
    assert len(fast["episodes"]) == 1  # the first report is before the cut, the second after


def test_a_gzip_cut_after_all_its_lines_were_given_keeps_them_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A .gz copied while gzip was still writing it: every line flushed, no end of stream. The
    # decompressor gives all the lines before it tells of the cut, so the chunk path's first
    # read fails at once; it lost every line the sniff had read ahead (found by fuzz_inputs.py).
    report = (FIXTURES / "seed000_llama_server_gb10" / "kernel.log").read_bytes()
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    packed = tmp_path / "kern.log.gz"
    packed.write_bytes(packer.compress(report) + packer.flush(zlib.Z_SYNC_FLUSH))
    lines = report.count(b"\n")
    monkeypatch.setattr(bigfile, "HEAD_LINES", 5)  # the chunk path starts inside what was read ahead
    fast = assert_same(packed, monkeypatch)
    assert fast["source"]["records"] == lines
    [problem] = fast["source"]["problems"]
    assert problem["problem"].startswith(f"cut short after line {lines}")
    assert len(fast["episodes"]) == 1


def corrupted(packed: Path) -> None:
    """Damaged inside, not cut: bytes overwritten in the middle (a bad sector, a bad copy)."""
    data = bytearray(packed.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(b ^ 0x55 for b in data[middle : middle + 64])
    packed.write_bytes(bytes(data))


@pytest.mark.parametrize(("suffix", "opener"), [(".xz", lzma.open), (".bz2", bz2.open)])
def test_a_corrupted_compressed_big_file_keeps_the_same_lines(  # type: ignore[no-untyped-def]
    suffix: str, opener, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    packed = compressed_log(tmp_path, suffix, opener, monkeypatch)
    corrupted(packed)
    # xz's last MiB before the damage is held back (it may be garbage): here, half the file.
    monkeypatch.setattr(compressed, "XZ_HELD_BACK", 65536)
    fast = assert_same(packed, monkeypatch)
    [problem] = fast["source"]["problems"]
    assert problem["problem"].startswith("cut short after line ")
    assert fast["source"]["records"] > 1000  # the lines before the damage are all there


def test_a_corrupted_gzip_big_file_is_refused_on_both_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # gzip checks its data only at the member's end: the lines before may be garbage (tests/test_inputs.py).
    packed = compressed_log(tmp_path, ".gz", gzip.open, monkeypatch)
    corrupted(packed)
    for fast in ("0", str(1 << 60)):
        monkeypatch.setenv("OOMTRACE_FAST_MIN_BYTES", fast)
        result = run("list", "-k", str(packed), "--format", "json")
        assert result.exit_code == 2 and result.stderr.startswith(f"oomtrace: error: cannot trust {packed}")


XID = "NVRM: Xid (PCI:0000:{gpu:02x}:00): {code}, pid={pid}, name=python3, Ch 00000008"
REPORT = (FIXTURES / "seed000_llama_server_gb10" / "kernel.log").read_text()


def xid_log(path: Path, lines: list[tuple[float, str]], *, host: str | None = None) -> Path:
    """A dmesg log (or journalctl short-monotonic with a host) of these (uptime, message) lines."""
    with path.open("w") as out:
        for uptime, message in lines:
            stamp = f"[{uptime:12.6f}]"
            out.write(f"{stamp} {host} kernel: {message}\n" if host else f"{stamp} {message}\n")
    return path


def chatter(
    start: float, count: int, step: float = 0.5, codes: tuple[int, ...] = (13,)
) -> list[tuple[float, str]]:
    return [
        (start + i * step, XID.format(gpu=1 + i % 2, code=codes[i % len(codes)], pid=1000 + i))
        for i in range(count)
    ]


@pytest.mark.parametrize(
    "case",
    [
        "codes interleaved",
        "gap over an hour",
        "reboot",
        "two xids on a line",
        "long code",
        "line longer than a chunk",
        "xids inside a report",
        "no newline at the end",
    ],
)
def test_xid_counting_equals_reading(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 8192)
    monkeypatch.setattr(bigfile, "HEAD_LINES", 5)
    lines = chatter(10.0, 400, codes=(13, 31, 79) if case == "codes interleaved" else (13,))
    if case == "gap over an hour":
        lines += chatter(10.0 + 200 + 3601, 300) + chatter(10.0 + 200 + 3601 + 150 + 7300, 5)
    elif case == "reboot":
        lines += chatter(3.0, 300)
    elif case == "two xids on a line":
        lines.insert(
            200, (110.1, XID.format(gpu=1, code=13, pid=1) + " " + XID.format(gpu=1, code=31, pid=2))
        )
    elif case == "long code":
        lines.insert(200, (110.1, XID.format(gpu=1, code=10**24, pid=1)))
    elif case == "line longer than a chunk":
        lines.insert(200, (110.1, "x" * 20000 + " " + XID.format(gpu=1, code=13, pid=1)))
    elif case == "xids inside a report":
        report = [line.split("kernel: ", 1)[1] for line in REPORT.splitlines() if "kernel: " in line]
        middle = [(210.0, text) for text in report]
        middle[len(middle) // 2 : len(middle) // 2] = chatter(210.0, 50)
        lines[200:200] = middle
    log = xid_log(tmp_path / "kern.log", lines)
    if case == "no newline at the end":
        log.write_text(log.read_text().rstrip("\n"))
    fast = assert_same(log, monkeypatch)
    assert sum(w["count"] for w in fast["warnings"] if w["kind"] == "nvrm-xid") >= 400
    if case in ("codes interleaved", "gap over an hour", "reboot", "xids inside a report"):
        records, _ = records_read(log, monkeypatch)
        assert records < 200  # the chatter was counted, not read line by line


def test_xid_counting_keeps_hosts_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A central syslog file: two hosts' Xids interleaved; each host keeps its own count.
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 8192)
    monkeypatch.setattr(bigfile, "HEAD_LINES", 5)
    log = tmp_path / "kern.log"
    with log.open("w") as out:
        for i, (uptime, message) in enumerate(chatter(10.0, 600)):
            out.write(f"[{uptime:12.6f}] {'gpu-a' if i % 7 else 'gpu-b'} kernel: {message}\n")
    fast = assert_same(log, monkeypatch)
    counts = {w["host"]: w["count"] for w in fast["warnings"]}
    assert counts == {"gpu-a": 514, "gpu-b": 86}


@pytest.mark.parametrize("style", ["journalctl", "syslog with uptime"])
def test_xid_counting_with_a_host_in_every_line(
    style: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `journalctl -k > file` and kern.log name the host on every line: still counted, not read.
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 8192)
    monkeypatch.setattr(bigfile, "HEAD_LINES", 5)
    log = tmp_path / "kern.log"
    with log.open("w") as out:
        for i, (uptime, message) in enumerate(chatter(10.0, 600)):
            stamp = f"Nov 28 08:{i // 60 % 60:02d}:{i % 60:02d} gb10 kernel:"
            out.write(
                f"{stamp} [{uptime:12.6f}] {message}\n" if style != "journalctl" else f"{stamp} {message}\n"
            )
    fast = assert_same(log, monkeypatch)
    assert [(w["host"], w["count"]) for w in fast["warnings"]] == [("gb10", 600)]
    records, _ = records_read(log, monkeypatch)
    assert records < 200


# ---- the chunker against a naive reading of the same bytes ----------------------------------

_PIECES = st.sampled_from(
    [
        "plain noise",
        "Out of memory: Killed process 1 (x)",
        XID.format(gpu=1, code=13, pid=1),
        XID.format(gpu=2, code=31, pid=2),
        "NVRM: Xid (PCI:0000:01:00): ",
        "NVRM: Xid (",
        "Mem-Info:",
        "",
        "x" * 300,
    ]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(st.lists(_PIECES, min_size=1, max_size=3).map(" ".join), min_size=1, max_size=120),
    chunk_bytes=st.integers(16, 700),
    end_newline=st.booleans(),
    head=st.integers(0, 5),
    # How far a chunk's reader peeks for the newline at its edges: lines longer than the peek
    # take the reader's careful path, shorter ones its one-read path.
    peek_bytes=st.sampled_from([2, 40, 4096]),
)
def test_chunks_match_a_naive_reading(
    lines: list[str],
    chunk_bytes: int,
    end_newline: bool,
    head: int,
    peek_bytes: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(chunks, "CHUNK_BYTES", chunk_bytes)
    monkeypatch.setattr(chunks, "_PEEK_BYTES", peek_bytes)
    data = ("\n".join(lines) + ("\n" if end_newline else "")).encode()
    path = tmp_path / "log"
    path.write_bytes(data)
    head = min(head, len(lines) - 1)
    start = sum(len(line) + 1 for line in lines[:head])
    if start >= len(data):
        return
    seen = []
    anchor_lines, xid_starts = [], []
    for chunk in chunks.chunks(str(path), start, head + 1):
        assert chunk.offset == start + sum(len(piece) for piece in seen)
        assert chunk.first_line == head + 1 + b"".join(seen).count(b"\n")
        step = max(1, len(chunk.data) // 7)
        for offset in range(0, len(chunk.data), step):
            expected = chunk.first_line + chunk.data.count(b"\n", 0, offset)
            assert chunk.line_no(offset) == expected
            # From a known line before it, and counting back from one after it (whichever is nearer).
            for before, after in [(offset // 2, offset + step // 3), (max(0, offset - 5), offset + 3)]:
                known = (before, chunk.line_no(before))
                later = (min(after, len(chunk.data)), chunk.line_no(min(after, len(chunk.data))))
                assert chunk.line_no(offset, known, later) == expected
                assert chunk.line_no(offset, None, later) == expected
        anchor_lines += [chunk.offset + a for a in chunk.anchor_lines]
        xid_starts += [chunk.offset + int(x) for x in chunk.xid_starts]
        if chunk.xid_groups is not None:
            grouped = sorted(int(x) for group in chunk.xid_groups for x in group)
            assert grouped == [int(x) for x in chunk.xid_starts]
            for group in chunk.xid_groups:
                codes = {chunk.data[int(x) :].split(b"): ", 1)[1].split(b",")[0] for x in group}
                assert len(codes) == 1
        seen.append(chunk.data)
    assert b"".join(seen) == data[start:]
    streamed = list(chunks.stream_chunks(io.BytesIO(data[start:]), start, head + 1))
    assert b"".join(c.data for c in streamed) == data[start:]
    assert [(c.first_line, c.newline_count) for c in streamed][:1] == [(head + 1, streamed[0].newline_count)]
    assert sum(c.newline_count for c in streamed) == data[start:].count(b"\n")
    assert [c.offset + a for c in streamed for a in c.anchor_lines] == anchor_lines
    assert [c.offset + int(x) for c in streamed for x in c.xid_starts] == xid_starts
    literals = [a.encode() for a in ANCHORS if a != XID_ANCHOR]
    expected_anchor_lines, offset = [], start
    for raw in data[start:].split(b"\n"):
        if any(literal in raw for literal in literals):
            expected_anchor_lines.append(offset)
        offset += len(raw) + 1
    assert anchor_lines == expected_anchor_lines
    expected_xids, at = [], data.find(XID_ANCHOR.encode(), start)
    while at >= 0:
        expected_xids.append(at)
        at = data.find(XID_ANCHOR.encode(), at + 1)
    assert xid_starts == expected_xids


REALWORLD = ROOT / "tests" / "realworld" / "cases"
from tests.realworld.score import REFUSED  # noqa: E402


@pytest.mark.parametrize("case", [p.name for p in sorted(REALWORLD.iterdir())])
def test_fast_path_equals_full_read_on_real_pastes(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Only 2 head lines: every later line goes through the chunk scan and its prefilter, so a
    # wrapped kill line's rest and a line behind an unknown prefix are found there too.
    monkeypatch.setattr(bigfile, "HEAD_LINES", 2)
    log = REALWORLD / case / "input.txt"
    if case in REFUSED:  # a named limit: both paths refuse it alike
        refusals = []
        for fast_path in (True, False):
            monkeypatch.setenv("OOMTRACE_FAST_MIN_BYTES", "0" if fast_path else str(1 << 60))
            refusals.append(run("list", "-k", str(log), "-f", "json").exit_code)
        assert refusals == [2, 2]
        return
    fast, full = listing(log, True, monkeypatch), listing(log, False, monkeypatch)
    assert fast["episodes"] == full["episodes"]
    assert fast["warnings"] == full["warnings"]


# ---- a report cut before its header, in the middle of a big file --------------------------------

NOISE = "usb 1-1.{n}: new high-speed USB device number {n} using xhci_hcd"
_MESSAGES = [line.split("kernel: ", 1)[1] for line in REPORT.splitlines() if "kernel: " in line]
# seed 000's report without its `invoked oom-killer` line: the CPU line comes first, and the first
# line of it holding an anchor is a call frame (`oom_kill_process+0x13c/0x1c0`), 8 lines below.
_HEADER = next(i for i, m in enumerate(_MESSAGES) if "invoked oom-killer" in m)
CUT_REPORT = _MESSAGES[_HEADER + 1 :]
WHOLE_REPORT = _MESSAGES[_HEADER:]  # from its header on
TRIGGER = {"comm": "dashboard-servi", "pid": 4121}


def cut_report_log(path: Path, *, xids_before: int = 0, xids_in_body: int = 0) -> Path:
    """200 noise lines (and Xid lines among the last of them), the cut report (Xid lines between
    its CPU line and its first anchored line), then noise again."""
    lines = [(100.0 + i * 0.25, NOISE.format(n=i)) for i in range(200)]
    # Uptimes that only grow: one going back would read as a reboot.
    lines[-xids_before - 1 : -1] = chatter(lines[-xids_before - 1][0], xids_before, step=0.25)
    body = [(200.0, message) for message in CUT_REPORT]
    body[3:3] = chatter(200.0, xids_in_body, step=0.0)
    return xid_log(path, lines + body + [(300.0 + i, NOISE.format(n=i)) for i in range(50)])


def trigger_of(document: dict) -> dict | None:
    (episode,) = document["episodes"]
    trigger = episode["trigger"]
    return {"comm": trigger["comm"], "pid": trigger["pid"]} if trigger else None


def xid_count(document: dict) -> int:
    return sum(w["count"] for w in document["warnings"] if w["kind"] == "nvrm-xid")


def line_starts(log: Path) -> list[int]:
    data = log.read_bytes()
    return [0] + [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]


def test_a_report_cut_before_its_header_is_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The scan first handles the report at its `oom_kill_process` frame: the lines it skipped
    # before it (the CPU line, the call trace's start) are read back, so the trigger is named
    # and the report begins where it does when every line is read.
    monkeypatch.setattr(bigfile, "HEAD_LINES", 5)
    log = cut_report_log(tmp_path / "kern.log", xids_before=30, xids_in_body=20)
    fast = assert_same(log, monkeypatch)
    assert trigger_of(fast) == TRIGGER
    assert fast["episodes"][0]["lines"][0] == 201  # the CPU line
    assert xid_count(fast) == 50  # read back or counted, each Xid line once


@pytest.mark.parametrize(
    "edge", ["at the CPU line", "after the CPU line", "in the CPU line", "after the Xids"]
)
def test_a_cut_reports_body_across_a_chunk_edge(
    edge: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The chunk after the edge opens with the report's lines: the tail of the chunk before it (its
    # Xid lines counted, held back) is read back first.
    monkeypatch.setattr(bigfile, "HEAD_LINES", 5)
    log = cut_report_log(tmp_path / "kern.log", xids_before=30, xids_in_body=20)
    starts = line_starts(log)
    cpu = starts[200]  # line 201
    at = {
        "at the CPU line": cpu,
        "after the CPU line": starts[201],
        "in the CPU line": cpu + 40,
        "after the Xids": starts[223],  # after the 20 Xid lines, 5 lines before the first anchor
    }[edge]
    monkeypatch.setattr(chunks, "CHUNK_BYTES", at - starts[5])  # one edge there, the scan starts at line 6
    fast = assert_same(log, monkeypatch)
    assert trigger_of(fast) == TRIGGER
    assert xid_count(fast) == 50


def test_what_a_read_back_leaves_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Not read back: lines more than READ_BACK_LINES before the report's first handled line, and
    # lines in the chunk before the one preceding that line's chunk. A body so far back loses its
    # trigger (the CPU line); the Xid lines there are counted all the same, once.
    monkeypatch.setattr(bigfile, "HEAD_LINES", 5)
    log = cut_report_log(tmp_path / "kern.log", xids_before=30, xids_in_body=20)
    full = listing(log, False, monkeypatch)
    assert trigger_of(full) == TRIGGER
    # The first handled line is 229 (the frame); the CPU line is 201, then the Xid lines 204-223.
    monkeypatch.setattr(bigfile, "READ_BACK_LINES", 10)
    fast = listing(log, True, monkeypatch)
    assert trigger_of(fast) is None and xid_count(fast) == 50
    assert fast["episodes"][0]["lines"][0] == 224  # the call trace's title: 219-223 are Xid lines
    monkeypatch.setattr(bigfile, "READ_BACK_LINES", 1000)
    starts = line_starts(log)
    chunk_bytes = (starts[223] - starts[201]) // 2 + 1
    monkeypatch.setattr(chunks, "CHUNK_BYTES", chunk_bytes)
    chunk_of = {line: (starts[line - 1] - starts[5]) // chunk_bytes for line in (201, 229)}
    assert chunk_of[229] - chunk_of[201] >= 2  # the CPU line two chunks back or more
    fast = listing(log, True, monkeypatch)
    assert trigger_of(fast) is None and xid_count(fast) == 50


TASK_IN = (
    "Task in /kubepods/burstable/pod5f1c9e1e-7c9b-4f0e-9d0b-1a2b3c4d5e6f/0123456789ab killed as a result of "
    "limit of /kubepods/burstable/pod5f1c9e1e-7c9b-4f0e-9d0b-1a2b3c4d5e6f"
)
MEMCG_REPORT = [
    "CPU: 3 PID: 4242 Comm: java Not tainted 4.15.0-101-generic #102-Ubuntu",
    "Call Trace:",
    " dump_stack+0x63/0x8b",
    " dump_header+0x71/0x285",
    # A terminal wrapped it at 80 columns: alone, its first part is no message.
    TASK_IN[:66],
    "\n" + TASK_IN[66:],
    "memory: usage 1048576kB, limit 1048576kB, failcnt 412",
    "Memory cgroup out of memory: Kill process 4242 (java) score 1000 or sacrifice child",
    "Killed process 4242 (java) total-vm:4194304kB, anon-rss:1040000kB, file-rss:0kB, shmem-rss:0kB",
]


def test_a_wrapped_line_opening_a_cut_report_is_read_back_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its first line the scan handles is `Task in`, cut by the wrap: what it is shows only with its
    # rest, the line after it.
    monkeypatch.setattr(bigfile, "HEAD_LINES", 5)
    lines = [(100.0 + i, NOISE.format(n=i)) for i in range(50)] + [(200.0, m) for m in MEMCG_REPORT]
    log = xid_log(tmp_path / "kern.log", lines)
    log.write_text(log.read_text().replace("\n[  200.000000] \n", "\n"))
    fast = assert_same(log, monkeypatch)
    assert trigger_of(fast) == {"comm": "java", "pid": 4242}


NVRM_NO_MEMORY = "NVRM: nvCheckOkFailedNoLog: Check failed: Out of memory [NV_ERR_NO_MEMORY] (0x00000051)"


@pytest.mark.parametrize("edge", [None, "after the NVRM lines", "at the frame"])
def test_lines_of_no_report_inside_a_cut_body_are_read_back_with_it(
    edge: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # NVRM allocation failures (anchored warnings) printed between the cut report's CPU line and
    # its first anchored line: the scan handles them as they come, holding their records back,
    # and the frame has every line from the CPU line on read back, those lines too.
    monkeypatch.setattr(bigfile, "HEAD_LINES", 5)
    log = cut_report_log(tmp_path / "kern.log", xids_in_body=20)
    lines = log.read_text().splitlines(keepends=True)
    lines[203:203] = [f"[  200.000000] {NVRM_NO_MEMORY}\n"] * 3  # lines 204-206
    log.write_text("".join(lines))
    starts = line_starts(log)
    if edge is not None:
        at = starts[206] if edge == "after the NVRM lines" else starts[231]  # line 232, the frame
        monkeypatch.setattr(chunks, "CHUNK_BYTES", at - starts[5])
    fast = assert_same(log, monkeypatch)
    assert trigger_of(fast) == TRIGGER
    assert [w["count"] for w in fast["warnings"] if w["kind"] == "nvrm-no-memory"] == [3]
    assert xid_count(fast) == 20


def test_a_tasks_row_after_a_line_of_no_report_reads_the_cut_body_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A real paste cut inside its tasks table (no row holds an anchor), behind noise, with an
    # NVRM failure printed before its last row: that row (the line after an anchored one is read
    # too) opens a region that reads on to the kill, so no anchor line of the report is visited;
    # the rows before are read back all the same. Found by a differential fuzz of mutated pastes:
    # the table was read from that row on, and the story said the victim was "the only killable
    # task in the report".
    monkeypatch.setattr(bigfile, "HEAD_LINES", 5)
    paste = (REALWORLD / "dev-immortalwrt-dmesg-elided" / "input.txt").read_text().splitlines()
    rows = [line for line in paste if line.startswith("[364059.")]
    summary = next(i for i, line in enumerate(rows) if "oom-kill:" in line)
    rows.insert(summary - 1, f"[364059.197191] {NVRM_NO_MEMORY}")
    noise = [f"[{364000 + i * 0.25:14.6f}] {NOISE.format(n=i)}" for i in range(200)]
    log = tmp_path / "kern.log"
    log.write_text("\n".join([*noise, *rows]) + "\n")
    fast = assert_same(log, monkeypatch)
    assert len(fast["episodes"][0]["tasks"]) == summary


def test_records_held_back_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A run of anchored lines longer than READ_BACK_LINES is handed on as it goes (not held
    # whole); a cut report after it still has the lines since the last one handled read back.
    monkeypatch.setattr(bigfile, "HEAD_LINES", 5)
    monkeypatch.setattr(bigfile, "READ_BACK_LINES", 40)
    log = cut_report_log(tmp_path / "kern.log")
    lines = log.read_text().splitlines(keepends=True)
    lines[150:150] = [f"[  150.{i:06d}] {NVRM_NO_MEMORY}\n" for i in range(100)]
    log.write_text("".join(lines))
    held = []
    window_class = bigfile._Window

    class Watched(window_class):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            held.append(self.held)

    monkeypatch.setattr(bigfile, "_Window", Watched)
    fast = assert_same(log, monkeypatch)
    assert trigger_of(fast) == TRIGGER
    assert held and max(map(len, held)) <= 41


@pytest.mark.parametrize("row_first", [False, True], ids=["header first", "tasks row first"])
def test_a_header_after_nvrm_lines_hands_them_on_without_reading_back(
    row_first: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Mem-Info lines of no report (no anchor: the scan skips them), NVRM failures (anchored: their
    # records are held back, in case a cut report's body goes on behind them), then a whole
    # report whose header is read in the region the NVRM lines open. The builder drops body lines
    # before a header, so the lines skipped are not read back (they were, on every report of a
    # crash loop whose reports follow NVRM lines). A tasks row before the header is a report
    # line: then they are.
    monkeypatch.setattr(bigfile, "HEAD_LINES", 5)
    mem_info = _MESSAGES.index("Mem-Info:")
    stray = _MESSAGES[mem_info + 1 : mem_info + 8]  # `Mem-Info:` itself is anchored
    row = [m for m in _MESSAGES if m.startswith("[   1190]")]
    report = WHOLE_REPORT
    lines = [(100.0 + i * 0.25, NOISE.format(n=i)) for i in range(200)]
    lines += [(190.0, m) for m in stray] + [(199.0, NVRM_NO_MEMORY)] * 3
    lines += [(199.5, m) for m in row if row_first] + [(200.0, m) for m in report]
    log = xid_log(tmp_path / "kern.log", lines + [(300.0 + i, NOISE.format(n=i)) for i in range(50)])
    fast = assert_same(log, monkeypatch)
    assert trigger_of(fast) == TRIGGER
    records, _ = records_read(log, monkeypatch)
    # The noise and the Mem-Info lines are read back only with the row.
    assert (records > 200 + len(stray)) if row_first else (records < 100)


BANNER = MESSAGE_KINDS["boot-started"].example  # a real first line of a boot


@pytest.mark.parametrize(
    "banner",
    [
        pytest.param(True, id="with the boot's first line"),
        pytest.param(
            False,
            id="its first line lost",
            marks=pytest.mark.xfail(
                strict=True,
                reason="known: with no first line (a ring buffer that wrapped) the scan cannot see "
                "the reboot in the lines it skips, and the failure is said to warn of the kill",
            ),
        ),
    ],
)
def test_a_reboot_between_two_kills_is_seen_by_the_scan(
    banner: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two boots of uptime-only dmesg text, concatenated: an NVRM failure after the first boot's
    # kill, then a reboot, then a kill at an uptime past that failure's. Reading every line, the
    # uptime going back starts a second boot, and the failure, another boot's, warned of nothing.
    # The scan skipped the lines where the uptime went back: the second kill's story said the
    # failure came 3m00s before it. It reads the kernel's first line of each boot (anchored).
    monkeypatch.setattr(bigfile, "HEAD_LINES", 5)
    report = [m for m in WHOLE_REPORT if "NVRM" not in m]
    first = [(0.0, BANNER)] + [(1.0 + i * 0.25, NOISE.format(n=i)) for i in range(600)]
    first += [(200.0, m) for m in report] + [(220.0, NVRM_NO_MEMORY)]
    first += [(221.0 + i * 0.1, NOISE.format(n=i)) for i in range(100)]
    second = ([(0.0, BANNER)] if banner else []) + [(1.0 + i * 0.5, NOISE.format(n=i)) for i in range(700)]
    second += [(400.0, m) for m in report] + [(401.0 + i, NOISE.format(n=i)) for i in range(20)]
    log = xid_log(tmp_path / "kern.log", first + second)
    full = listing(log, False, monkeypatch)
    assert [i["earliest_warning"] for i in full["incidents"]] == [None, None]
    assert_same(log, monkeypatch)


@pytest.mark.parametrize(("suffix", "opener"), [(".gz", gzip.open), (".xz", lzma.open), (".bz2", bz2.open)])
def test_a_small_compressed_file_of_many_short_lines_is_scanned_in_chunks(  # type: ignore[no-untyped-def]
    suffix: str, opener, tmp_path: Path
) -> None:
    """Issue 41: a 2.3 KB .zst of 6 M short lines took 30 s (a 59.5 KB .gz 155 s): its size,
    times a guessed ratio, was under the chunk scan's threshold, so every line was read one by
    one. What a compressed file holds is measured by decompressing up to the threshold."""
    packed = tmp_path / f"kern.log{suffix}"
    kill = "Out of memory: Killed process 4242 (llama) total-vm:1000kB, anon-rss:500kB, file-rss:0kB"
    with opener(packed, "wb") as out:
        out.write(b"[    2.000000] x\n" * 200_000 + f"[    3.000000] {kill}\n".encode())
    assert packed.stat().st_size * 8 < 1024 * 1024 < 200_000 * 17  # small, but holds over a MiB
    source = KernelLogFile(str(packed), zone=UTC)
    count = sum(1 for _ in source.records())
    assert source.lines_read == 200_001 and count < 200_001 / 5  # the chunk scan: not a record a line


def test_both_paths_read_a_comm_with_spaces_tabs_and_colons_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chunk scan hands a header to the same grammar as the line-by-line read: `x<TAB>y`,
    `Web Content`, `%%{init: x}%%` are the trigger's comm whole on both paths (not `y`, `x}%%`)."""
    comms = ["x\ty", "Web Content", "%%{init: x}%%", "tmux: server", "a\u200bb"]
    lines = []
    for n, comm in enumerate(comms, 1):
        lines.append(
            f"[ {n}00.000000] {comm} invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0"
        )
        lines.append(
            f"[ {n}00.100000] Out of memory: Killed process {n} ({comm}) total-vm:1000kB, anon-rss:500kB, "
            "file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:40kB oom_score_adj:0"
        )
    log = tmp_path / "names.log"
    log.write_text("\n".join(lines) + "\n")
    document = assert_same(log, monkeypatch)
    assert [e["trigger"]["comm"] for e in document["episodes"]] == comms
    assert [e["victim"]["comm"] for e in document["episodes"]] == comms


def test_a_kill_line_wrapped_into_four_pieces_is_read_whole_by_the_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The scan read one line after a kill line: at 60 columns its rest is three, and the pieces
    # after the first were read only where they held an anchor of their own (`oom_score_adj`).
    from tests import damage

    monkeypatch.setattr(bigfile, "HEAD_LINES", 2)
    kill = next(line for line in REPORT.splitlines() if "Killed process" in line)
    wrapped = damage.wrap_terminal(60)(kill + "\n").splitlines()
    assert len(wrapped) == 4
    noise = [NOISE.format(n=n) for n in range(30)]
    log = tmp_path / "k.log"
    log.write_text("\n".join([*noise, *wrapped, *noise]) + "\n")
    (episode,) = assert_same(log, monkeypatch)["episodes"]
    victim = episode["victim"]
    assert (victim["comm"], victim["anon_rss_kb"], victim["oom_score_adj"]) == ("llama-server", 31651260, 200)
