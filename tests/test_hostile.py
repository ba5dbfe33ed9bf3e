"""Hostile and broken input: arbitrary bytes, mangled pastes, escapes. Never a traceback."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oomtrace.errors import InputError
from tests.conftest import CORPUS, EPISODE_KEYS, FIXTURES, run

REPORTS = sorted(FIXTURES.glob("*/kernel.log")) + (
    sorted(CORPUS.glob("oomanalyser/*.txt")) + sorted(CORPUS.glob("peers/*")) if CORPUS.is_dir() else []
)
KILL = re.compile(r"Killed process (\d+)")
SETTINGS = settings(
    max_examples=int(__import__("os").environ.get("OOMTRACE_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def list_json(path: Path) -> dict | None:
    """`oomtrace list --format json` on a file: the document, or None for a clean exit-2 refusal."""
    result = run("list", "-k", str(path), "--format", "json", "--tz", "UTC", "--year", "2026")
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        assert result.stderr.startswith("oomtrace: error: ") and result.stderr.count("\n") == 1
        return None
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["schema"] == "oomtrace/1"
    for episode in document["episodes"]:
        assert set(episode) >= EPISODE_KEYS
    return document


def reported_pids(document: dict | None) -> set[int]:
    if document is None:
        return set()
    return {e["victim"]["pid"] for e in document["episodes"] if e["victim"]}


@SETTINGS
@given(data=st.binary(max_size=4096))
def test_arbitrary_bytes(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "blob"
    path.write_bytes(data)
    list_json(path)


@SETTINGS
@given(text=st.text(max_size=2048))
def test_arbitrary_text(tmp_path: Path, text: str) -> None:
    path = tmp_path / "text.log"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    list_json(path)


def _mutate(lines: list[str], other: list[str], choice: int, position: int) -> list[str]:
    """One of the ways real pastes get mangled; `position` picks where."""
    at = position % (len(lines) + 1)
    if choice == 0:  # a line dropped
        return lines[:at] + lines[at + 1 :]
    if choice == 1:  # lines duplicated
        return lines[:at] + lines[at : at + 3] + lines[at:]
    if choice == 2:  # lines of another report interleaved
        return lines[:at] + other[: 1 + position % 40] + lines[at:]
    if choice == 3:  # CRLF endings
        return [line + "\r" for line in lines]
    if choice == 4:  # tabs in place of the indentation
        return [line.replace("  ", "\t") for line in lines]
    if choice == 5:  # NUL bytes (a crash leaves runs of them)
        return [*lines[:at], "\x00" * (position % 300), *lines[at:]]
    if choice == 6:  # a 1 MB line
        return [*lines[:at], "x" * 1000000, *lines[at:]]
    if choice == 7:  # time going backwards: the halves swapped
        return lines[at:] + lines[:at]
    if choice == 8:  # two boots in one file
        return lines + lines
    if choice == 9:  # the ring buffer starts mid-report
        return lines[at:]
    return lines


@SETTINGS
@given(
    report=st.sampled_from(REPORTS),
    other=st.sampled_from(REPORTS),
    mutations=st.lists(st.tuples(st.integers(0, 9), st.integers(0, 10_000)), min_size=1, max_size=3),
)
def test_mutated_reports_keep_every_surviving_kill(
    tmp_path: Path, report: Path, other: Path, mutations: list[tuple[int, int]]
) -> None:
    original = report.read_text(errors="replace").splitlines()
    lines = original
    for choice, position in mutations:
        lines = _mutate(lines, other.read_text(errors="replace").splitlines(), choice, position)
    path = tmp_path / "mutated.log"
    path.write_text("\n".join(lines) + "\n", errors="surrogatepass")
    document = list_json(path)
    # A kill line that survived byte for byte is still reported with the same pid.
    survivors = {line.rstrip("\r") for line in lines} & set(original)
    expected = {int(m.group(1)) for line in survivors if (m := KILL.search(line))}
    assert expected <= reported_pids(document)


def test_invalid_utf8_inside_a_report(tmp_path: Path) -> None:
    data = (FIXTURES / "seed000_llama_server_gb10" / "kernel.log").read_bytes()
    path = tmp_path / "latin1.log"
    path.write_bytes(data.replace(b"dashboard-servi", b"dashb\xff\xfe-servi"))
    assert reported_pids(list_json(path)) == {1966928}


def test_terminal_wrap_padding_inside_numbers(tmp_path: Path) -> None:
    text = (FIXTURES / "seed000_llama_server_gb10" / "kernel.log").read_text()
    path = tmp_path / "wrapped.log"
    path.write_text(text.replace("anon-rss:31651260kB", "anon-rss:31651260      kB"))
    document = list_json(path)
    assert document is not None
    assert document["episodes"][0]["victim"]["anon_rss_kb"] == 31651260


@pytest.mark.parametrize(
    "needle",
    [
        "Killed process 1 (",
        "invoked oom-killer: gfp_mask=0x1,",
        "a:1",
        "Node 0 DMA free:1kB",
        "[ 1] ",
        "oom-kill:",
        "NVRM: Xid (",
        "Kill process 1 (",
    ],
)
def test_a_pathological_megabyte_line_is_read_in_linear_time(tmp_path: Path, needle: str) -> None:
    # Each line is built to make a backtracking regex explode; parsing must stay linear.
    hostile = needle + ("a:1" * 50_000) + ("(" * 100_000) + ")" + ("1 " * 100_000)
    path = tmp_path / "hostile.log"
    path.write_text(f"[ 1.0] {hostile}\n" * 3)
    started = time.monotonic()
    list_json(path)
    assert time.monotonic() - started < 20, "parsing must not backtrack on long lines"


@pytest.mark.parametrize(
    "evil",
    [
        "\x1b[31mred\x1b[0m",
        "\x1b]8;;http://x\x07link\x1b]8;;\x07",
        "\x1b]0;title\x07",
        "a\rb",
        "\x9b31m",
        "\u202egnp.exe",
        "\x08\x08",
        "[red]markup[/red]",
    ],
)
def test_escapes_in_log_text_are_inert_in_the_terminal(tmp_path: Path, evil: str) -> None:
    text = (FIXTURES / "real_memcg_v1_6.18" / "kernel.log").read_text()
    path = tmp_path / "evil.log"
    path.write_text(text.replace("oomprobe-hog", f"hog{evil}"), errors="surrogatepass")
    for command in (["list"], ["why", "2110"]):
        result = run(*command, "-k", str(path))
        assert result.exit_code == 0, result.output
        for char in ("\x1b", "\x07", "\r", "\x9b", "\u202e", "\x08"):
            assert char not in result.stdout
        if evil.startswith("["):
            assert evil in result.stdout


def test_lone_surrogates_in_journal_json_do_not_break_output(tmp_path: Path) -> None:
    entry = '{"MESSAGE": "Out of memory: Killed process 5 (x\\ud800) total-vm:1kB, anon-rss:1kB, file-rss:0kB", "_TRANSPORT": "kernel", "__REALTIME_TIMESTAMP": "1794661932000000"}'
    path = tmp_path / "journal.json"
    path.write_text(entry + "\n")
    assert reported_pids(list_json(path)) == {5}


def test_a_log_with_a_crash_hole_of_nuls_is_still_read(tmp_path: Path) -> None:
    data = (FIXTURES / "real_memcg_v1_6.18" / "kernel.log").read_bytes()
    path = tmp_path / "holes.log"
    path.write_bytes(data[:200] + b"\x00" * 1000 + data[200:])
    assert 2110 in reported_pids(list_json(path))


@pytest.mark.parametrize(
    "case", sorted((Path(__file__).parent / "corpus").glob("*.log")), ids=lambda p: p.name
)
def test_regression_corpus(case: Path) -> None:
    """Every input that once broke oomtrace, kept so it never does again."""
    expected_file = case.with_suffix(".pids")
    document = list_json(case)
    if expected_file.exists():
        expected = {int(x) for x in expected_file.read_text().split()}
        assert reported_pids(document) == expected


def test_input_error_is_the_base_for_source_failures() -> None:
    assert issubclass(InputError, Exception)


@pytest.mark.parametrize(
    "invisible", ["\u200b", "\u200d", "\u2060", "\ufeff", "\u200e", "\u200f", "\u061c", "\U000e0041"]
)
def test_invisible_characters_in_a_name_are_shown_as_escapes(invisible: str) -> None:
    from oomtrace.sanitize import inert

    name = f"ll{invisible}ama-server"
    shown = inert(name)
    assert invisible not in shown and shown.startswith("ll\\") and shown.endswith("ama-server")


@pytest.mark.parametrize(
    "args, words",
    [
        (("--tz", "../../etc/passwd"), "unknown time zone '../../etc/passwd'"),
        (("--tz", "A" * 5000), "unknown time zone 'AAAA"),
        (("--year", "99999999999999999999"), "--year that long is not a year a log can hold"),
        (("--year", "1969"), "--year 1969 is not a year a log can hold"),
        (("-k", "/proc/self/mem"), "cannot read /proc/self/mem: Input/output error"),
    ],
)
def test_bad_options_and_unreadable_files_are_one_line_errors(args: tuple[str, ...], words: str) -> None:
    result = run("list", "-k", str(FIXTURES / "real_memcg_v1_6.18" / "kernel.log"), *args)
    assert result.exit_code == 2, result.output
    assert "internal error" not in result.output and "Traceback" not in result.output
    assert words in result.stderr
    assert result.stderr.startswith("oomtrace: error: ") and result.stderr.count("\n") == 1


def test_a_failed_write_leaves_no_partial_file(tmp_path: Path) -> None:
    import os
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs that fills up")
    full = tmp_path / "full"
    full.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(full)], check=True)
    try:
        (full / "report.json").write_text("the previous report\n")
        log = FIXTURES / "seed002_ds4_server_gb10" / "kernel.log"
        result = run("report", "-k", str(log), "--format", "json", "-o", str(full / "report.json"))
        assert result.exit_code == 2, result.output
        assert "No space left on device" in result.stderr
        assert (full / "report.json").read_text() == "the previous report\n"
        assert sorted(p.name for p in full.iterdir()) == ["report.json"]
        result = run("list", "-k", str(log), "-o", str(full / "list.txt"))
        listed = (full / "list.txt").read_text()
        # The footer names the log's path: where the checkout's path is long it wraps anywhere.
        assert result.exit_code == 0 and "124531" in listed and "4 OOM episode(s)" in " ".join(listed.split())
    finally:
        subprocess.run(["umount", str(full)], check=True)


@pytest.mark.parametrize(
    "command", [("list",), ("why", "llam\u00e1-\u670d\u52a1"), ("report", "--format", "markdown")]
)
def test_an_ascii_only_output_gets_escapes_not_an_error(tmp_path: Path, command: tuple[str, ...]) -> None:
    import os
    import subprocess
    import sys

    log = tmp_path / "unicode.log"
    text = (FIXTURES / "real_memcg_v1_6.18" / "kernel.log").read_text()
    log.write_text(text.replace("oomprobe-hog", "llam\u00e1-\u670d\u52a1"))
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "COLUMNS": "100"}
    for form in ("text", "json"):
        done = subprocess.run(
            [sys.executable, "-m", "oomtrace", *command, "-k", str(log), "--format", form]
            if "--format" not in command
            else [sys.executable, "-m", "oomtrace", *command, "-k", str(log)],
            env=env,
            capture_output=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stderr == b""
        assert b"llam\\xe1-\\u670d" in done.stdout or b"llam\\u00e1-\\u670d" in done.stdout
        if form == "json" and "--format" not in command:
            assert json.loads(done.stdout)["schema"] == "oomtrace/1"


def test_absurd_journal_json_values_lose_only_their_own_record(tmp_path: Path) -> None:
    kill = (
        "Out of memory: Killed process {} (x) total-vm:1kB, anon-rss:1kB, file-rss:0kB, shmem-rss:0kB, "
        "UID:0 pgtables:4kB oom_score_adj:0"
    )

    def entry(pid: int, **fields: str) -> str:
        base = {
            "__REALTIME_TIMESTAMP": "1763125000000000",
            "_TRANSPORT": "kernel",
            "MESSAGE": kill.format(pid),
        }
        return json.dumps({**base, **fields})

    lines = [
        entry(1),
        '{"MESSAGE": ' + "[" * 20_000 + "]" * 20_000 + "}",  # deeper than json's recursion limit
        entry(2, __REALTIME_TIMESTAMP="9" * 400),
        entry(3, __REALTIME_TIMESTAMP="\u00b9\u00b2\u00b3"),
        entry(4, __REALTIME_TIMESTAMP="9" * 19),  # past year 9999
        entry(5),
    ]
    log = tmp_path / "journal.json"
    log.write_text("\n".join(lines) + "\n")
    document = list_json(log)
    assert document is not None
    assert sorted(reported_pids(document)) == [1, 2, 3, 4, 5]
    timed = {e["victim"]["pid"]: e["time"] for e in document["episodes"]}
    assert timed[1] and timed[5] and not timed[2] and not timed[3] and not timed[4]
    assert document["source"]["records"] == 6


def test_a_5000_digit_pid_is_not_understood_not_an_error(tmp_path: Path) -> None:
    # Python refuses to turn more than 4,300 digits into an int: the line is reported as not
    # understood, and the rest of the report still gives its kill.
    text = (FIXTURES / "real_memcg_v1_6.18" / "kernel.log").read_text()
    huge = "9" * 5000
    log = tmp_path / "k.log"
    log.write_text(text.replace("Killed process 2110", f"Killed process {huge}"))
    document = list_json(log)
    assert document is not None
    [episode] = document["episodes"]
    assert episode["victim"]["pid"] == 2110  # from the oom-kill summary
    assert document["source"]["unparsed_oom_lines"] == 1


def test_a_stamp_dateutil_reads_with_an_impossible_offset_is_no_stamp(tmp_path: Path) -> None:
    """Found by the fuzzer (a mutated real paste): `20+25` in a dmesg -T stamp is read by dateutil
    as the year 20 with an offset of +25 hours, which no datetime can hold. The line is read, its
    kill found, without a time, and nothing raises."""
    log = tmp_path / "mangled.log"
    log.write_text(
        "[Sun Mar 30 08:24:00 20+25] Out of memory: Killed process 7899 (python) total-vm:26,184,840kB, "
        "anon-rss:153,700,88kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:4kB oom_score_adj:0\n"
    )
    result = run("list", "-k", str(log), "--format", "json", "--tz", "UTC")
    assert result.exit_code == 0, result.output
    (episode,) = json.loads(result.stdout)["episodes"]
    assert episode["victim"]["pid"] == 7899


@pytest.mark.parametrize("command", [("list",), ("why", "2110"), ("report",)])
def test_json_escapes_invisible_characters_and_keeps_backslashes(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """README: control characters are escaped in JSON. A bidi override, a zero-width space, the
    line separator and the 8-bit CSI are written as `\\u` escapes; a name's own backslashes stay."""
    name = "h\\o\\-g\u202eexe\u200bx\u2028y\x9bz"
    text = (FIXTURES / "real_memcg_v1_6.18" / "kernel.log").read_text()
    path = tmp_path / "evil.log"
    path.write_text(text.replace("oomprobe-hog", name))
    result = run(*command, "-k", str(path), "--format", "json", "--tz", "UTC")
    assert result.exit_code == 0, result.output
    for char in ("\u202e", "\u200b", "\u2028", "\x9b"):
        assert char not in result.stdout
    assert "\\u202e" in result.stdout and "\\u2028" in result.stdout and "\\u009b" in result.stdout
    # `"h\\\\o\\\\-g\\u202e...`: the name as JSON writes it, so it reads back whole, every backslash and
    # the zero-width space kept (a copy's invisible characters are dropped only before a line).
    assert json.dumps(name)[1:-1] in result.stdout


def test_an_uptime_past_the_years_a_date_holds_learns_no_boot_time(tmp_path: Path) -> None:
    """fuzz/fuzz_lines.py found it: an ISO stamp and an uptime of 392915700597 s (12,000 years)
    on one line was an OverflowError; now that line teaches no boot time, and the kill's own
    stamps still date it."""
    report = (FIXTURES / "real_memcg_v1_6.18" / "kernel.log").read_text().splitlines()
    lines = ["2023-12-04T10:49:30.127Z gpu1 kernel: [392915700597.28] usb 1-1: new device"]
    lines += [f"2023-12-04T10:49:31.000Z gpu1 kernel: {line}" for line in report]
    path = tmp_path / "overflow.log"
    path.write_text("\n".join(lines) + "\n")
    result = run("list", "-k", str(path), "--format", "json", "--tz", "UTC")
    assert result.exit_code == 0, result.output
    episodes = json.loads(result.stdout)["episodes"]
    assert len(episodes) == 1 and episodes[0]["time"].startswith("2023-12-04T10:49:3")


# ---- names: a comm whole, and shown so that two names never print alike (issue 41) -------------
# The kernel's comm is up to 15 bytes and may hold spaces, tabs, `: ` and `# ` (Firefox's `Web
# Content` and `Isolated Web Co`, tmux's `tmux: server`, `(sd-pam)`, `kworker/u16:2`).
_NAMED_KILL = (
    "Out of memory: Killed process {pid} ({victim}) total-vm:1000kB, anon-rss:500kB, file-rss:0kB, "
    "shmem-rss:0kB, UID:0 pgtables:40kB oom_score_adj:0"
)
_NAMED_HEADER = (
    "{trigger} invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, oom_score_adj=0"
)


def _named_log(path: Path, pairs: list[tuple[str, str]], prefix: str = "[ {n}00.000000] ") -> Path:
    lines = []
    for n, (trigger, victim) in enumerate(pairs, 1):
        lines.append(prefix.format(n=n) + _NAMED_HEADER.format(trigger=trigger))
        lines.append(prefix.format(n=n) + _NAMED_KILL.format(pid=4000 + n, victim=victim))
    path.write_text("\n".join(lines) + "\n")
    return path


def _comms(path: Path) -> list[tuple[str, str]]:
    result = run("list", "-k", str(path), "--format", "json", "--tz", "UTC")
    assert result.exit_code == 0, result.output
    episodes = json.loads(result.stdout)["episodes"]
    return [((e["trigger"] or {}).get("comm"), (e["victim"] or {}).get("comm")) for e in episodes]


_WHOLE_COMMS = [
    "x\ty",  # /tmp/atk/names.log: read as `y`
    "%%{init: x}%%",  # read as `x}%%`
    "tmux: server",
    "Web Content",
    "Isolated Web Co",
    "# heading",
    "(sd-pam)",
    "kworker/u16:2",
    "x\\x09y\\xe2\\x80\\x8bz",  # /dev/kmsg's escapes: 5 bytes, not 19 characters
    "gmain",
]


@pytest.mark.parametrize(
    "prefix",
    [
        "[ {n}00.000000] ",
        "Nov 14 13:12:{n:02d} gpu1 kernel: ",
        "Nov 14 13:12:{n:02d} gpu1 kernel: [ {n}00.5] ",
    ],
    ids=["dmesg", "syslog", "kern.log"],
)
def test_a_header_comm_is_the_whole_text_before_invoked(tmp_path: Path, prefix: str) -> None:
    pairs = [(comm, "victim") for comm in _WHOLE_COMMS]
    path = _named_log(tmp_path / "names.log", pairs, prefix)
    triggers = [t for t, _ in _comms(path)]
    assert triggers == _WHOLE_COMMS
    for cut in ("y", "x}%%", "server", "Content", "Web Co", "heading"):
        assert cut not in triggers


def test_a_run_longer_than_a_comm_before_invoked_holds_a_prefix(tmp_path: Path) -> None:
    """More than 15 bytes before ` invoked oom-killer` is no comm: a prefix no grammar read (a
    shipper's host and tag, a printk caller id) stands before the name, cut at its separator."""
    path = tmp_path / "prefixed.log"
    path.write_text(
        "[ 100.000000] gpu-node-17 | web: python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0\n"
        "[ 100.000000] " + _NAMED_KILL.format(pid=1, victim="python3") + "\n"
        "[ 200.000000][T31878] date invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0\n"
        "[ 200.000000][T31878] " + _NAMED_KILL.format(pid=2, victim="date") + "\n"
        "[ 300.000000][  T1234] Web Content invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0\n"
        "[ 300.000000][  T1234] " + _NAMED_KILL.format(pid=3, victim="Web Content") + "\n"
    )
    assert _comms(path) == [("python3", "python3"), ("date", "date"), ("Web Content", "Web Content")]


def test_a_real_comm_with_a_colon_and_a_space_is_read_whole() -> None:
    """tests/realworld/cases/paste-btrfs-fio-qp-garbled-adj: `tmux: server invoked oom-killer`
    (tmux names its server process so) was read as `server`."""
    case = Path(__file__).parent / "realworld" / "cases" / "paste-btrfs-fio-qp-garbled-adj" / "input.txt"
    triggers = [t for t, _ in _comms(case)]
    assert "tmux: server" in triggers and "server" not in triggers


_UNSEEN_NAMES = {
    "a\u200bb\ufeffc": "a\\u200bb\\ufeffc",  # /tmp/atk/names.log: shown as `abc`
    "\u3164\u034f\ufe0f": "\\u3164\\u034f\\ufe0f",  # shown raw: a Hangul filler draws nothing
    "ll\u200eama": "ll\\u200eama",
    "a\u2003b": "a\\u2003b",  # an em space is not a space
    "\u115fx": "\\u115fx",
    "x\ty": "x\\x09y",  # a tab is not the spaces a terminal draws for it
}


@pytest.mark.parametrize("name", _UNSEEN_NAMES, ids=[repr(n) for n in _UNSEEN_NAMES])
def test_an_invisible_code_point_in_a_name_is_shown_escaped_everywhere(tmp_path: Path, name: str) -> None:
    shown = _UNSEEN_NAMES[name]
    path = _named_log(tmp_path / "names.log", [("trigger", name), ("other", "abc")])
    assert [v for _, v in _comms(path)] == [name, "abc"]  # JSON keeps the exact string
    for args in (
        ("list",),
        ("list", "--format", "markdown"),
        ("why", "4001"),
        ("why", "4001", "-f", "markdown"),
    ):
        out = run(*args, "-k", str(path)).stdout
        # Markdown escapes the escape's backslash (`x\\x09y` renders as `x\x09y`).
        assert (shown.replace("\\", "\\\\") if "markdown" in args else shown) in out, (args, out)
        # A raw log line quoted in a code block keeps its tabs; nothing else does.
        outside = re.sub(r"```text\n.*?```", "", out, flags=re.DOTALL)
        for char in name:
            assert (char.isascii() or char not in out) and (char != "\t" or char not in outside), (args, char)
    document = run("why", "4001", "-k", str(path), "--format", "json").stdout
    for char in name:
        assert char.isascii() or (char not in document and f"\\u{ord(char):04x}" in document)
    assert json.loads(document)["episode"]["victim"]["comm"] == name


def test_every_format_space_and_separator_code_point_is_escaped() -> None:
    """One rule (sanitize.py) for every invisible code point: all of Unicode's Cf, Zs but the
    space, Zl and Zp, and the blank-drawing letters and marks."""
    import sys
    import unicodedata

    from oomtrace.sanitize import inert

    blank = "\u115f\u1160\u3164\uffa0\u034f\ufe00\ufe0f\U000e0100\u180b\u2800"
    for code in [*range(0x30000), *range(0xE0000, 0xE1000)]:
        char = chr(code)
        if (unicodedata.category(char) in ("Cc", "Cf", "Zs", "Zl", "Zp") and char != " ") or char in blank:
            assert inert(char).startswith("\\"), (hex(code), unicodedata.unidata_version, sys.version)
    assert inert("Web Content ü é 日本 Ω") == "Web Content ü é 日本 Ω"


def test_a_name_shaped_as_markup_stays_inert_in_markdown_and_mermaid(tmp_path: Path) -> None:
    """A victim `%%{init: x}%%` (a Mermaid directive), a trigger `# heading`: text shows them as
    they are; Markdown never starts a heading with one nor lets one into a chart as a directive."""
    case = FIXTURES / "seed000_llama_server_gb10"
    text = (case / "kernel.log").read_text()
    path = tmp_path / "kernel.log"
    path.write_text(text.replace("llama-server", "%%{init: x}%%").replace("dashboard-servi", "# heading"))
    why = run("why", "%%{init: x}%%", "-k", str(path), "--tz", "UTC").stdout
    assert "%%{init: x}%%" in why and "# heading" in why
    for args in (("why", "%%{init: x}%%"), ("report",)):
        markdown = run(*args, "-k", str(path), "--tz", "UTC", "--format", "markdown").stdout
        assert "```mermaid" in markdown
        assert "\\# heading" in markdown
        for line in markdown.splitlines():
            assert not line.lstrip("> ").startswith(("# heading", "%%{init: x", "\\%%{init"))
        charts = re.findall(r"```mermaid\n(.*?)```", markdown, re.DOTALL)
        for chart in charts:
            assert "%%{init: x" not in chart and "# heading" not in chart
            assert all(not line.startswith("%%") or "themeVariables" in line for line in chart.splitlines())
