"""The server's own log: stamps of every style, how it ended, what it planned, and the verdict."""

from __future__ import annotations

import gzip
import json
import os
from datetime import datetime
from pathlib import Path

import pytest
from dateutil import tz

from oomtrace.serverlines import ending_of, plan_items, stamp_of
from oomtrace.sources.serverlog import read_server_log
from tests.conftest import FIXTURES, run

UTC = tz.UTC


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("2026-11-14T13:08:59.123Z server started", "2026-11-14 13:08:59"),
        ("2026-11-14 13:08:59,123 INFO worker ready", "2026-11-14 13:08:59"),  # Python logging
        ("[2026-11-14 13:08:59] srv ready", "2026-11-14 13:08:59"),
        ("INFO 11-14 13:08:59 [api_server.py:12] ready", "2026-11-14 13:08:59"),  # vLLM
        ("I1114 13:08:59.123456 4242 main.cc:12] ready", "2026-11-14 13:08:59"),  # glog
        ("2026-11-14T13:08:59.123456789Z [tensorfold] ready", "2026-11-14 13:08:59"),  # docker logs -t
        ("Nov 14 13:08:59 host llama-server[4242]: ready", "2026-11-14 13:08:59"),  # syslog / journal
        ("main: model loaded", None),  # llama-server's default: no stamp
    ],
)
def test_stamps(line: str, expected: str | None) -> None:
    stamp = stamp_of(line, UTC, 2026)
    assert (stamp.time.strftime("%Y-%m-%d %H:%M:%S") if stamp.time else None) == expected


def test_llama_cpp_relative_stamps_are_known_but_not_wall_time() -> None:
    stamp = stamp_of("4.34.329.865 I slot update_slots: id  0 | task 0 | new prompt", UTC, 2026)
    assert stamp.relative and stamp.time is None


@pytest.mark.parametrize(
    ("lines", "ending"),
    [
        (["main: model loaded", "slot update_slots: id 0 | task 0 | prompt processing progress"], "silent"),
        (
            ["step 10", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"],
            "out-of-memory-error",
        ),
        (
            [
                "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 4096.00 MiB on device 0: cudaMalloc failed: out of memory"
            ],
            "out-of-memory-error",
        ),
        (
            [
                "terminate called after throwing an instance of 'std::bad_alloc'",
                "  what():  std::bad_alloc",
                "Aborted (core dumped)",
            ],
            "out-of-memory-error",
        ),
        (["Traceback (most recent call last):", '  File "x.py", line 1', "KeyError: 'a'"], "crash"),
        (["Segmentation fault (core dumped)"], "crash"),
        (["INFO:     Shutting down", "INFO:     Application shutdown complete."], "clean"),
        (["ds4: CUDA prepared model tensor mappings 16.88 GiB", "Killed"], "killed"),
        (["./run.sh: line 3: 124531 Killed                  ./ds4-server -m x"], "killed"),
    ],
)
def test_endings(lines: list[str], ending: str) -> None:
    assert ending_of(lines)[0] == ending


def test_plan_lines_of_each_server() -> None:
    labels = {
        "load_tensors:        CUDA0 model buffer size = 89088.00 MiB": ("CUDA0 model buffer", 87.0, True),
        "load_tensors:   CPU_Mapped model buffer size =   515.63 MiB": (
            "CPU_Mapped model buffer",
            0.5,
            False,
        ),
        "INFO 11-21 09:15:31 [gpu_model_runner.py:2007] Model loading took 14.99 GiB and 12.48 seconds": (
            "model weights",
            14.99,
            True,
        ),
        "ds4: built 456 aligned CUDA artifacts (68.58 GiB) in 18.9s; expert raw residency replaced": (
            "aligned CUDA artifacts",
            68.58,
            True,
        ),
    }
    for line, (label, gib, counted) in labels.items():
        (item,) = plan_items(line)
        assert (item.label, item.gib, item.counted) == (label, gib, counted)
    tensorfold = plan_items("model 75.92 GiB; 4 streams at once, 4.78 GiB each at a 262144-token window")
    assert [(i.label, i.gib) for i in tensorfold] == [("model weights", 75.92), ("4 stream windows", 19.12)]


def test_a_log_without_stamps_ends_at_its_mtime(tmp_path: Path) -> None:
    log = tmp_path / "server.log.gz"
    with gzip.open(log, "wt") as out:
        out.write("main: model loaded\nslot update_slots: id 0 | task 0\n")
    when = datetime(2026, 11, 14, 13, 12, 10, tzinfo=UTC).timestamp()
    os.utime(log, (when, when))
    facts = read_server_log(str(log), UTC)
    assert facts.last_time_from == "mtime" and facts.last_time is not None
    assert facts.last_time.timestamp() == when
    assert facts.ending == "silent" and facts.last_line == "slot update_slots: id 0 | task 0"


def test_verdicts_and_exit_codes(tmp_path: Path) -> None:
    seed000 = FIXTURES / "seed000_llama_server_gb10"
    killed = run(
        "why",
        "llama-server",
        "-k",
        str(seed000 / "kernel.log"),
        "--server-log",
        str(seed000 / "server.log"),
        "-f",
        "json",
    )
    assert killed.exit_code == 0
    document = json.loads(killed.stdout)
    assert (document["cause"], document["server_log"]["ending"]) == ("kernel-oom", "silent")
    assert document["server_log"]["plan_total_gib"] == 97.52
    # A log that ends a day before the kill is not that kill's log, and the verdict says so.
    old = tmp_path / "old.log"
    old.write_text("2026-11-13T13:00:00Z slot update_slots: id 0\n")
    on_seed000 = ("-k", str(seed000 / "kernel.log"), "--year", "2026", "--tz", "UTC")
    stale = json.loads(run("why", "llama-server", *on_seed000, "--server-log", str(old), "-f", "json").stdout)
    assert "it is not this kill's log" in stale["server_log"]["note"]
    # Nothing explains a silent log: exit 1, and the message says what was searched.
    silent = tmp_path / "silent.log"
    silent.write_text("2026-11-20T10:00:00Z serving\n")
    unknown = run("why", "myserver", *on_seed000, "--server-log", str(silent))
    assert unknown.exit_code == 1
    assert "nothing in the kernel log explains how myserver ended" in unknown.stderr
    assert "does not cover its last line" in unknown.stderr


def test_clean_shutdown_is_an_answer(tmp_path: Path) -> None:
    log = tmp_path / "uvicorn.log"
    log.write_text("INFO:     Shutting down\nINFO:     Application shutdown complete.\n")
    result = run(
        "why",
        "api",
        "-k",
        str(FIXTURES / "real_memcg_v1_6.18" / "kernel.log"),
        "--server-log",
        str(log),
        "-f",
        "json",
    )
    assert result.exit_code == 0
    assert json.loads(result.stdout)["cause"] == "clean-exit"


def test_a_cut_compressed_server_log_is_refused_with_the_reason(tmp_path: Path) -> None:
    # Its ending is what tells how the server ended, and a cut file has lost it: say so.
    packed = tmp_path / "llama.log.gz"
    lines = "".join(f"2026-11-14T13:0{i % 10}:00Z slot update {i}\n" for i in range(30000))
    packed.write_bytes(gzip.compress(lines.encode())[:-2000])
    seed000 = FIXTURES / "seed000_llama_server_gb10"
    result = run("why", "llama-server", "-k", str(seed000 / "kernel.log"), "--server-log", str(packed))
    assert result.exit_code == 2
    assert "cannot read" in result.stderr and "to its end" in result.stderr
    assert "Traceback" not in result.output


def test_a_log_written_after_the_kill_is_never_the_signature_of_it(tmp_path: Path) -> None:
    # seed 000's kill is at 13:12:12; this log's last stamped line is 51 s later.
    log = tmp_path / "server.log"
    log.write_text("2026-11-14T13:10:00Z main: model loaded\n2026-11-14T13:13:03Z srv  update_slots: idle\n")
    seed000 = FIXTURES / "seed000_llama_server_gb10"
    args = ("-k", str(seed000 / "kernel.log"), "--year", "2026", "--tz", "UTC", "--server-log", str(log))
    document = json.loads(run("why", "llama-server", *args, "-f", "json").stdout)
    note = document["server_log"]["note"]
    assert note.startswith("the log runs on 51s past the kill (its last stamped line)")
    assert "signature of a kill" not in note
    # The contract says it too: not "silent" (the signature of a kill) but "runs-on".
    assert document["server_log"]["ending"] == "runs-on"


def test_the_log_of_a_process_that_was_not_killed_running_on_is_expected() -> None:
    # seed 004: tf-engine invoked the killer, ollama's runner was killed; tf-engine's own log
    # (docker logs -t) runs on 2m35s past the kill, as the log of a survivor does.
    case = FIXTURES / "seed004_tf_engine_involvement"
    args = ("-k", str(FIXTURES / "seed004_tensorfold_cotenant_gb10" / "kernel.log"))
    document = json.loads(
        run("why", "tf-engine", *args, "--server-log", str(case / "server.log"), "-f", "json").stdout
    )
    server = document["server_log"]
    assert server["ending"] == "runs-on" and server["gap_s"] < -60
    assert server["note"] == (
        "the log runs on 2m35s past the kill (its last stamped line), as it should: tf-engine was not killed"
    )
    assert "not the log of the process that died" not in document["verdict"]


def test_an_mtime_end_says_how_unreliable_it_is_and_server_log_end_overrides_it(tmp_path: Path) -> None:
    seed000 = FIXTURES / "seed000_llama_server_gb10"
    log = tmp_path / "server.log"
    log.write_text((seed000 / "server.log").read_text())  # a copy: its mtime is now, days later
    args = ("-k", str(seed000 / "kernel.log"), "--year", "2026", "--tz", "UTC", "--server-log", str(log))
    document = json.loads(run("why", "llama-server", *args, "-f", "json").stdout)
    copied = document["server_log"]
    assert copied["last_time_from"] == "mtime"
    # A modification time days after the kill is most likely the copy's: no confident sentence
    # that the log is another process's, and the way to say when it really ended.
    assert "which may be when it was copied or touched, not when it ended" in copied["note"]
    assert "give --server-log-end TIME" in copied["note"]
    for said in (copied["note"], document["verdict"]):
        assert "it is not the log of the process that died" not in said
        assert "signature of a kill" not in said
    # The time is not known, so the ending stays what its last lines say, never "runs-on".
    assert copied["ending"] == "silent"
    given = json.loads(
        run("why", "llama-server", *args, "--server-log-end", "2026-11-14 13:12:10", "-f", "json").stdout
    )["server_log"]
    assert given["last_time_from"] == "given" and given["gap_s"] == 2.0
    assert given["note"] == (
        "the log ends 2s before the kill (--server-log-end): it stops with no error, the signature of a kill"
    )
    alone = run("why", "llama-server", "-k", str(seed000 / "kernel.log"), "--server-log-end", "13:00")
    assert alone.exit_code == 2 and "--server-log-end needs --server-log FILE" in alone.stderr


def test_the_servers_own_memory_warnings_are_in_the_timeline(tmp_path: Path) -> None:
    # seed 000's kill (13:12:12) with a server log that warned 2m42s before it: the warning is
    # the shape of seed 004's filled-in TensorFold line (fixtures/README.md).
    log = tmp_path / "server.log"
    log.write_text(
        "2026-11-14T12:40:00Z [tensorfold] server answers loaded in 180.1s on 127.0.0.1:8888\n"
        "2026-11-14T11:00:00Z [tensorfold] warning: cudaMallocAsync of 1.00 GiB failed, retrying\n"
        "2026-11-14T13:09:30Z [tensorfold] warning: cudaMallocAsync of 2.00 GiB failed, retrying after trimming the pool\n"
        "2026-11-14T13:12:11Z [tensorfold] done prompt=1812 cached=0 ttft=0.41s tokens=211\n"
    )
    seed000 = FIXTURES / "seed000_llama_server_gb10"
    args = ("-k", str(seed000 / "kernel.log"), "--year", "2026", "--tz", "UTC", "--server-log", str(log))
    story = json.loads(run("why", "llama-server", *args, "-f", "json").stdout)
    server = [e for e in story["timeline"] if e["kind"] == "server-warning"]
    # The one of the hour before the kill; the one two hours before is not this kill's warning.
    assert [(e["offset_s"], e["text"][-40:]) for e in server] == [
        (-162.0, "failed, retrying after trimming the pool")
    ]
    kinds = [e["kind"] for e in story["timeline"]]
    assert kinds.index("server-warning") < kinds.index("kill")
    text = run("why", "llama-server", *args).stdout
    assert "the server: [tensorfold] warning: cudaMallocAsync of 2.00 GiB failed" in " ".join(text.split())
    markdown = run("why", "llama-server", *args, "-f", "markdown").stdout
    assert "| server-warning |" in markdown


def test_a_survivors_log_that_stops_before_the_kill_is_not_called_its_kill(tmp_path: Path) -> None:
    # tf-engine's log cut at 19:02:55.9, 16 s before the kill of ollama's runner (seed 004).
    case = FIXTURES / "seed004_tf_engine_involvement"
    log = tmp_path / "server.log"
    log.write_text("".join((case / "server.log").read_text().splitlines(keepends=True)[:5]))
    args = ("-k", str(FIXTURES / "seed004_tensorfold_cotenant_gb10" / "kernel.log"), "--server-log", str(log))
    document = json.loads(run("why", "tf-engine", *args, "-f", "json").stdout)
    note = document["server_log"]["note"]
    assert note.startswith("the log ends 16s before the kill (its last stamped line): it stops with no error")
    assert note.endswith("yet the kernel log holds no kill of tf-engine")
    assert "signature of a kill" not in note and "signature of a kill" not in document["verdict"]
