"""The journal as a source: real journal files, both readers, hosts, boots, unit and userspace records."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from oomtrace.sources.journalfiles import entry_out_of_order
from tests.conftest import FIXTURES, ROOT, run
from tests.journals import REMOTE, Entry, kernel_entries, write_journal

pytestmark = pytest.mark.skipif(
    REMOTE is None, reason="systemd-journal-remote is not installed (apt-get install systemd-journal-remote)"
)


@pytest.fixture(autouse=True, params=["python", "journalctl"])
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every journal test through both readers, so the journalctl fallback cannot rot where
    systemd-python is installed."""
    if request.param == "python":
        pytest.importorskip(
            "systemd.journal", reason="systemd-python is not installed: journalctl reader only"
        )
    monkeypatch.setenv("OOMTRACE_JOURNAL_READER", request.param)
    return str(request.param)


BOOT_OLD = "7d0c2c1e5a9f4d6b8e0a61f2c3b4d5e6"
BOOT_NEW = "9a1b2c3d4e5f60718293a4b5c6d7e8f9"
BOOT_02 = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
T0 = datetime(2026, 11, 14, 13, 20, 0, tzinfo=UTC)


def _service_kill(when: datetime) -> list[Entry]:
    """spark-02: llama.service killed by the kernel, then systemd's records and its own log."""
    host, boot = "spark-02", BOOT_02
    kill = when
    service = [
        ("main: model loaded", -600),
        ("srv  update_slots: all slots are idle", -590),
        ("slot update_slots: id  0 | task 7 | prompt processing progress, n_past = 4096", -3),
    ]
    entries = [
        Entry(kill + timedelta(seconds=dt), host, boot, text, "llama-server", "llama.service")
        for text, dt in service
    ]
    kernel = [
        "llama-server invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), order=0, oom_score_adj=0",
        "CPU: 3 UID: 998 PID: 5101 Comm: llama-server Tainted: P           OE      6.14.0-1015-nvidia #15-Ubuntu",
        "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/system.slice/llama.service,task=llama-server,pid=5101,uid=998",
        "Out of memory: Killed process 5101 (llama-server) total-vm:150222812kB, anon-rss:29651260kB, file-rss:8400kB, shmem-rss:0kB, UID:998 pgtables:61332kB oom_score_adj:0",
    ]
    entries += [Entry(kill, host, boot, line) for line in kernel]
    systemd = [
        ("llama.service: A process of this unit has been killed by the OOM killer.", 1),
        ("llama.service: Main process exited, code=killed, status=9/KILL", 1),
        ("llama.service: Failed with result 'oom-kill'.", 1),
        ("llama.service: Consumed 1h 2min 12.315s CPU time, 112.3G memory peak, 0B memory swap peak.", 1),
        ("llama.service: Scheduled restart job, restart counter is at 3.", 6),
    ]
    entries += [
        Entry(kill + timedelta(seconds=dt), host, boot, text, "systemd", "init.scope") for text, dt in systemd
    ]
    return entries


def _userspace_kills() -> list[Entry]:
    """spark-01, current boot: journald under pressure, systemd-oomd and earlyoom kills."""
    host, boot = "spark-01", BOOT_NEW
    base = T0 + timedelta(days=1)
    return [
        Entry(
            base,
            host,
            boot,
            "Under memory pressure, flushing caches.",
            "systemd-journald",
            "systemd-journald.service",
        ),
        Entry(
            base + timedelta(seconds=20),
            host,
            boot,
            "Killed /user.slice/user-1000.slice/user@1000.service/app.slice/app-firefox.scope due to memory pressure for "
            "/user.slice/user-1000.slice/user@1000.service being 72.21% > 50.00% for > 20s with reclaim activity",
            "systemd-oomd",
            "systemd-oomd.service",
        ),
        Entry(
            base + timedelta(seconds=20),
            host,
            boot,
            "app-firefox.scope: systemd-oomd killed 14 process(es) in this unit.",
            "systemd",
            "user@1000.service",
        ),
        Entry(
            base + timedelta(hours=1),
            host,
            boot,
            'sending SIGTERM to process 7777 uid 1000 "chrome": badness 912, VmRSS 3100 MiB',
            "earlyoom",
            "earlyoom.service",
        ),
    ]


@pytest.fixture(scope="module")
def journal_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("journal")
    seed000 = kernel_entries(FIXTURES / "seed000_llama_server_gb10" / "kernel.log", "spark-01", BOOT_OLD)
    entries = seed000 + _service_kill(T0) + _userspace_kills()
    starts = {
        BOOT_OLD: datetime(2026, 11, 14, 8, 0, tzinfo=UTC),
        BOOT_NEW: datetime(2026, 11, 15, 8, 0, tzinfo=UTC),
        BOOT_02: datetime(2026, 11, 14, 9, 0, tzinfo=UTC),
    }
    write_journal(folder / "remote.journal", entries, starts)
    return folder


def list_json(*args: str) -> dict:
    result = run("list", *args, "--format", "json", "--tz", "UTC")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _comparable(document: dict) -> list[dict]:
    return [{k: v for k, v in e.items() if k != "source"} for e in document["episodes"]]


def test_both_readers_give_identical_episodes(journal_dir: Path) -> None:
    if os.environ.get("CI") != "true":
        pytest.importorskip("systemd.journal", reason="systemd-python (the journal extra) is not installed")
    # In CI the extra must have built: .ci/run installs what it needs.
    python = list_json("-D", str(journal_dir), "--journal-reader", "python")
    journalctl = list_json("-D", str(journal_dir), "--journal-reader", "journalctl")
    assert _comparable(python) == _comparable(journalctl)
    assert len(python["episodes"]) == 4
    assert python["warnings"] == journalctl["warnings"]


def test_every_kind_of_kill_is_an_episode(journal_dir: Path) -> None:
    episodes = list_json("-D", str(journal_dir))["episodes"]
    killers = [(e["killer"], e["host"], (e["victim"] or {}).get("comm"), e["unit"]) for e in episodes]
    assert killers == [
        ("kernel", "spark-01", "llama-server", "vte-spawn-8c6a1f2e-1d1b-4c5e-9b8e-3f6f2b9f1c11.scope"),
        ("kernel", "spark-02", "llama-server", "llama.service"),
        ("systemd-oomd", "spark-01", None, "app-firefox.scope"),
        ("earlyoom", "spark-01", "chrome", None),
    ]


def test_a_unit_kill_joins_systemds_records_and_the_units_own_log(journal_dir: Path) -> None:
    result = run("why", "llama.service", "-D", str(journal_dir), "--host", "spark-02", "--format", "json")
    assert result.exit_code == 0, result.output
    story = json.loads(result.stdout)
    episode = story["episode"]
    assert story["cause"] == "kernel-oom"
    assert [r["kind"] for r in episode["unit_records"]] == [
        "oom-kill",
        "main-killed",
        "failed",
        "consumed",
        "restart",
    ]
    assert episode["restart_count"] == 3 and "crash loop" in story["verdict"]
    log = story["server_log"]
    assert log["path"] == "journal of llama.service"
    assert (log["ending"], log["last_time_from"], log["gap_s"]) == ("silent", "timestamp", 3.0)


def test_userspace_killers(journal_dir: Path) -> None:
    oomd = json.loads(run("why", "app-firefox.scope", "-D", str(journal_dir), "-f", "json").stdout)
    assert oomd["cause"] == "userspace-oom-killer" and oomd["episode"]["killer"] == "systemd-oomd"
    assert "72.21% > 50.00%" in oomd["episode"]["killer_reason"]
    earlyoom = json.loads(run("why", "chrome", "-D", str(journal_dir), "-f", "json").stdout)
    assert (
        earlyoom["episode"]["killer"] == "earlyoom" and earlyoom["episode"]["victim"]["rss_kb"] == 3100 * 1024
    )
    assert oomd["earliest_warning"]["kind"] == "journald-memory-pressure"


def test_hosts_and_boots(journal_dir: Path) -> None:
    only_02 = list_json("-D", str(journal_dir), "--host", "spark-02")["episodes"]
    assert {e["host"] for e in only_02} == {"spark-02"}
    text = run("list", "-D", str(journal_dir)).stdout
    assert "host" in text.splitlines()[0] and "spark-02" in text
    boots = json.loads(
        run("list", "--boots", "-D", str(journal_dir), "--host", "spark-01", "-f", "json").stdout
    )["boots"]
    assert [(b["index"], b["boot_id"]) for b in boots] == [(-1, BOOT_OLD), (0, BOOT_NEW)]
    # Every format draws the boots (list --boots goes through the formats like every command).
    text = run("list", "--boots", "-D", str(journal_dir), "--host", "spark-01").stdout
    assert [line.split()[:2] for line in text.splitlines()] == [["-1", BOOT_OLD], ["0", BOOT_NEW]]
    markdown = run("list", "--boots", "-D", str(journal_dir), "--host", "spark-01", "-f", "markdown").stdout
    assert f"| -1 | `{BOOT_OLD}` |" in markdown and f"| 0 | `{BOOT_NEW}` |" in markdown
    previous = list_json("-D", str(journal_dir), "--host", "spark-01", "--boot", "-1")["episodes"]
    assert [e["victim"]["comm"] for e in previous] == ["llama-server"]
    by_id = list_json("-D", str(journal_dir), "--boot", BOOT_NEW)["episodes"]
    assert [e["killer"] for e in by_id] == ["systemd-oomd", "earlyoom"]


def test_since_until_on_the_journal(journal_dir: Path) -> None:
    episodes = list_json(
        "-D", str(journal_dir), "--since", "2026-11-15 00:00", "--until", "2026-11-15 13:30"
    )["episodes"]
    assert [e["killer"] for e in episodes] == ["systemd-oomd"]


def test_journal_file_option_and_a_bad_boot(journal_dir: Path) -> None:
    file = str(journal_dir / "remote.journal")
    assert len(list_json("--journal-file", file)["episodes"]) == 4
    bad = run("list", "--journal-file", file, "--boot", "-7", "--journal-reader", "python")
    if bad.exit_code == 2 and "systemd-python" in bad.stderr:
        pytest.skip("systemd-python is not installed")
    assert bad.exit_code == 2 and "no boot '-7'" in bad.stderr


def test_a_journal_passed_as_text_gets_a_hint(journal_dir: Path) -> None:
    result = run("list", "-k", str(journal_dir / "remote.journal"))
    assert result.exit_code == 2 and "read it with --journal-file" in result.stderr


def test_unreadable_journal_says_how_to_get_access(journal_dir: Path, tmp_path: Path) -> None:
    setpriv, system_python = shutil.which("setpriv"), "/usr/bin/python3"
    if os.geteuid() != 0 or setpriv is None or not os.path.exists(system_python):
        pytest.skip("needs root, setpriv and /usr/bin/python3 to run as an unprivileged user")
    # A folder the unprivileged user can enter, holding a journal only root and its group may read.
    private = Path(tempfile.mkdtemp(prefix="oomtrace-journal-", dir="/tmp"))
    os.chmod(private, 0o755)
    shutil.copy(journal_dir / "remote.journal", private / "system.journal")
    os.chmod(private / "system.journal", 0o640)
    site = [p for p in sys.path if p.endswith("site-packages")]
    code = (
        f"import sys; sys.path[:0] = {[str(ROOT / 'src'), *site]!r}; "
        "from oomtrace.cli import main; sys.argv = ['oomtrace', 'list', '-D', sys.argv[1]]; main()"
    )
    done = subprocess.run(
        [
            setpriv,
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            system_python,
            "-c",
            code,
            str(private),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if "ModuleNotFoundError" in done.stderr or "Permission denied: '/" in done.stderr:
        pytest.skip(
            f"the unprivileged user cannot load oomtrace here: {done.stderr.strip().splitlines()[-1]}"
        )
    shutil.rmtree(private)
    assert done.returncode == 2, done.stderr
    assert "permission denied" in done.stderr and "systemd-journal" in done.stderr
    assert done.stderr.count("\n") == 1


def test_damaged_and_cut_journal_files_are_read_as_far_as_they_go_and_said(
    tmp_path: Path, reader: str
) -> None:
    folder = tmp_path / "journal"
    folder.mkdir()
    seed000 = kernel_entries(FIXTURES / "seed000_llama_server_gb10" / "kernel.log", "spark-01", BOOT_OLD)
    seed002 = kernel_entries(FIXTURES / "seed002_ds4_server_gb10" / "kernel.log", "spark-02", BOOT_02)
    write_journal(folder / "good.journal", seed000, {BOOT_OLD: seed000[0].time - timedelta(hours=1)})
    damaged = write_journal(
        folder / "damaged.journal", seed002, {BOOT_02: seed002[0].time - timedelta(hours=1)}
    )
    # Overwrite two bytes of a field name shared by every entry of the file (a bad sector).
    data = bytearray(damaged.read_bytes())
    at = data.find(b"_HOSTNAME=spark-02")
    data[at : at + 2] = b"\xff\xfe"
    damaged.write_bytes(bytes(data))
    cut = folder / "cut.journal"
    whole = (folder / "good.journal").read_bytes()
    cut.write_bytes(whole[: len(whole) // 3])
    result = run("list", "-D", str(folder), "--format", "json", "--tz", "UTC")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    problems = " ".join(p["problem"] for p in document["source"]["problems"])
    assert "cut.journal is cut short (" in problems
    pids = {e["victim"]["pid"] for e in document["episodes"] if e["victim"]}
    assert 1966928 in pids  # the good file's kill
    if reader == "python":
        # Every entry of the damaged file is read, without the damaged field.
        assert len(document["episodes"]) == 5
        assert "entries with a damaged field were read without it" in problems
    else:
        # journalctl stops at the damaged entry: said, with where (each host's files are one read).
        assert (
            "journalctl: Invalid field. (in damaged.journal, after 0 entries; what followed is lost)"
            in problems
        )
        assert "cut.journal is cut short (" in problems and "no whole entry in it could be read" in problems
    text = run("list", "-D", str(folder), "--tz", "UTC")
    assert "cut.journal is cut short" in " ".join(text.stdout.split())


def test_why_reads_a_units_own_log_only_around_its_kill(tmp_path: Path) -> None:
    folder = tmp_path / "journal"
    folder.mkdir()
    host, boot = "spark-02", BOOT_02
    old = [
        Entry(
            T0 - timedelta(days=3, seconds=n),
            host,
            boot,
            f"srv  old request {n}",
            "llama-server",
            "llama.service",
        )
        for n in range(500)
    ]
    later = [Entry(T0 + timedelta(hours=2), host, boot, "main: a new run", "llama-server", "llama.service")]
    write_journal(
        folder / "remote.journal",
        _service_kill(T0) + old + later,
        {BOOT_02: datetime(2026, 11, 10, 9, 0, tzinfo=UTC)},
    )
    result = run("why", "llama.service", "-D", str(folder), "--format", "json")
    assert result.exit_code == 0, result.output
    log = json.loads(result.stdout)["server_log"]
    # The day before the kill and the hour after it: the three lines around the kill, not the
    # 500 of three days before nor the restart two hours later.
    assert log["lines"] == 3
    assert log["ending"] == "silent"


def _noise_store(folder: Path, hosts: dict[str, int]) -> dict[str, list[Entry]]:
    """One file per host (as journal-remote's --split-mode=host keeps them), each host's kernel
    chatter every ten minutes from T0, `hosts[name]` lines of it: no OOM line anywhere."""
    folder.mkdir()
    written = {}
    for index, (host, count) in enumerate(hosts.items()):
        boot = f"{index + 1:032x}"
        entries = [
            Entry(T0 + timedelta(minutes=10 * n, seconds=index), host, boot, f"usb 1-{n}: new device")
            for n in range(count)
        ]
        write_journal(folder / f"remote-{host}.journal", entries, {boot: T0 - timedelta(hours=1)})
        written[host] = entries
    return written


def test_the_span_of_a_multi_file_directory_ends_at_its_last_entry(tmp_path: Path) -> None:
    """The last entry of the store is chatter (no OOM line): the span still ends there, with
    either reader (libsystemd's reader once stepped back one entry too far)."""
    written = _noise_store(tmp_path / "store", {"a": 5, "b": 8, "c": 11})
    last = max(e.time for entries in written.values() for e in entries)
    source = list_json("-D", str(tmp_path / "store"))["source"]
    assert (source["first"]["time"], source["last"]["time"]) == (T0.isoformat(), last.isoformat())
    assert source["records"] == 24
    until = list_json("-D", str(tmp_path / "store"), "--until", "2026-11-14 14:45")["source"]
    # c's 14:40:02 is the last entry at or before 14:45.
    assert until["last"]["time"] == (T0 + timedelta(minutes=80, seconds=2)).isoformat()


FLEET = {
    "spark-01": ("seed000_llama_server_gb10", {1966928}),
    "spark-02": ("seed002_ds4_server_gb10", {124531, 3015, 3021, 3077}),
    "spark-03": ("seed004_tensorfold_cotenant_gb10", {88213}),
}


@pytest.fixture(scope="module")
def fleet_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fleet")
    for index, (host, (case, _)) in enumerate(FLEET.items()):
        boot = f"{index + 1:032x}"
        entries = kernel_entries(FIXTURES / case / "kernel.log", host, boot)
        write_journal(
            folder / f"remote-{host}.journal", entries, {boot: entries[0].time - timedelta(hours=1)}
        )
    return folder


def _kills(document: dict) -> set[tuple[str, int]]:
    return {(e["host"], e["victim"]["pid"]) for e in document["episodes"] if e["victim"]}


# How far before its payload the `_TRANSPORT=kernel` data object keeps its hash and the offset of
# its entry array (systemd 252's DataObject: a 16-byte header, hash, three offsets, n_entries, the
# tail array's offset and count): either overwritten, a match on the transport finds none of the
# file's kernel entries.
DATA_FIELDS = {"hash": 56, "entry array": 24}


@pytest.mark.parametrize("field", sorted(DATA_FIELDS))
def test_a_file_with_a_damaged_kernel_index_is_read_on_its_own_and_named(
    fleet_store: Path, tmp_path: Path, field: str
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(fleet_store, copy)
    damaged = copy / "remote-spark-02.journal"
    data = bytearray(damaged.read_bytes())
    at = data.index(b"_TRANSPORT=kernel") - DATA_FIELDS[field]
    data[at : at + 8] = b"\xa5" * 8
    damaged.write_bytes(bytes(data))
    # What fails: a match on the transport loses spark-02's kills, which journalctl without a
    # match (walking every entry) still shows.
    matched = subprocess.run(
        ["journalctl", "-D", str(copy), "-o", "cat", "_TRANSPORT=kernel"], capture_output=True, text=True
    )
    plain = subprocess.run(["journalctl", "-D", str(copy), "-o", "cat"], capture_output=True, text=True)
    assert "Killed process 3077" in plain.stdout and "Killed process 3077" not in matched.stdout
    whole = list_json("-D", str(fleet_store))
    document = list_json("-D", str(copy))
    assert _kills(document) == {(h, pid) for h, (_, pids) in FLEET.items() for pid in pids}
    # The same episodes; their entry numbers differ, as the damaged file is read last.
    assert [{k: v for k, v in e.items() if k != "lines"} for e in _comparable(document)] == [
        {k: v for k, v in e.items() if k != "lines"} for e in _comparable(whole)
    ]
    span = [document["source"][end]["time"] for end in ("first", "last")]
    assert span == [whole["source"][end]["time"] for end in ("first", "last")]
    (problem,) = [p["problem"] for p in document["source"]["problems"]]
    assert problem.startswith("remote-spark-02.journal has a damaged kernel index")
    assert "read on its own" in problem
    # The sound store says nothing of the kind.
    assert whole["source"]["problems"] == []
    hosts = {h["host"]: h for h in list_json("--by-host", "-D", str(copy))["hosts"]}
    assert hosts["spark-02"]["kills"] == 4 and hosts["spark-02"]["last"] == "2026-11-19T21:47:35+00:00"


def test_a_single_journal_file_cut_short_is_read_up_to_the_cut(fleet_store: Path, tmp_path: Path) -> None:
    data = (fleet_store / "remote-spark-02.journal").read_bytes()
    cut = tmp_path / "remote-spark-02.journal"
    # Cut where the last kill's message was being written: it and all after it are lost.
    cut.write_bytes(data[: data.index(b"Out of memory: Killed process 3077")])
    refused = subprocess.run(["journalctl", "--file", str(cut)], capture_output=True, text=True)
    assert "No data available" in refused.stderr  # libsystemd refuses the file as it is
    result = run("list", "--journal-file", str(cut), "--format", "json", "--tz", "UTC")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert _kills(document) == {("spark-02", pid) for pid in (124531, 3015, 3021, 3077)}
    # The last report is there up to its oom-kill summary; its kill line is past the cut, and said so.
    last_kill = document["episodes"][-1]
    assert (last_kill["victim"]["pid"], last_kill["missing"]) == (3077, ["kill"])
    assert all(e["missing"] == [] for e in document["episodes"][:-1])
    (problem,) = [p["problem"] for p in document["source"]["problems"]]
    last = document["source"]["last"]["time"]
    assert last == "2026-11-19T21:47:35+00:00"
    assert problem == (
        f"remote-spark-02.journal is cut short ({len(cut.read_bytes()):,} of {len(data):,} bytes): "
        "read up to its last whole entry, 2026-11-19 21:47:35+00:00; what followed is lost"
    )
    text = " ".join(run("list", "--journal-file", str(cut), "--tz", "UTC").stdout.split())
    assert "read up to its last whole entry, 2026-11-19 21:47:35+00:00" in text
    # The file itself is left as it was: the mended copy was a temporary one.
    assert cut.read_bytes() == data[: data.index(b"Out of memory: Killed process 3077")]


_LOGGER = {"_UID": "1000", "_GID": "1000", "_COMM": "logger", "_EXE": "/usr/bin/logger", "_PID": "4242"}
_FORGED_EARLYOOM = 'sending SIGKILL to process 1 uid 0 "systemd": badness 900, VmRSS 100 MiB'


def _claims(when: datetime) -> list[Entry]:
    """Issue 41: `logger -t earlyoom` and `logger -t systemd` by uid 1000 beside the real ones."""
    host, boot = "spark-03", BOOT_02
    own_earlyoom = {"_UID": "0", "_COMM": "earlyoom", "_PID": "611"}
    pid1 = {"_UID": "0", "_COMM": "systemd", "_PID": "1"}
    return [
        Entry(when, host, boot, _FORGED_EARLYOOM, "earlyoom", "session-3.scope", dict(_LOGGER)),
        Entry(
            when + timedelta(seconds=1),
            host,
            boot,
            "sshd.service: A process of this unit has been killed by the OOM killer.",
            "systemd",
            "session-3.scope",
            dict(_LOGGER),
        ),
        Entry(
            when + timedelta(minutes=5),
            host,
            boot,
            'sending SIGTERM to process 8888 uid 1000 "chrome": badness 912, VmRSS 3100 MiB',
            "earlyoom",
            "earlyoom.service",
            own_earlyoom,
        ),
        Entry(
            when + timedelta(minutes=9),
            host,
            boot,
            "worker.service: A process of this unit has been killed by the OOM killer.",
            "systemd",
            "init.scope",
            pid1,
        ),
    ]


def test_a_killers_record_from_another_process_is_a_claim_not_a_kill(tmp_path: Path) -> None:
    """Issue 41: any local user can write earlyoom's or systemd's records (`logger -t earlyoom`).
    The journal's trusted fields say who did: those from uid 1000's logger are claims (said so),
    not kills for check or export; the real earlyoom's and pid 1's are."""
    start = datetime(2026, 11, 14, 9, 0, tzinfo=UTC)
    journal = write_journal(tmp_path / "claims.journal", _claims(T0), {BOOT_02: start})
    document = list_json("--journal-file", str(journal))
    doubts = {
        (e["killer"], e["victim"]["comm"] if e["victim"] else e["unit"]): e["doubt"]
        for e in document["episodes"]
    }
    assert doubts == {
        ("earlyoom", "systemd"): "claimed by an unprivileged process (uid 1000, logger)",
        ("systemd", "sshd.service"): "claimed by an unprivileged process (uid 1000, logger)",
        ("earlyoom", "chrome"): None,
        ("systemd", "worker.service"): None,
    }
    why = run("why", "systemd", "--journal-file", str(journal), "--tz", "UTC").stdout
    assert "claimed by an unprivileged process (uid 1000, logger)" in " ".join(why.split())
    prom = tmp_path / "oom.prom"
    assert run("export", "--journal-file", str(journal), "--prom-textfile", str(prom)).exit_code == 0
    counted = [line for line in prom.read_text().splitlines() if line.startswith("oomtrace_oom_kills_total")]
    assert len(counted) == 2 and not any('comm="systemd"' in line or "sshd" in line for line in counted)
    # check: the cursor set before the claims; then only the real kills are news.
    earlier = start - timedelta(days=1)
    before = write_journal(
        tmp_path / "before.journal", _service_kill(T0 - timedelta(days=1)), {BOOT_02: earlier}
    )
    cursor = tmp_path / "cursor.json"
    assert run("check", "--journal-file", str(before), "--cursor-file", str(cursor)).exit_code == 0
    forged_only = write_journal(tmp_path / "forged.journal", _claims(T0)[:2], {BOOT_02: start})
    result = run("check", "--journal-file", str(forged_only), "--cursor-file", str(cursor))
    assert (result.exit_code, result.stdout.strip()) == (0, "no new OOM kill")
    result = run("check", "--journal-file", str(journal), "--cursor-file", str(cursor))
    # The two real kills (worker.service, and chrome "+1 more"), not the claims.
    assert result.exit_code == 1 and result.stdout.startswith("OOM kill: worker.service")
    assert "+1 more" in result.stdout and "systemd" not in result.stdout


def test_an_entry_that_only_names_itself_kernel_is_a_claim(tmp_path: Path) -> None:
    """Issue 41: `logger -t kernel "Out of memory: Killed process ..."` (SYSLOG_IDENTIFIER=kernel,
    _TRANSPORT=syslog, uid 1000) was read as the kernel's kill: check said it, export counted it.
    Only _TRANSPORT=kernel is the kernel's; such an entry is a claim, said with its writer."""
    start = datetime(2026, 11, 14, 9, 0, tzinfo=UTC)
    forged = Entry(
        T0,
        "spark-02",
        BOOT_02,
        "Out of memory: Killed process 4242 (sshd) total-vm:1000kB, anon-rss:500kB, file-rss:0kB, "
        "shmem-rss:0kB, UID:0 pgtables:40kB oom_score_adj:0",
        "kernel",
        extra={"_TRANSPORT": "syslog", "_UID": "1000", "_GID": "1000", "_COMM": "logger"},
    )
    journal = write_journal(tmp_path / "forged.journal", [forged], {BOOT_02: start})
    document = list_json("--journal-file", str(journal))
    episodes = [(e["victim"]["comm"], e["doubt"]) for e in document["episodes"]]
    assert episodes == []  # the readers ask the journal for _TRANSPORT=kernel entries only
    # Saved with `journalctl -o json` and read as a file, the entry says what it is.
    exported = tmp_path / "forged.json"
    with exported.open("w") as out:
        subprocess.run(["journalctl", "--file", str(journal), "-o", "json"], stdout=out, check=True)
    document = list_json("-k", str(exported))
    episodes = [(e["victim"]["comm"], e["doubt"]) for e in document["episodes"]]
    assert episodes == [("sshd", "claimed by an unprivileged process (uid 1000, logger)")]
    prom = tmp_path / "oom.prom"
    assert run("export", "--journal-file", str(journal), "--prom-textfile", str(prom)).exit_code == 0
    assert not [
        line for line in prom.read_text().splitlines() if line.startswith("oomtrace_oom_kills_total{")
    ]
    # The same entry as the kernel wrote it (_TRANSPORT=kernel) is a kill.
    real = write_journal(tmp_path / "real.journal", [dataclasses.replace(forged, extra={})], {BOOT_02: start})
    assert [e["doubt"] for e in list_json("--journal-file", str(real))["episodes"]] == [None]


def _entry_objects(data: bytes) -> list[int]:
    """The offsets of a journal file's ENTRY objects (type 3), walking its objects from the header
    on (each 8-byte aligned, its size 8 bytes into its header)."""
    header_size, arena_size = struct.unpack_from("<QQ", data, 88)
    at, found = header_size, []
    while at + 16 <= header_size + arena_size:
        size = struct.unpack_from("<Q", data, at + 8)[0]
        if size < 16:
            break
        if data[at] == 3:
            found.append(at)
        at += (size + 7) & ~7
    return found


def test_a_damaged_entry_that_ends_the_walk_of_a_file_is_said_and_its_host_kept(
    fleet_store: Path, tmp_path: Path
) -> None:
    """Issue 41: an entry whose sequence number is overwritten (a bad sector in a copy) ends
    libsystemd's walk of its file there: both readers lost the kills after it, exit 0, not a word."""
    copy = tmp_path / "copy"
    shutil.copytree(fleet_store, copy)
    damaged = copy / "remote-spark-02.journal"
    data = bytearray(damaged.read_bytes())
    # The entry of the first kill line, just after its MESSAGE data object: its seqnum, 16 bytes in.
    kill = data.index(b"Out of memory: Killed process 124531")
    entry = next(at for at in _entry_objects(bytes(data)) if at > kill)
    data[entry + 16 : entry + 24] = b"\xa5" * 8
    damaged.write_bytes(bytes(data))
    # What libsystemd does: journalctl --verify fails; a read ends at the damaged entry with exit 0
    # and nothing on stderr (the damaged entry, the first kill line, is the last one shown).
    verify = subprocess.run(
        ["journalctl", "--verify", "--file", str(damaged)], capture_output=True, text=True
    )
    assert verify.returncode != 0 and "FAIL" in verify.stderr + verify.stdout
    plain = subprocess.run(
        ["journalctl", "--file", str(damaged), "-o", "cat"], capture_output=True, text=True
    )
    assert plain.returncode == 0 and plain.stderr == ""
    assert "Killed process 124531" in plain.stdout and "Killed process 3015" not in plain.stdout
    result = run("list", "-D", str(copy), "--format", "json", "--tz", "UTC")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert _kills(document) == {("spark-01", 1966928), ("spark-02", 124531), ("spark-03", 88213)}
    (problem,) = [p["problem"] for p in document["source"]["problems"]]
    assert problem == (
        f"remote-spark-02.journal (host spark-02) is damaged (its first entry out of order is at byte "
        f"{entry:,}): read only up to 2026-11-19 21:47:33+00:00, "
        "short of its last kernel entry of 2026-11-19 21:47:35+00:00; the entries between could not "
        "be read, and a kill there is not in this read (`journalctl --verify --file "
        "remote-spark-02.journal` checks the file)"
    )
    text = " ".join(run("list", "-D", str(copy), "--tz", "UTC").stdout.split())
    assert "remote-spark-02.journal (host spark-02) is damaged" in text
    # The host stays in --by-host with what was read of it.
    by_host = list_json("--by-host", "-D", str(copy))
    hosts = {h["host"]: h for h in by_host["hosts"]}
    assert set(hosts) == set(FLEET) and hosts["spark-02"]["kills"] == 1
    assert hosts["spark-02"]["damaged_file"] == "remote-spark-02.journal"
    assert hosts["spark-02"]["read_to"] == "2026-11-19T21:47:33+00:00"
    assert hosts["spark-01"]["damaged_file"] is None and hosts["spark-03"]["read_to"] is None
    assert (
        "spark-02: its journal file remote-spark-02.journal is damaged: read only up to "
        "2026-11-19 21:47:33+00:00 (1 kill read before that); the entries after could not be read "
        "(a kill there is not in this list)"
    ) in by_host["notes"]
    damage_notes = [note for note in by_host["notes"] if "damaged" in note]
    assert len(damage_notes) == 1 and damage_notes[0].startswith("spark-02:")
    # The walk that finds the damaged entry finds none in a sound file.
    assert entry_out_of_order(str(fleet_store / "remote-spark-02.journal")) is None
    assert entry_out_of_order(str(damaged)) == entry
    # Sound files, or a range that ends before the damage, say nothing of the kind.
    assert list_json("-D", str(fleet_store))["source"]["problems"] == []
    before = list_json("-D", str(copy), "--until", "2026-11-19 21:47:00")["source"]["problems"]
    assert before == []
