"""Charts: the series under the view, the pictures each format draws of them, and every Mermaid
block parsed and rendered by the real Mermaid (mermaid-cli under Debian's chromium)."""

from __future__ import annotations

import io
import itertools
import json
import os
import re
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from rich.console import Console

from oomtrace.analyze import analyze
from oomtrace.charts import (
    MAX_POINTS,
    MAX_TRACE_POINTS,
    Bars,
    Part,
    ShareChart,
    kills_over_time,
    kills_per_host,
    samples_trace,
)
from oomtrace.formats import mermaid
from oomtrace.formats.text import TextFormat
from oomtrace.formats.textcharts import bar_rows, stacked_bar
from oomtrace.frozen import replace
from oomtrace.model import ProbeSample
from oomtrace.sources.textfile import KernelLogFile
from oomtrace.sources.watchrecord import WatchRecordFile
from oomtrace.story import tell
from oomtrace.watch.follow import Batch
from oomtrace.watch.notice import Notice
from oomtrace.watch.probes import Memory, Pressure
from oomtrace.watch.thresholds import parse_warn
from oomtrace.watch.watcher import Sample, Watcher
from tests.conftest import FIXTURES, ROOT, run
from tests.test_watch import _records

SEED000 = FIXTURES / "seed000_llama_server_gb10" / "kernel.log"
MERMAID_BLOCK = re.compile(r"^```mermaid\n(.*?)^```$", re.S | re.M)
# GitHub renders no Mermaid block longer than this.
GITHUB_MERMAID_LIMIT = 50_000
# Names a log can hold that would end a Mermaid statement, open a comment, close the fence or
# carry HTML if written as they are.
HOSTILE = [
    'a"b',
    "x:y",
    "semi;colon",
    "%%{init}%%",
    "```",
    "<script>x</script>",
    "a --> b",
    "#35;",
    "tab\there",
]


def _json(*args: str) -> dict[str, object]:
    result = run(*args, "--format", "json")
    assert result.exit_code == 0, result.output
    document: dict[str, object] = json.loads(result.stdout)
    return document


def test_seed000_ram_at_the_kill_is_split_as_mem_info_splits_it() -> None:
    chart = _json("why", "llama-server", "-k", str(SEED000), "--tz", "UTC")["charts"]["memory"]  # type: ignore[index]
    parts = {p["label"]: p["kb"] for p in chart["parts"]}
    assert sum(parts.values()) == chart["whole_kb"]
    # The point of the incident: most of RAM was in no process's RSS.
    biggest = max(parts, key=parts.__getitem__)
    assert biggest == "in no LRU list, slab or page table"
    assert parts[biggest] / chart["whole_kb"] > 0.7
    # shmem is inside anon (swap-backed pages sit on the anon LRU): never a part of its own.
    assert "shmem" not in parts and "anon (incl. shmem)" in parts


def test_the_terminal_draws_the_same_parts_as_a_stacked_bar() -> None:
    text = run("why", "llama-server", "-k", str(SEED000), "--tz", "UTC").stdout
    lines = text.splitlines()
    start = lines.index("Memory at the kill")
    bar = lines[start + 1].strip()
    assert set(bar) <= set("█▓▒░▞▚·")
    # 73 % of RAM in no LRU list: about that share of the bar is its glyph.
    assert 0.68 < bar.count("█") / len(bar) < 0.78
    block = "\n".join(lines[start : start + 10])
    assert "█ in no LRU list, slab or page table 86.1 GiB (73%)" in block
    # A sliver is said as one: page cache of 940 KiB is "<1%", never "0%".
    assert "page cache 940 KiB (<1%)" in block and "(0%)" not in block
    # The parts the bar shows are not said again in the figures line under it.
    figures = next(line for line in lines[start:] if line.strip().startswith("RAM "))
    assert "page cache" not in figures and "free" not in figures
    assert "min watermark 331.9 MiB" in figures and "shmem 32.5 MiB" in figures


def test_the_bar_never_depends_on_the_terminal_width_beyond_its_own() -> None:
    chart = ShareChart("RAM", 100, (Part("anon", "anon", 60), Part("free", "free", 40)))
    for width in (10, 40, 72, 200):
        bar = stacked_bar(chart, width)[0].plain
        assert len(bar) == max(10, min(width, 72))
        assert bar.count("▓") == round(len(bar) * 0.6)


# A kill line alone, as write-ups quote it: no Mem-Info, no other record.
LONE_KILL = (
    "[ 100.000000] Out of memory: Killed process 42 (worker) total-vm:1000kB, anon-rss:500kB, "
    "file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:8kB oom_score_adj:0\n"
)


def _kind(block: str) -> str:
    """A Mermaid block's diagram line, after its %%{init}%% configuration."""
    return next(line for line in block.split("\n") if not line.startswith("%%"))


def test_no_mem_info_no_picture() -> None:
    document = json.loads(run("why", "worker", "-k", "-", "--format", "json", input=LONE_KILL).stdout)
    assert document["charts"]["memory"] is None
    text = run("why", "worker", "-k", "-", input=LONE_KILL).stdout
    assert not set(text) & set("█▓▒░▞▚")


def test_the_run_up_is_the_timeline_against_time() -> None:
    document = _json("why", "llama-server", "-k", str(SEED000), "--tz", "UTC")
    events = document["charts"]["run_up"]["events"]  # type: ignore[index]
    assert [e["offset"] for e in events] == ["T-3m13s", "T±0s", "T±0s", "T+1s"]
    assert events[0]["kind"] == "warning" and "NV_ERR_NO_MEMORY" in events[0]["text"]
    markdown = run("why", "llama-server", "-k", str(SEED000), "--tz", "UTC", "-f", "markdown").stdout
    blocks = MERMAID_BLOCK.findall(markdown)
    assert [_kind(b) for b in blocks] == ["timeline", "pie"]
    timeline = blocks[0]
    # The title says the span it shows: the warning 3m13s before, the reaper 1s after.
    assert "title The run-up to the kill#58; 3m13s before it and 1s after" in timeline
    # The kill's second holds the invocation and the kill, as one period.
    assert (
        "T±0s 13#58;12#58;12 : dashboard-servi (pid 4121) invoked the OOM killer : killed llama-server"
        in timeline
    )


def test_a_lone_kill_has_no_run_up_picture() -> None:
    document = json.loads(run("why", "worker", "-k", "-", "--format", "json", input=LONE_KILL).stdout)
    assert document["charts"]["run_up"] is None


def _crash_loop(path: Path, kills: int, every: timedelta) -> Path:
    """Seed 000's report `kills` times, `every` apart, as `journalctl -k` prints them."""
    report = [line for line in SEED000.read_text().splitlines() if line.strip()]
    start = datetime(2026, 11, 14, 13, 12, 12)
    pattern = re.compile(r"^Nov 14 (\d\d:\d\d:\d\d)")
    with path.open("w") as out:
        for n in range(kills):
            moved = start + n * every
            stamp = moved.strftime("%b %d %H:%M:%S")
            for line in report:
                if "invoked oom-killer" in line or "Killed process" in line or "oom-kill:" in line:
                    out.write(pattern.sub(stamp, line).replace("1966928", str(1966928 + n)) + "\n")
    return path


def test_a_report_of_many_kills_draws_kills_over_time(tmp_path: Path) -> None:
    log = _crash_loop(tmp_path / "loop.log", 300, timedelta(minutes=7))
    document = _json("report", "-k", str(log), "--tz", "UTC", "--year", "2026")
    chart = document["charts"]["kills_over_time"]  # type: ignore[index]
    counts = [b["count"] for b in chart["bars"]]
    assert sum(counts) == document["counts"]["kills"] == 300  # type: ignore[index]
    assert len(counts) <= MAX_POINTS and chart["axis"] == "6 hours"
    markdown = run("report", "-k", str(log), "--tz", "UTC", "--year", "2026", "-f", "markdown").stdout
    (bars,) = [b for b in MERMAID_BLOCK.findall(markdown) if _kind(b).startswith("xychart-beta")]
    assert f"bar [{', '.join(str(n) for n in counts)}]" in bars
    assert all(len(b) < GITHUB_MERMAID_LIMIT for b in MERMAID_BLOCK.findall(markdown))
    text = run("report", "-k", str(log), "--tz", "UTC", "--year", "2026").stdout
    assert "OOM kills per 6 hours" in text
    assert len(markdown) < 65_536


def test_buckets_keep_the_empty_ones_and_never_exceed_the_cap() -> None:
    start = datetime(2026, 11, 1, tzinfo=UTC)
    chart = kills_over_time([start, start + timedelta(hours=5), start + timedelta(hours=5, minutes=1)])
    assert chart is not None and chart.axis == "hour"
    assert chart.counts == (1, 0, 0, 0, 0, 2)
    for days in (1, 30, 400, 4000):
        spread = kills_over_time([start, start, start + timedelta(days=days)])
        assert spread is not None and len(spread.counts) <= MAX_POINTS
        assert sum(spread.counts) == 3 and spread.counts[0] == 2 and spread.counts[-1] == 1
    # Across a new year the labels carry the year.
    new_year = kills_over_time([start, start, start + timedelta(days=90)])
    assert new_year is not None and new_year.labels[-1].startswith("2027-")
    # Two kills are a list, not a trend; kills all in one bucket are one bar, which says nothing.
    assert kills_over_time([start, start + timedelta(hours=1)]) is None
    assert kills_over_time([start, start, start + timedelta(seconds=5)]) is None


def test_a_bucket_with_a_kill_always_shows_a_block() -> None:
    rows = bar_rows(Bars("t", "hour", ("a", "b", "c"), (10_000, 1, 0)), 80)
    assert "█" in rows[1].plain and "█" not in rows[2].plain


def test_kills_per_host_keeps_the_busiest_and_says_the_rest() -> None:
    hosts = [(f"gpu-{n:02d}", n) for n in range(1, 31)]
    chart = kills_per_host(hosts)
    assert chart is not None and len(chart.labels) == MAX_POINTS and chart.labels[0] == "gpu-30"
    assert chart.note == "6 more host(s) with 21 kill(s)"


@pytest.mark.parametrize("name", HOSTILE)
def test_a_mermaid_label_cannot_escape_its_quotes(name: str) -> None:
    written = mermaid.label(name)
    assert re.fullmatch(r"[A-Za-z0-9 .,_+\-/()'×±=!?#;]*", written), written
    # Every # and ; it writes is one of its own entity codes.
    assert re.sub(r"#\d+;", "", written).count("#") == 0


def _hosts_export(tmp_path: Path, hosts: list[str]) -> Path:
    lines = [line for line in SEED000.read_text().splitlines() if line.strip()]
    export = tmp_path / "fleet.jsonl"
    with export.open("w") as out:
        for index, host in enumerate(hosts):
            for n, line in enumerate(lines):
                message = line.split("kernel: ", 1)[-1]
                time = datetime(2026, 11, 14, 13, index, 0, tzinfo=UTC) + timedelta(milliseconds=n)
                record = {"labels": {"host": host}, "line": message, "timestamp": time.isoformat()}
                out.write(json.dumps(record) + "\n")
    return export


def test_list_by_host_draws_kills_per_host(tmp_path: Path) -> None:
    export = _hosts_export(tmp_path, ["spark-01", "spark-02", "spark-03"])
    document = _json("list", "--by-host", "-k", str(export))
    bars = document["charts"]["kills_per_host"]["bars"]  # type: ignore[index]
    assert sorted(b["label"] for b in bars) == ["spark-01", "spark-02", "spark-03"]
    assert all(b["count"] == 1 for b in bars)
    markdown = run("list", "--by-host", "-k", str(export), "-f", "markdown").stdout
    assert _kind(MERMAID_BLOCK.findall(markdown)[0]) == "xychart-beta horizontal"


# --- the watcher's samples, read back from its --record file -----------------------------------

KILL_TIME = datetime(2026, 11, 14, 13, 12, 12, tzinfo=UTC)
RAM_KB = 119 << 20
WHY_RECORD = ("why", "llama-server", "-k", str(SEED000), "--tz", "UTC", "--year", "2026")


def _watched(path: Path, seconds: int = 300, pause_at: int | None = None) -> Path:
    """What a real Watcher writes to --record for seed 000's incident when it sampled, once a
    second for `seconds` before the kill, MemAvailable falling from 40 % of RAM and PSI rising
    (with no samples for two minutes from `pause_at` seconds before the kill)."""
    said = _watch_seed000("psi-some=10", seconds, pause_at)
    path.write_text("".join(json.dumps(n.to_json()) + "\n" for n in said))
    return path


def _watch_seed000(warn: str, seconds: int = 300, pause_at: int | None = None) -> list[Notice]:
    """What a real Watcher says of seed 000's incident, sampled as `_watched` says."""
    said: list[Notice] = []
    watcher = Watcher(parse_warn(warn), UTC, str(SEED000), said.append, "boot-1")
    for before in range(seconds, 0, -1):
        if pause_at is not None and pause_at >= before > pause_at - 120:
            continue
        share = before / seconds
        memory = Memory(RAM_KB, int(RAM_KB * 0.4 * share) + (300 << 10))
        pressure = Pressure(round(90 * (1 - share), 2), round(40 * (1 - share) ** 2, 2))
        watcher.sample(Sample(float(-before), KILL_TIME - timedelta(seconds=before), pressure, memory))
    for record in _records(SEED000):
        wall = record.stamp.wall or KILL_TIME
        watcher.feed(Batch((record,), None), wall.timestamp(), wall)
    watcher.tick(KILL_TIME.timestamp() + 5, KILL_TIME + timedelta(seconds=5))
    return said


def test_a_record_files_samples_draw_the_minutes_before_the_kill(tmp_path: Path) -> None:
    record = _watched(tmp_path / "record.jsonl")
    written = [json.loads(line) for line in record.read_text().splitlines()]
    samples = [n for n in written if n["event"] == "sample"]
    assert len(samples) > 200  # one a second from the first warning on
    assert all(n["memtotal_kb"] == RAM_KB for n in samples)  # the RAM MemAvailable is a share of
    chart = _json(*WHY_RECORD, "--record", str(record))["charts"]["samples"]  # type: ignore[index]
    assert chart["samples"] == len(samples) and chart["left_out"] == 0 and chart["live"] is False
    points = chart["points"]
    assert 2 <= len(points) <= MAX_TRACE_POINTS and chart["every_s"] == 10
    # Each point is the lowest MemAvailable of its interval, read from the file independently.
    for point in points:
        end = KILL_TIME - timedelta(seconds=point["before_s"])
        held = [
            n["memavailable_kb"]
            for n in samples
            if end - timedelta(seconds=10) < datetime.fromisoformat(n["time"]) <= end
        ]
        assert held and point["memavailable_kb"] == min(held)
    assert points[0]["memavailable_kb"] > 30 << 20 > 1 << 20 > points[-1]["memavailable_kb"]
    assert points[0]["psi_some_avg10"] < points[-1]["psi_some_avg10"] <= 100
    # The driver's warning is marked where it began, with its own offset.
    marks = [w for p in points for w in p["warnings"]]
    assert any(m.startswith("T-3m13s NVIDIA driver out of memory") for m in marks), marks


def test_a_live_story_draws_every_sample_of_its_half_hour_warning_or_not(tmp_path: Path) -> None:
    """The watcher telling a kill live holds its samples whether or not a warning was active; a
    --record file keeps them only while one is. Here no sampled figure warns, and the log's
    lines (the driver's warning among them) come after the samples."""
    said = _watch_seed000("psi-some=off,psi-full=off,memavail=off,zero-in=off", seconds=2400)
    (kill,) = [n for n in said if n.event == "kill"]
    chart = kill.data["story"]["charts"]["samples"]
    # The half hour before the kill, one a second: 1,800 of the 2,400 taken.
    assert chart["live"] is True and chart["samples"] == 1800 and chart["left_out"] == 0
    assert chart["every_s"] == 120 and 2 <= len(chart["points"]) <= MAX_TRACE_POINTS
    assert chart["points"][0]["memavailable_kb"] > chart["points"][-1]["memavailable_kb"]
    assert chart["points"][-1]["before_s"] == 0
    # The story as the terminal prints it says where its samples came from, and nothing else.
    console = Console(file=io.StringIO(), width=100, force_terminal=False)
    TextFormat(console).why(None, kill.view)  # type: ignore[arg-type]
    words = " ".join(console.file.getvalue().split())  # type: ignore[attr-defined]
    assert "The watcher's samples before the kill" in words
    assert "1,800 samples this watcher took, one a second: each point is the lowest MemAvailable" in words
    assert "while a warning was active" not in words and "--record" not in words
    # No warning was active while it sampled: a --record file would hold none of these samples.
    assert not [n for n in said if n.event == "sample"]


def test_a_live_story_without_samples_draws_none() -> None:
    said: list[Notice] = []
    watcher = Watcher(parse_warn("psi-some=off"), UTC, str(SEED000), said.append, "boot-1")
    for record in _records(SEED000):
        wall = record.stamp.wall or KILL_TIME
        watcher.feed(Batch((record,), None), wall.timestamp(), wall)
    watcher.tick(KILL_TIME.timestamp() + 5, KILL_TIME + timedelta(seconds=5))
    (kill,) = [n for n in said if n.event == "kill"]
    assert kill.data["story"]["charts"]["samples"] is None


def test_the_samples_are_drawn_in_markdown_and_the_terminal(tmp_path: Path) -> None:
    record = _watched(tmp_path / "record.jsonl")
    markdown = run(*WHY_RECORD, "--record", str(record), "-f", "markdown").stdout
    section = markdown.split("### The watcher's samples before the kill", 1)[1].split("\n### ", 1)[0]
    blocks = MERMAID_BLOCK.findall(section)
    assert len(blocks) == 2 and all("xychart-beta" in b for b in blocks)
    assert 'title "MemAvailable (GiB)"' in blocks[0]
    assert 'x-axis "seconds before the kill" -' in blocks[0] and " --> 0\n" in blocks[0]
    assert "line [" in blocks[1] and blocks[1].count("line [") == 2  # some and full
    # The warnings are bars the height of the chart; the words under it say what they are.
    assert "bar [" in blocks[0] and "The grey bars mark where these warnings began:" in section
    assert "- T-3m13s NVIDIA driver out of memory" in section
    text = run(*WHY_RECORD, "--record", str(record)).stdout
    lines = text.splitlines()
    at = lines.index("The watcher's samples before the kill")
    spark = next(line for line in lines[at:] if line.strip().startswith("MemAvailable"))
    levels = spark.split("MemAvailable", 1)[1].split()[0]
    assert set(levels) <= set("▁▂▃▄▅▆▇█") and levels[0] == "█" and levels[-1] == "▁"
    assert any(line.strip().startswith("PSI some") for line in lines[at:])
    assert any(set(line.strip()) == {"▲"} or set(line.strip()) == {"▲", " "} for line in lines[at:])


def test_no_record_no_samples_picture(tmp_path: Path) -> None:
    assert _json(*WHY_RECORD)["charts"]["samples"] is None  # type: ignore[index]
    assert "samples" not in run(*WHY_RECORD).stdout
    assert "watcher's samples" not in run(*WHY_RECORD, "-f", "markdown").stdout


def test_the_record_files_copy_of_a_driver_line_is_not_a_second_warning(tmp_path: Path) -> None:
    """The watcher keeps the lines behind its warnings; read beside the log they came from, the
    NVRM warning is one run, not two at the same moment."""
    record = _watched(tmp_path / "record.jsonl")
    document = _json(*WHY_RECORD, "--record", str(record))
    driver = [t for t in document["timeline"] if "NV_ERR_NO_MEMORY" in t["text"]]  # type: ignore[union-attr]
    assert len(driver) == 1, driver
    assert driver[0]["text"].endswith("(×2, last 13:09:05)") or "×2" in driver[0]["text"]


def test_samples_before_a_pause_are_left_out_and_said(tmp_path: Path) -> None:
    record = _watched(tmp_path / "record.jsonl", seconds=600, pause_at=400)
    chart = _json(*WHY_RECORD, "--record", str(record))["charts"]["samples"]  # type: ignore[index]
    assert chart["left_out"] > 0
    assert max(p["before_s"] for p in chart["points"]) <= 280  # the pause ends 280 s before the kill
    text = run(*WHY_RECORD, "--record", str(record)).stdout
    assert f"{chart['left_out']:,} earlier sample(s), before a pause in sampling, are left out" in " ".join(
        text.split()
    )


def test_samples_of_another_host_are_never_drawn() -> None:
    analysis = analyze([KernelLogFile(str(SEED000), UTC, year=2026)])
    (episode,) = analysis.episodes
    near = [KILL_TIME - timedelta(seconds=s) for s in range(100, 0, -1)]
    theirs = tuple(ProbeSample(t, 1 << 20, 50.0, 10.0, "gpu-07") for t in near)
    ours = tuple(ProbeSample(t, 1 << 20, 50.0, 10.0, episode.host) for t in near)
    assert not tell(replace(analysis, samples=theirs), episode, "llama-server").samples
    assert len(tell(replace(analysis, samples=ours), episode, "llama-server").samples) == 100
    # After the kill or more than half an hour before it: not the run-up.
    late = tuple(ProbeSample(KILL_TIME + timedelta(seconds=s), 1, None, None, None) for s in (1, 60))
    early = (ProbeSample(KILL_TIME - timedelta(hours=1), 1, None, None, None),)
    assert not tell(replace(analysis, samples=late + early), episode, "llama-server").samples


def test_a_long_record_keeps_only_the_samples_near_its_kills(tmp_path: Path) -> None:
    """A watcher under a warning for a day writes 86,400 samples: the reader keeps the half hour
    before the file's end (no kill in it), not the day."""
    start = datetime(2026, 11, 13, 13, 0, 0, tzinfo=UTC)
    path = tmp_path / "record.jsonl"
    with path.open("w") as out:
        for n in range(86_400):
            sample = {
                "schema": "oomtrace/1",
                "event": "sample",
                "kind": "probes",
                "text": "",
                "time": (start + timedelta(seconds=n)).isoformat(),
                "memavailable_kb": n,
            }
            out.write(json.dumps(sample) + "\n")
        out.write('{"event": "sample", "time": "soon", "memavailable_kb": -1}\n')
        late = (start + timedelta(days=1)).isoformat()
        out.write(f'{{"event": "sample", "time": "{late}", "memavailable_kb": 1{"0" * 400}}}\n')
    source = WatchRecordFile(str(path), UTC)
    assert list(source.records()) == []
    assert len(source.samples) == 1801
    assert source.samples[-1].memavailable_kb == 86_399
    assert source.problem == "2 sample(s) without a time or a MemAvailable were skipped"


# --- the real Mermaid -------------------------------------------------------------------------


def _mermaid_cli() -> tuple[str, str] | None:
    """mermaid-cli's mmdc and a chromium for it: .ci/run installs both (see .ci/run)."""
    candidates = [
        os.environ.get("OOMTRACE_MMDC"),
        str(ROOT / ".ci" / "mermaid" / "node_modules" / ".bin" / "mmdc"),
    ]
    mmdc = next((c for c in candidates if c and os.access(c, os.X_OK)), None) or shutil.which("mmdc")
    chromium = os.environ.get("PUPPETEER_EXECUTABLE_PATH") or shutil.which("chromium")
    return (mmdc, chromium) if mmdc and chromium else None


def _render(blocks: list[str], tmp_path: Path) -> list[Path]:
    """Every block rendered by mermaid-cli to SVG; a parse error fails with Mermaid's message."""
    tools = _mermaid_cli()
    if tools is None:
        pytest.skip("mermaid-cli (mmdc) or chromium is missing: .ci/run installs them (npm, apt)")
    mmdc, chromium = tools
    config = tmp_path / "puppeteer.json"
    # Root in CI: chromium's sandbox needs a user namespace it does not get there.
    config.write_text(json.dumps({"executablePath": chromium, "args": ["--no-sandbox", "--disable-gpu"]}))
    source = tmp_path / "charts.md"
    source.write_text("\n\n".join(f"```mermaid\n{b}```" for b in blocks) + "\n")
    out = tmp_path / "out.md"
    result = subprocess.run(
        [mmdc, "-p", str(config), "-i", str(source), "-o", str(out), "-q"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    svgs = sorted(tmp_path.glob("out-*.svg"), key=lambda p: int(p.stem.split("-")[-1]))
    assert len(svgs) == len(blocks)
    for svg in svgs:
        assert "Syntax error" not in svg.read_text()
    return svgs


def test_every_mermaid_block_renders_with_the_real_mermaid(tmp_path: Path) -> None:
    blocks = MERMAID_BLOCK.findall(
        run("why", "llama-server", "-k", str(SEED000), "--tz", "UTC", "-f", "markdown").stdout
    )
    log = _crash_loop(tmp_path / "loop.log", 300, timedelta(minutes=7))
    blocks += MERMAID_BLOCK.findall(
        run("report", "-k", str(log), "--tz", "UTC", "--year", "2026", "-f", "markdown").stdout
    )
    export = _hosts_export(tmp_path, ["spark-01", *HOSTILE[:4]])
    blocks += MERMAID_BLOCK.findall(run("list", "--by-host", "-k", str(export), "-f", "markdown").stdout)
    # The watcher's samples (two xychart line charts, after their %%{init}%% colours).
    record = _watched(tmp_path / "record.jsonl")
    sampled = MERMAID_BLOCK.findall(run(*WHY_RECORD, "--record", str(record), "-f", "markdown").stdout)
    blocks += [b for b in sampled if b.startswith("%%{init")]
    hostile = [mermaid.bars(Bars(name, "host", (name, "b"), (1, 2))) for name in HOSTILE]
    hostile += [
        mermaid.pie(ShareChart(name, 3, (Part("other", name, 1), Part("other", "b", 2)))) for name in HOSTILE
    ]
    blocks += [MERMAID_BLOCK.findall(h + "\n")[0] for h in hostile]
    kinds = {_kind(b) for b in blocks}
    assert kinds == {"timeline", "pie", "xychart-beta", "xychart-beta horizontal"}
    svgs = _render(blocks, tmp_path)
    # The hostile labels reach the picture as text, decoded, never as markup.
    script = svgs[-len(HOSTILE)].read_text()
    assert "<script>" not in script


def test_two_watchers_samples_at_the_same_second_are_both_counted() -> None:
    """A record two watchers appended holds two samples a second: both stand in the points."""
    times = [KILL_TIME - timedelta(seconds=s) for s in range(60, 0, -1) for _ in range(2)]
    samples = [ProbeSample(t, 1 << 20, 10.0, 1.0, None) for t in times]
    trace = samples_trace(samples, KILL_TIME, ())
    assert trace is not None and trace.samples == 120 and trace.left_out == 0


_SVG = "{http://www.w3.org/2000/svg}"


def _axis_texts(svg: Path, axis: str) -> list[tuple[str, float, float, float]]:
    """(text, x, y, font size) of each label of one axis group of a rendered xychart."""
    import xml.etree.ElementTree as ET

    found = []
    for group in ET.parse(svg).getroot().iter(f"{_SVG}g"):
        if group.get("class") == axis:
            for text in group.iter(f"{_SVG}text"):
                x, y = re.findall(r"[-\d.]+", text.get("transform", ""))[:2]
                found.append((text.text or "", float(x), float(y), float(text.get("font-size", "14"))))
    return found


def _contrast(colour: str, background: str) -> float:
    """WCAG's contrast ratio of two #rrggbb colours."""

    def luminance(value: str) -> float:
        channels = [int(value[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted((luminance(colour), luminance(background)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_the_bar_charts_read_when_the_real_mermaid_draws_them(tmp_path: Path) -> None:
    """Issue 39: from about 7 bars the x labels overlapped into one strip, a chart of 3 kills had
    ticks of 0.2 kills, and the bars were near-white. Rendered by mermaid-cli and measured in
    the SVG: every label whole and apart from the next, whole-number ticks, bars that stand out
    on GitHub's light and dark pages (3:1, WCAG's figure for graphics); the pie's slices too."""
    start = datetime(2026, 11, 14, 12, tzinfo=UTC)
    charts = [
        kills_over_time([start + timedelta(hours=6 * n, minutes=m) for n in range(7) for m in range(n + 1)]),
        kills_over_time([start, start + timedelta(minutes=1), start + timedelta(minutes=2)]),
        kills_per_host([(f"gpu-node-{n:02d}.cluster.example.com", n) for n in range(1, 31)]),
    ]
    blocks = [MERMAID_BLOCK.findall(mermaid.bars(c) + "\n")[0] for c in charts if c is not None]
    markdown = run("why", "llama-server", "-k", str(SEED000), "--tz", "UTC", "-f", "markdown").stdout
    (pie,) = [b for b in MERMAID_BLOCK.findall(markdown) if _kind(b) == "pie"]
    svgs = _render([*blocks, pie], tmp_path)
    for chart, svg in zip(charts, svgs, strict=False):
        assert chart is not None
        labels = _axis_texts(svg, "left-axis")
        assert [text for text, *_ in labels] == list(chart.labels)  # every label, whole
        ys = [y for _, _, y, _ in labels]
        size = labels[0][3]
        assert all(b - a >= size for a, b in itertools.pairwise(ys)), ys  # rows apart
        ticks = [text for text, *_ in _axis_texts(svg, "top-axis") if text != "kills"]  # its title
        assert ticks and all(re.fullmatch(r"\d+", t) for t in ticks), " ".join(ticks)  # whole kills
        fills = set(re.findall(r'<rect[^>]*fill="(#[0-9a-fA-F]{6})"', svg.read_text())) - {"#ffffff"}
        assert fills and all(_contrast(f, "#ffffff") >= 3 and _contrast(f, "#0d1117") >= 3 for f in fills)
    slices = re.findall(r'<path[^>]*class="pieCircle"[^>]*', svgs[-1].read_text())
    colours = [re.search(r'fill="(#[0-9a-fA-F]{6})"', s) for s in slices]
    assert colours and all(c is not None for c in colours)
    for found in colours:
        assert found is not None
        assert _contrast(found[1], "#ffffff") >= 3 and _contrast(found[1], "#0d1117") >= 3


def test_a_run_up_with_nothing_before_the_kill_draws_nothing_and_titles_say_their_span() -> None:
    """Issue 39: "The run-up to the kill over 0.0s" when nothing came before it (a crash loop's
    report: header and kill at one second), and "over 2.2s" for a chart that also showed T+30s."""
    log = (
        "[  100.000000] "
        + "\n[  100.000100] ".join(
            [
                "worker invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0",
                "Out of memory: Killed process 42 (worker) total-vm:1000kB, anon-rss:500kB, file-rss:0kB, "
                "shmem-rss:0kB, UID:0 pgtables:8kB oom_score_adj:0",
            ]
        )
        + "\n"
    )
    document = json.loads(run("why", "worker", "-k", "-", "--format", "json", input=log).stdout)
    assert document["charts"]["run_up"] is None


def test_the_architecture_map_renders_with_the_real_mermaid(tmp_path: Path) -> None:
    """docs/architecture.md's flow is Mermaid (issue 40): rendered by mermaid-cli as the reports'
    charts are, every box drawn with its words, and every package it names exists."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    (block,) = MERMAID_BLOCK.findall(doc)
    (svg,) = _render([block], tmp_path)
    drawn = svg.read_text()
    for words in ("usecases/", "episodes/", "prefixes/", "messages/", "formats/", "sources/"):
        assert words in drawn, words
        assert (ROOT / "src" / "oomtrace" / words.rstrip("/")).is_dir(), words
