"""Memory stays bounded whatever the input: many kills, huge tables, endless lines (issue 12).

Each case is a small generator, not a big fixture. The bounds are made small here (a few kept
kills, a 4 KiB read-ahead for the fast path) so that a test of the rule runs in seconds; bench/
measures the real sizes (200,000 kills, a 1 GiB line) and their peak memory.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from oomtrace import episodes, story
from oomtrace.episodes import build
from oomtrace.formats.markdown import GITHUB_LIMIT
from tests.conftest import FIXTURES, run

REPORT = (FIXTURES / "seed000_llama_server_gb10" / "kernel.log").read_text().splitlines()
MEMCG = (FIXTURES / "real_memcg_v1_6.18" / "kernel.log").read_text().splitlines()


def crash_loop(path: Path, kills: int, gap_s: int = 3600) -> Path:
    """`kills` copies of a real memcg report an hour (or `gap_s`) apart, each with its own pid
    (`journalctl -k -o short-iso`)."""
    lines = []
    start = datetime(2026, 11, 1, tzinfo=UTC)
    for n in range(kills):
        stamp = f"{start + timedelta(seconds=gap_s * n):%Y-%m-%dT%H:%M:%S}+0000 gpu1 kernel:"
        for line in MEMCG:
            message = line.split("] ", 1)[1]
            lines.append(f"{stamp} {message.replace('2110', str(10_000 + n))}")
    path.write_text("\n".join(lines) + "\n")
    return path


def list_doc(*args: str) -> dict:
    result = run("list", *args, "--format", "json", "--tz", "UTC")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def few_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build, "KEPT_FIRST", 3)
    monkeypatch.setattr(build, "KEPT_LAST", 4)


def test_a_crash_loop_keeps_its_first_and_last_kills_and_counts_the_rest(
    tmp_path: Path, few_kept: None
) -> None:
    log = crash_loop(tmp_path / "loop.log", 20)
    document = list_doc("-k", str(log))
    ids = [e["id"] for e in document["episodes"]]
    pids = [e["victim"]["pid"] for e in document["episodes"]]
    # The first 3 and the last 4 kept, numbered as in the whole log.
    assert ids == [1, 2, 3, 17, 18, 19, 20]
    assert pids == [10_000, 10_001, 10_002, 10_016, 10_017, 10_018, 10_019]
    elided = document["source"]["elided"]
    assert elided["kills"] == 13
    assert elided["victims"] == [{"comm": "oomprobe-hog", "kills": 13}]
    assert elided["first"]["time"].startswith("2026-11-01T03:00")
    assert "narrow the range with --since/--until" in elided["note"]
    text = run("list", "-k", str(log), "--tz", "UTC")
    assert "13 kills (2026-11-01 03:00:00+00:00 to 2026-11-01 15:00:00+00:00)" in " ".join(
        text.stdout.split()
    )


def test_a_narrower_range_brings_back_the_kills_not_kept(tmp_path: Path, few_kept: None) -> None:
    log = crash_loop(tmp_path / "loop.log", 20)
    document = list_doc("-k", str(log), "--since", "2026-11-01 07:30", "--until", "2026-11-01 10:30")
    assert [e["victim"]["pid"] for e in document["episodes"]] == [10_008, 10_009, 10_010]
    assert document["source"]["elided"] is None
    assert document["source"]["range"]["kills_outside"] == 17


def test_why_and_report_say_what_was_not_kept(tmp_path: Path, few_kept: None) -> None:
    log = crash_loop(tmp_path / "loop.log", 12)
    for command in (("why", "oomprobe-hog", "--all"), ("report",)):
        for form in ("text", "markdown", "json"):
            result = run(*command, "-k", str(log), "--tz", "UTC", "--format", form)
            assert result.exit_code == 0, result.output
            assert "were counted, not kept, to bound memory" in " ".join(result.stdout.split())


def test_warning_runs_of_a_crash_loop_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build, "KEPT_RECORDS", 5)
    monkeypatch.setattr(build, "KEPT_FIRST", 5)
    monkeypatch.setattr(build, "KEPT_LAST", 5)
    nvrm = "NVRM: nvCheckOkFailedNoLog: Check failed: Out of memory [NV_ERR_NO_MEMORY] (0x00000051)"
    lines = []
    for n in range(30):
        lines.append(f"[{1000 + 3600 * n - 200}.000000] {nvrm}")
        lines.append(
            f"[{1000 + 3600 * n}.000000] Out of memory: Killed process {5000 + n} (llama-server) "
            "total-vm:164222812kB, anon-rss:31651260kB, file-rss:8420kB, shmem-rss:0kB, UID:1000 "
            "pgtables:63896kB oom_score_adj:200"
        )
    log = tmp_path / "loop.log"
    log.write_text("\n".join(lines) + "\n")
    document = list_doc("-k", str(log))
    assert len(document["warnings"]) == 10
    assert document["source"]["elided"]["warning_runs"] == 20
    # Each kept kill still has its own warning, 200 s before it.
    last = document["incidents"][-1]
    assert last["lead_time_s"] == 200


def big_table(path: Path, rows: int) -> Path:
    """The real memcg report with `rows` small tasks added before the victim's row."""
    at = next(i for i, line in enumerate(MEMCG) if "pgtables_bytes" in line) + 1
    filler = [
        f"[   53.459398] [ {20000 + i}]     0 {20000 + i}     1000      {100 + i % 50}      100        0         "
        f"0    40960        0             0 worker-{i}"
        for i in range(rows)
    ]
    path.write_text("\n".join(MEMCG[:at] + filler + MEMCG[at:]) + "\n")
    return path


@pytest.mark.parametrize("path", ["line", "fast"])
def test_a_huge_tasks_table_keeps_the_victim_the_top_rows_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    if path == "fast":
        pytest.importorskip("hyperscan")
        monkeypatch.setenv("OOMTRACE_FAST_MIN_BYTES", "1")
    log = big_table(tmp_path / "big.log", 30_000)
    [episode] = list_doc("-k", str(log))["episodes"]
    assert len(episode["tasks"]) <= 2 * episodes.MAX_TASK_ROWS
    assert any(row["pid"] == 2110 for row in episode["tasks"])
    assert episode["trimmed"] and "of 30,001 rows kept" in episode["trimmed"][0]
    why = run("why", "oomprobe-hog", "-k", str(log), "--format", "json")
    assert json.loads(why.stdout)["episode"]["ranking"]["victim_rank"] == 1


# Runs oomtrace as its only child and prints that child's peak RSS (KiB) last, on stderr: the
# figure is then oomtrace's own, not the largest of every process this test run has waited for.
_MEASURE = """
import resource, subprocess, sys
done = subprocess.run([sys.executable, "-m", "oomtrace", *sys.argv[1:]], check=False)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
"""


def _peak_mb(*args: str, stdin: Path | None = None) -> tuple[int, str]:
    """Run oomtrace in a child process: its peak resident memory in MB, and its output."""
    with open(stdin or "/dev/null", "rb") as feed:
        done = subprocess.run(
            [sys.executable, "-c", _MEASURE, *args], stdin=feed, capture_output=True, text=True, check=False
        )
    assert "Traceback" not in done.stderr
    errors, _, peak = done.stderr.rstrip("\n").rpartition("\n")
    return int(peak) // 1024, done.stdout + (errors + "\n" if errors else "")


@pytest.mark.parametrize("path", ["line", "fast", "stdin"])
def test_a_line_of_64_mib_is_cut_while_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    log = tmp_path / "long.log"
    with log.open("wb") as out:
        out.write(("\n".join(MEMCG[:4]) + "\n").encode())
        out.write(b"[   10.000000] " + b"A" * (64 << 20) + b"\n")
        out.write(("\n".join(MEMCG[4:]) + "\n").encode())
    if path == "fast":
        monkeypatch.setenv("OOMTRACE_FAST_MIN_BYTES", "1")  # the child inherits it
    args = ["list", "--tz", "UTC", "--format", "json"] + ([] if path == "stdin" else ["-k", str(log)])
    peak, output = _peak_mb(*args, stdin=log if path == "stdin" else None)
    document = json.loads(output[: output.rindex("}") + 1])
    assert [e["victim"]["pid"] for e in document["episodes"]] == [2110]
    [problem] = document["source"]["problems"]
    assert problem["problem"].startswith("1 line longer than 64 KiB cut to it while reading (")
    # The line is 15 bytes of stamp and 64 MiB of text; 64 KiB of it were kept.
    assert f"({(64 << 20) + 15 - 64 * 1024:,} bytes skipped)" in problem["problem"]
    # The line alone is 64 MiB: held whole, the peak would pass it.
    assert peak < 60, f"peak RSS {peak} MB"


@pytest.mark.parametrize("make", ["dev-zero", "gzip-of-zeros", "nul-file"])
def test_input_with_no_line_break_in_its_first_mib_is_not_a_log(tmp_path: Path, make: str) -> None:
    if make == "dev-zero":
        source = "/dev/zero"
    elif make == "gzip-of-zeros":
        source = str(tmp_path / "zeros.gz")
        with gzip.open(source, "wb") as out:
            out.write(b"\0" * (8 << 20))
    else:
        source = str(tmp_path / "nul.log")
        Path(source).write_bytes(b"\0" * (3 << 20))
    peak, output = _peak_mb("list", "-k", source)
    assert output.startswith("oomtrace: error: ") and output.count("\n") == 1, output
    assert "has no line break in its first 1 MiB: not a text kernel log" in output
    assert peak < 60


def test_report_counts_every_kill_of_the_log_and_says_how_many_were_kept(
    tmp_path: Path, few_kept: None
) -> None:
    log = crash_loop(tmp_path / "loop.log", 20)
    document = json.loads(run("report", "-k", str(log), "--tz", "UTC", "--format", "json").stdout)
    counts = document["counts"]
    assert counts["kills"] == 20 and counts["kept_kills"] == 7
    assert counts["by_victim"] == {"oomprobe-hog": 20}
    assert counts["by_cause"] == {"cgroup-oom": 20}
    assert counts["kept_incidents"] == len(document["incidents"]) and counts["incidents"] == 20
    for form in ("text", "markdown"):
        said = " ".join(run("report", "-k", str(log), "--tz", "UTC", "--format", form).stdout.split())
        assert "20 kill(s) in 20 incident(s), 7 of the kills kept whole and told in" in said
        assert "7 kill(s)" not in said


def test_why_a_kill_summarised_in_the_middle_reads_the_seconds_around_it_again(
    tmp_path: Path, few_kept: None
) -> None:
    log = crash_loop(tmp_path / "loop.log", 20)
    result = run("why", "10008", "-k", str(log), "--tz", "UTC", "--format", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["episode"]["victim"]["pid"] == 10_008
    assert document["episode"]["time"].startswith("2026-11-01T08:00:00")
    assert "no OOM kill" not in result.stderr
    assert "was summarised" in result.stderr
    assert "--since '2026-11-01 07:59:59+00:00' --until '2026-11-01 08:00:01+00:00'" in result.stderr
    # A victim's name found only among the summarised kills is read again the same way.
    lines = log.read_text().splitlines()
    middle = slice(10 * len(MEMCG), 11 * len(MEMCG))
    lines[middle] = [line.replace("oomprobe-hog", "middle-hog") for line in lines[middle]]
    log.write_text("\n".join(lines) + "\n")
    named = run("why", "middle-hog", "-k", str(log), "--tz", "UTC", "--format", "json")
    assert named.exit_code == 0, named.output
    assert json.loads(named.stdout)["episode"]["victim"]["pid"] == 10_010


def test_why_a_summarised_kill_from_standard_input_says_how_to_pipe_it_again(
    tmp_path: Path, few_kept: None
) -> None:
    """Issue 41: `cat log | why <middle pid>` tried to read standard input a second time
    (internal error: 'peek of closed file'). A pipe is read once: say the range to pipe it with."""
    log = crash_loop(tmp_path / "loop.log", 20)
    result = run("why", "10008", "-k", "-", "--tz", "UTC", input=log.read_text())
    assert result.exit_code == 1 and result.stdout == ""
    said = " ".join(result.stderr.split())
    assert "internal error" not in said and "no OOM kill" not in said
    assert (
        "the kill of '10008' is in the log (line " in said and "standard input cannot be read twice" in said
    )
    assert said.endswith("--since '2026-11-01 07:59:59+00:00' --until '2026-11-01 08:00:01+00:00'")
    again = run(
        "why", "10008", "-k", "-", "--tz", "UTC", "--since", "2026-11-01 07:59:59+00:00",
        "--until", "2026-11-01 08:00:01+00:00", "--format", "json", input=log.read_text(),
    )  # fmt: skip
    assert json.loads(again.stdout)["episode"]["victim"]["pid"] == 10_008


def test_why_a_summarised_kill_without_a_wall_time_says_where_it_is(tmp_path: Path, few_kept: None) -> None:
    lines = []
    for n in range(20):
        for line in MEMCG:
            stamp, message = line.split("] ", 1)
            uptime = float(stamp.strip("[ ")) + 3600 * n
            lines.append(f"[{uptime:12.6f}] {message.replace('2110', str(10_000 + n))}")
    log = tmp_path / "loop.log"
    log.write_text("\n".join(lines) + "\n")
    result = run("why", "10008", "-k", str(log))
    assert result.exit_code == 1
    said = " ".join(result.stderr.split())
    assert "no OOM kill" not in said
    assert "the kill of '10008' is in the log (line " in said and "but was summarised" in said
    assert "give --boot-time, then --since/--until around it" in said
    line = int(said.split("(line ", 1)[1].split()[0])
    assert "Killed process 10008 " in lines[line - 1]


def test_the_rank_in_a_trimmed_tasks_table_counts_every_row_it_had(tmp_path: Path) -> None:
    log = big_table(tmp_path / "big.log", 30_000)
    for form in ("text", "markdown", "json"):
        said = " ".join(run("why", "oomprobe-hog", "-k", str(log), "--format", form).stdout.split())
        assert "highest badness in the report's tasks table of 30,001 rows (" in said
        assert "killable tasks" not in said  # the kept rows' count, said as if it were the table's
    small = run("why", "oomprobe-hog", "-k", str(FIXTURES / "real_memcg_v1_6.18" / "kernel.log"))
    assert "the only killable task in the report" in " ".join(small.stdout.split())


def test_each_story_of_a_long_incident_is_bounded_whatever_the_incident_holds(tmp_path: Path) -> None:
    """A crash loop 37 s apart is one incident; each story lists the kills nearest its own and
    counts the rest, so a story's size does not grow with the loop (issue 23, 8)."""
    sizes = {}
    for kills in (2 * story.MAX_COLLATERAL, 6 * story.MAX_COLLATERAL):
        log = crash_loop(tmp_path / f"loop-{kills}.log", kills, gap_s=37)
        result = run("why", "oomprobe-hog", "--all", "-k", str(log), "--tz", "UTC", "--format", "json")
        document = json.loads(result.stdout)
        assert len(document["all"]) == kills
        for told in document["all"]:
            listed = len(told["collateral"])
            assert listed == story.MAX_COLLATERAL
            assert told["collateral_more"] == kills - 1 - listed
            assert len([t for t in told["timeline"] if t["kind"] == "collateral"]) == listed
        sizes[kills] = max(len(json.dumps(told)) for told in document["all"])
        middle = document["all"][kills // 2]
        pid = middle["episode"]["victim"]["pid"]
        # The nearest: as many before as after the story's own kill.
        assert [e["victim"]["pid"] for e in middle["collateral"]] == [
            p for p in range(pid - 5, pid + 6) if p != pid
        ]
    small, large = sizes.values()
    assert large < small * 1.05  # the same size: three times the kills, not three times the story
    log = tmp_path / f"loop-{6 * story.MAX_COLLATERAL}.log"
    more = 6 * story.MAX_COLLATERAL - 1 - story.MAX_COLLATERAL
    for form in ("text", "markdown"):
        said = run("why", "oomprobe-hog", "-k", str(log), "--tz", "UTC", "--format", form).stdout
        assert f"and {more:,} more kill(s) in this incident, further from this one" in " ".join(said.split())
    # The sentence counts every other kill of the incident, not the ones listed.
    assert f"In the same incident {6 * story.MAX_COLLATERAL - 1} other processes were killed" in said


def test_why_all_in_markdown_words_only_what_fits_under_githubs_limit(tmp_path: Path) -> None:
    log = crash_loop(tmp_path / "loop.log", 200, gap_s=37)
    result = run("why", "oomprobe-hog", "--all", "-k", str(log), "--tz", "UTC", "--format", "markdown")
    assert result.exit_code == 0, result.output
    assert len(result.stdout) < GITHUB_LIMIT
    assert "more incident(s) left out to stay under GitHub's" in result.stdout


def _uptime_loop(path: Path, kills: int) -> Path:
    """A dmesg crash loop, uptimes only: a memcg report every 600 s, and every other time a global
    one (seed 000's lines) between; wall times come from --boot-time."""
    seed = [line.split(" kernel: ", 1)[1] for line in REPORT if " kernel: " in line]
    lines = []
    for n in range(kills):
        for line in MEMCG:
            stamp, message = line.split("] ", 1)
            uptime = float(stamp.strip("[ ")) + 600 * n
            lines.append(f"[{uptime:12.6f}] {message.replace('2110', str(10_000 + n))}")
        if n % 2:
            lines += [f"[{600 * n + 300:12.6f}] {message}" for message in seed]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("shape", ["journal-stamped", "uptimes"])
def test_kills_kept_unfrozen_until_the_end_tell_what_kills_frozen_at_once_tell(
    tmp_path: Path, few_kept: None, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    """A report past the first kept ones stays a draft until it is elided or the log ends
    (episodes.build.DEFER_EVENTS): every answer is the same as when each report is frozen as it closes."""
    if shape == "uptimes":
        log = _uptime_loop(tmp_path / "loop.log", 20)
        extra: tuple[str, ...] = ("--boot-time", "2026-11-01 00:00:00+00:00")
    else:
        log = crash_loop(tmp_path / "loop.log", 20)
        extra = ()
    commands = [
        ("list", "--format", "json"),
        ("why", "--all", "oomprobe-hog", "--format", "json"),
        ("why", "10008", "--format", "json"),
        ("report", "--format", "markdown"),
        ("list", "--since", "2026-11-01 02:30", "--format", "json"),
    ]

    def answers() -> list[str]:
        return [run(*command, "-k", str(log), "--tz", "UTC", *extra).output for command in commands]

    deferred = answers()
    monkeypatch.setattr(build, "DEFER_EVENTS", 0)  # every report frozen as it closes
    assert answers() == deferred
    elided = json.loads(deferred[0])["source"]["elided"]
    assert elided["kills"] == (13 if shape == "journal-stamped" else 23)  # as the test needs
    assert "2026-11-01" in deferred[3]  # the uptimes were given wall times


def _leaf_types(kind: object) -> set[str]:
    """The kinds of value a msgspec type can hold, structs opened up (their classes named)."""
    import msgspec.inspect as mi

    if isinstance(kind, mi.StructType):
        return {kind.cls.__name__} | {n for f in kind.fields for n in _leaf_types(f.type)}
    inner = [
        getattr(kind, name)
        for name in ("types", "item_type", "key_type", "value_type")
        if hasattr(kind, name)
    ]
    flat = [t for part in inner for t in (part if isinstance(part, tuple) else (part,))]
    return {type(kind).__name__} | {n for t in flat for n in _leaf_types(t)}


def test_records_and_events_are_untracked_and_can_hold_no_cycle() -> None:
    """A big log makes a Record and an event a line; the cyclic collector does not track them
    (records.py says why). That is safe only while nothing they hold can refer back to them:
    strings, numbers, datetimes, containers of those, and a Record with its Stamp."""
    import gc

    import msgspec.inspect as mi

    from oomtrace import events
    from oomtrace.prefixes import LineSplitter
    from oomtrace.rejoin import parse_records

    splitter = LineSplitter("kernel.log")
    pairs = list(parse_records(r for n, line in enumerate(REPORT, 1) for r in splitter.split(line, n)))
    assert pairs and any(event is not None for _, event in pairs)
    for record, event in pairs:
        assert not gc.is_tracked(record) and not gc.is_tracked(record.stamp)
        assert event is None or not gc.is_tracked(event)
    leaves = {"Record", "Stamp", "StrType", "IntType", "FloatType", "BoolType", "NoneType", "DateTimeType"}
    containers = {"UnionType", "DictType", "VarTupleType"}
    kinds = [events.Event]
    while kinds:
        kind = kinds.pop()
        kinds.extend(kind.__subclasses__())
        held = {n for f in mi.type_info(kind).fields for n in _leaf_types(f.type)}
        assert held <= leaves | containers, (kind.__name__, held - leaves - containers)


def _kills_log(tmp_path: Path, kills: int, gap: float | None) -> Path:
    """bench/make_log.py's crash loop (kern.log stamps: a wall time and an uptime a line)."""
    sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
    from make_log import write_kills

    path = tmp_path / "kern.log"
    write_kills(path, kills, style="kernlog", gap=gap)
    return path


def _exported_kills(log: Path, tmp_path: Path) -> float:
    prom = tmp_path / "oom.prom"
    result = run("export", "-k", str(log), "--tz", "UTC", "--year", "2026", "--prom-textfile", str(prom))
    assert result.exit_code == 0, result.output
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in prom.read_text().splitlines()
        if line.startswith("oomtrace_oom_kills_total")
    )


@pytest.mark.parametrize("gap", [37.0, None])
def test_counts_are_of_every_kill_past_the_ones_kept(
    tmp_path: Path, few_kept: None, gap: float | None
) -> None:
    """Issue 41: 25 kills with 3 + 4 kept (2,500 with 1,000 + 1,000, made small). export's counter,
    list --by-host and report's chart count all 25; a crash loop of one shortage (kills 37 s
    apart) is one incident, not two split where kills were counted, not kept."""
    log = _kills_log(tmp_path, 25, gap)
    assert _exported_kills(log, tmp_path) == 25
    (host,) = list_doc("-k", str(log), "--by-host", "--year", "2026")["hosts"]
    assert (host["host"], host["kills"], host["top_victim_kills"]) == ("gb10", 25, 25)
    report = json.loads(run("report", "-k", str(log), "--tz", "UTC", "--year", "2026", "-f", "json").stdout)
    assert (report["counts"]["kills"], report["counts"]["kept_kills"]) == (25, 7)
    chart = report["charts"]["kills_over_time"]
    # No dip where kills were counted, not kept: every minute of the loop has its kills.
    assert chart is not None and sum(bar["count"] for bar in chart["bars"]) == 25
    assert all(bar["count"] for bar in chart["bars"][:-1])
    if gap is not None:
        # One shortage: one incident, which counts every kill of it, kept or not.
        assert host["incidents"] == report["counts"]["incidents"] == 1
        (story,) = report["incidents"]
        assert 1 + len(story["collateral"]) + story["collateral_more"] == 25


def _kills_at(path: Path, offsets: list[int]) -> Path:
    """The real memcg report once at each offset (seconds), each with its own pid."""
    start = datetime(2026, 11, 1, tzinfo=UTC)
    lines = []
    for n, offset in enumerate(offsets):
        stamp = f"{start + timedelta(seconds=offset):%Y-%m-%dT%H:%M:%S}+0000 gpu1 kernel:"
        lines += [f"{stamp} {line.split('] ', 1)[1].replace('2110', str(10_000 + n))}" for line in MEMCG]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    "offsets",
    [
        # A burst across the first boundary, two shortages in the middle, one across the last.
        [0, 10, 20, 30, 40, 3600, 3610, 7200, *range(10_800, 10_890, 10), 14_400, 18_000, 21_600],
        [10 * n for n in range(20)],  # one shortage through both boundaries
        [3600 * n for n in range(20)],  # each kill its own
        [
            0,
            10,
            20,
            3600,
            3610,
            3620,
            3630,
            3640,
            3650,
            3660,
            3670,
            3680,
            3690,
            3700,
            7200,
            7210,
            7220,
            7230,
            7240,
            7250,
        ],
    ],
)
def test_reports_count_the_incidents_of_the_whole_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offsets: list[int]
) -> None:
    """Issue 41: `report` counted the incidents of the kept kills only: a log whose kills not
    kept were several shortages said fewer incidents than it held. The count with kills elided
    equals the count of the same log read whole."""
    log = _kills_at(tmp_path / "kills.log", offsets)

    def counts() -> dict:
        return json.loads(run("report", "-k", str(log), "--tz", "UTC", "--format", "json").stdout)["counts"]

    whole = counts()
    assert whole["kills"] == whole["kept_kills"] == 20 and whole["incidents"] == whole["kept_incidents"]
    monkeypatch.setattr(build, "KEPT_FIRST", 3)
    monkeypatch.setattr(build, "KEPT_LAST", 4)
    elided = counts()
    assert elided["kept_kills"] == 7 and elided["incidents"] == whole["incidents"]
    said = " ".join(run("report", "-k", str(log), "--tz", "UTC").stdout.split())
    assert f"20 kill(s) in {whole['incidents']} incident(s), 7 of the kills kept whole and told in" in said
