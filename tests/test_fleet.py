"""Fleets: a systemd-journal-remote store of three hosts (one file per host, as
`--split-mode=host` keeps them), read with `list --by-host` and `why`."""

from __future__ import annotations

import json
import secrets
import shutil
import socket
import subprocess
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from oomtrace.prefixes import LineSplitter
from tests.conftest import FIXTURES, run
from tests.journals import REMOTE, Entry, kernel_entries, write_journal

pytestmark = pytest.mark.skipif(REMOTE is None, reason="needs systemd-journal-remote to write journal files")

# Each host's incident: one of the shipped write-ups, as that host's kernel said it.
HOSTS = {
    "spark-01": "seed000_llama_server_gb10",
    "spark-02": "seed002_ds4_server_gb10",
    "spark-03": "seed004_tensorfold_cotenant_gb10",
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("remote")
    for host, case in HOSTS.items():
        boot = secrets.token_hex(16)
        entries = kernel_entries(FIXTURES / case / "kernel.log", host, boot)
        write_journal(
            folder / f"remote-{host}.journal", entries, {boot: entries[0].time - timedelta(hours=1)}
        )
    return folder


def test_list_by_host_gives_one_row_per_host(store: Path) -> None:
    result = run("list", "--by-host", "-D", str(store), "--format", "json", "--tz", "UTC")
    assert result.exit_code == 0, result.output
    hosts = {h["host"]: h for h in json.loads(result.stdout)["hosts"]}
    assert set(hosts) == set(HOSTS)
    assert (hosts["spark-01"]["kills"], hosts["spark-01"]["top_victim"]) == (1, "llama-server")
    assert (hosts["spark-02"]["kills"], hosts["spark-02"]["incidents"]) == (4, 1)
    assert hosts["spark-03"]["top_victim"] == "ollama_llama_se"
    # The host with the latest kill first.
    order = [h["host"] for h in json.loads(result.stdout)["hosts"]]
    assert order == sorted(order, key=lambda h: hosts[h]["last_kill"], reverse=True)
    text = run("list", "--by-host", "-D", str(store), "--tz", "UTC").stdout
    assert "spark-02" in text and "ds4-server ×1" in text
    markdown = run("list", "--by-host", "-D", str(store), "--tz", "UTC", "-f", "markdown").stdout
    assert "| spark-01 | 1 | 1 |" in markdown


NVRM = (
    "NVRM: nvCheckOkFailedNoLog: Check failed: Out of memory [NV_ERR_NO_MEMORY] (0x00000051) "
    "returned from _memdescAllocInternal(pMemDesc) @ mem_desc.c:1359"
)
QUIET_FROM = datetime(2026, 11, 19, 21, 0, 0, tzinfo=UTC)
QUIET_TO = datetime(2026, 11, 19, 21, 46, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def fleet_with_a_quiet_host(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """spark-01 (seed 000's kill, five days before the rest ends), spark-02 (seed 002's kills)
    and spark-03: read to within two minutes of spark-02's end, NVRM warnings, no kill."""
    folder = tmp_path_factory.mktemp("quiet")
    for host, case in (("spark-01", HOSTS["spark-01"]), ("spark-02", HOSTS["spark-02"])):
        boot = secrets.token_hex(16)
        entries = kernel_entries(FIXTURES / case / "kernel.log", host, boot)
        write_journal(
            folder / f"remote-{host}.journal", entries, {boot: entries[0].time - timedelta(hours=1)}
        )
    boot = secrets.token_hex(16)
    quiet = [
        Entry(QUIET_FROM + timedelta(minutes=n), "spark-03", boot, f"usb 1-{n}: new device")
        for n in range(46)
    ]
    quiet += [Entry(QUIET_FROM + timedelta(minutes=20, seconds=n), "spark-03", boot, NVRM) for n in (1, 3, 5)]
    quiet.append(Entry(QUIET_TO, "spark-03", boot, "usb 1-46: new device"))
    write_journal(folder / "remote-spark-03.journal", quiet, {boot: QUIET_FROM - timedelta(hours=1)})
    return folder


@pytest.mark.parametrize("reader", ["python", "journalctl"])
def test_a_quiet_host_gets_its_row_and_an_early_end_is_said(
    fleet_with_a_quiet_host: Path, reader: str
) -> None:
    if reader == "python":
        pytest.importorskip("systemd.journal", reason="systemd-python is not installed")
    args = (
        "list",
        "--by-host",
        "-D",
        str(fleet_with_a_quiet_host),
        "--tz",
        "UTC",
        "--journal-reader",
        reader,
    )
    document = json.loads(run(*args, "-f", "json").stdout)
    hosts = {h["host"]: h for h in document["hosts"]}
    assert [h["host"] for h in document["hosts"]] == ["spark-02", "spark-01", "spark-03"]
    quiet = hosts["spark-03"]
    assert (quiet["kills"], quiet["incidents"], quiet["last_kill"], quiet["top_victim"]) == (0, 0, None, None)
    assert (quiet["warnings"], quiet["warning_kinds"]) == (3, {"nvrm-no-memory": 3})
    assert (quiet["first"], quiet["last"]) == (QUIET_FROM.isoformat(), QUIET_TO.isoformat())
    # Each host's span is its own first and last entry, not only the lines of its reports.
    assert (hosts["spark-01"]["first"], hosts["spark-01"]["last"]) == (
        "2026-11-14T12:58:03+00:00",
        "2026-11-14T13:14:02+00:00",
    )
    assert hosts["spark-02"]["last"] == "2026-11-19T21:47:35+00:00"
    # Only spark-01 ends long before the others: spark-03 ends 95 s before spark-02, as a quiet
    # host does, and is not said to have stopped.
    assert [h for h, row in hosts.items() if row["log_ends_early"]] == ["spark-01"]
    (note,) = document["notes"]
    assert note.startswith("spark-01: its log ends at 2026-11-14 13:14:02+00:00, 5d08h before spark-02's")
    text = run(*args).stdout
    # 80 columns: a host a few lines, the quiet one without a last kill or a top victim.
    quiet_block = "spark-03\n    kills 0\n    incidents 0\n    warnings 3\n    log from 11-19 21:00:00\n"
    assert quiet_block + "    log to 11-19 21:46:00\nspark-01: its log ends" in text
    words = " ".join(text.split())
    assert "spark-01: its log ends at 2026-11-14 13:14:02+00:00" in words and "spark-03: its log" not in words
    markdown = run(*args, "-f", "markdown").stdout
    assert "| spark-03 | 0 | 0 | 3 | 11-19 21:00:00 | 11-19 21:46:00 |  |  |" in markdown
    assert "| spark-01 | 1 | 1 | 2 | 11-14 12:58:03 | 11-14 13:14:02 (early) |" in markdown
    assert "- spark-01: its log ends at" in markdown and "- spark-03" not in markdown


@pytest.mark.parametrize(("name", "host"), [("llama-server", "spark-01"), ("ds4-server", "spark-02")])
def test_why_over_a_store_says_which_host_it_died_on(store: Path, name: str, host: str) -> None:
    document = json.loads(run("why", name, "-D", str(store), "--format", "json", "--tz", "UTC").stdout)
    assert document["episode"]["host"] == host
    text = run("why", name, "-D", str(store), "--tz", "UTC").stdout
    facts = [line for line in text.splitlines() if line.startswith("Host")]
    assert facts and facts[0].split()[-1] == host
    markdown = run("why", name, "-D", str(store), "--tz", "UTC", "-f", "markdown").stdout
    assert f"| Host | {host} |" in markdown


def test_one_host_says_no_host_fact() -> None:
    text = run("why", "llama-server", "-k", str(FIXTURES / "seed000_llama_server_gb10" / "kernel.log")).stdout
    assert not any(line.startswith("Host") for line in text.splitlines())


def test_export_writes_textfile_metrics_prometheus_can_parse(tmp_path: Path) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    path = tmp_path / "oomtrace.prom"
    log = FIXTURES / "seed002_ds4_server_gb10" / "kernel.log"
    result = run("export", "-k", str(log), "--tz", "UTC", "--year", "2026", "--prom-textfile", str(path))
    assert result.exit_code == 0, result.output
    families = {f.name: f for f in text_string_to_metric_families(path.read_text())}
    kills = families["oomtrace_oom_kills"].samples
    assert {s.labels["comm"] for s in kills} == {"ds4-server", "pipewire", "dbus-daemon", "kactivitymanage"}
    assert all(s.value == 1 and s.labels["constraint"] == "global" and "pid" not in s.labels for s in kills)
    assert {s.labels["unit"] for s in kills} >= {"pipewire.service", "dbus.service"}
    (last,) = families["oomtrace_last_oom_timestamp_seconds"].samples
    assert last.value == datetime(2026, 11, 19, 21, 47, 35, tzinfo=UTC).timestamp()
    warnings = {s.labels["kind"]: s.value for s in families["oomtrace_early_warnings"].samples}
    assert warnings == {"page-allocation-failure": 1}
    (lead,) = families["oomtrace_warning_lead_seconds"].samples
    assert lead.value > 0
    assert not any(name.endswith("_created") for name in path.read_text().split())


def test_a_pod_and_container_become_labels(tmp_path: Path) -> None:
    """A real report from a Kubernetes node (a paste from a public bug report, in the corpus):
    its cgroup's pod uid and container id become labels; no pid does."""
    from prometheus_client.parser import text_string_to_metric_families

    paste = (
        FIXTURES.parent / "tests" / "realworld" / "cases" / "k8s-kubepods-dmesg-T-rhel7-java" / "input.txt"
    )
    path = tmp_path / "oomtrace.prom"
    result = run("export", "-k", str(paste), "--tz", "UTC", "--year", "2026", "--prom-textfile", str(path))
    assert result.exit_code == 0, result.output
    families = {f.name: f for f in text_string_to_metric_families(path.read_text())}
    (kill,) = families["oomtrace_oom_kills"].samples
    assert kill.labels == {
        "comm": "java",
        "constraint": "memcg",
        "killer": "kernel",
        "unit": "",
        "pod_uid": "95387fa4-da9c-11e7-9d36-5254b24cbf5e",
        "container_id": "6895a3e13439",
    }


def _node_exporter() -> str | None:
    return shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")


@pytest.mark.skipif(_node_exporter() is None, reason="prometheus-node-exporter is not installed (apt)")
def test_the_real_node_exporter_serves_the_textfile(tmp_path: Path) -> None:
    path = tmp_path / "oomtrace.prom"
    log = FIXTURES / "seed002_ds4_server_gb10" / "kernel.log"
    assert (
        run("export", "-k", str(log), "--tz", "UTC", "--year", "2026", "--prom-textfile", str(path)).exit_code
        == 0
    )
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    exporter = subprocess.Popen(
        [
            str(_node_exporter()),
            "--collector.disable-defaults",
            "--collector.textfile",
            f"--collector.textfile.directory={tmp_path}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        body = ""
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
                    body = response.read().decode()
                break
            except OSError:
                time.sleep(0.1)
    finally:
        exporter.terminate()
        exporter.wait(timeout=10)
    assert 'oomtrace_oom_kills_total{comm="ds4-server"' in body
    # node_exporter says whether it could read the file: an error here would be a format it refused.
    assert "node_textfile_scrape_error 0" in body


@pytest.mark.parametrize("first_run", [True, False])
def test_check_as_node_problem_detector_runs_it(tmp_path: Path, first_run: bool) -> None:
    log = tmp_path / "kern.log"
    cursor = tmp_path / "cursor.json"
    seed002 = (FIXTURES / "seed002_ds4_server_gb10" / "kernel.log").read_text()
    log.write_text(seed002)
    args = ("check", "--cursor-file", str(cursor), "-k", str(log), "--tz", "UTC", "--year", "2026")
    first = run(*args)
    # The first run only sets the cursor: the log's old kills are not news.
    assert (first.exit_code, first.stdout.strip()) == (0, "no new OOM kill")
    if not first_run:
        assert run(*args).exit_code == 0  # nothing new since
    # A new kill arrives (seed 000's, a day later): reported once, then not again.
    later = (FIXTURES / "seed000_llama_server_gb10" / "kernel.log").read_text().replace("Nov 14", "Nov 20")
    log.write_text(seed002 + later)
    new = run(*args)
    assert new.exit_code == 1, new.output
    (line,) = new.stdout.splitlines()
    assert line.startswith("OOM kill: llama-server (pid 1966928) kernel-oom") and len(line) < 80
    assert run(*args).exit_code == 0
    broken = run("check", "--cursor-file", str(cursor), "-k", str(tmp_path / "absent.log"))
    assert broken.exit_code == 2 and broken.stdout.startswith("unknown: ") and len(broken.stdout.strip()) < 80


def test_the_npd_plugin_config_runs_check() -> None:
    config = json.loads((FIXTURES.parent / "contrib" / "npd-oomtrace.json").read_text())
    assert config["plugin"] == "custom" and config["pluginConfig"]["max_output_length"] == 80
    (rule,) = config["rules"]
    assert rule["type"] == "temporary" and rule["reason"] == "OOMKilling"
    assert rule["args"][:2] == ["check", "--cursor-file"]
    # What NPD would run, with this machine's oomtrace: its options parse.
    result = run(*rule["args"][:3], "--help")
    assert result.exit_code == 0, result.output


def _messages(case: str, host: str, shift: timedelta = timedelta(0)) -> list[tuple[datetime, str, str]]:
    """(time, host, message) of each line of a shipped case, as a log shipper would send them."""
    log = FIXTURES / case / "kernel.log"
    splitter = LineSplitter(str(log), zone=UTC, year=2026)
    found = []
    for number, line in enumerate(log.read_text().splitlines(), 1):
        for record in splitter.split(line, number):
            if record.stamp.wall is not None and record.message.strip():
                found.append((record.stamp.wall + shift, host, record.message))
    return found


def _two_hosts_at_once() -> list[tuple[datetime, str, str]]:
    """Seed 000 on spark-01 and seed 004 on spark-03, moved so that both kernels print their
    reports in the same second: an export interleaves their lines."""
    seed000 = _messages("seed000_llama_server_gb10", "spark-01")
    shift = datetime(2026, 11, 14, 13, 12, 12, tzinfo=UTC) - datetime(2026, 10, 30, 19, 3, 12, tzinfo=UTC)
    seed004 = _messages("seed004_tensorfold_cotenant_gb10", "spark-03", shift)
    return sorted(seed000 + seed004, key=lambda m: m[0])


def _nanos(time: datetime) -> str:
    return f"{int(time.timestamp()) * 1_000_000_000 + time.microsecond * 1000}"


EXPORTS = {
    # logcli query --output jsonl (Grafana Loki's documentation gives this shape).
    "loki": lambda t, h, m: {
        "labels": {"host": h, "job": "kernel"},
        "line": m,
        "timestamp": t.isoformat().replace("+00:00", "Z"),
    },
    "elasticsearch": lambda t, h, m: {
        "_index": "logs",
        "_id": "x",
        "_source": {"@timestamp": t.isoformat(), "message": m, "host": {"name": h}},
    },
    "otel": lambda t, h, m: {
        "resourceLogs": [
            {
                "resource": {"attributes": [{"key": "host.name", "value": {"stringValue": h}}]},
                "scopeLogs": [{"logRecords": [{"timeUnixNano": _nanos(t), "body": {"stringValue": m}}]}],
            }
        ]
    },
    "fluent-bit": lambda t, h, m: {"date": t.timestamp(), "log": m, "hostname": h},
}


@pytest.mark.parametrize("shape", sorted(EXPORTS))
def test_an_export_of_two_hosts_interleaved_keeps_each_report_whole(tmp_path: Path, shape: str) -> None:
    export = tmp_path / "kernel.jsonl"
    export.write_text("".join(json.dumps(EXPORTS[shape](*m)) + "\n" for m in _two_hosts_at_once()))
    document = json.loads(run("list", "-k", str(export), "--format", "json", "--tz", "UTC").stdout)
    kills = {(e["host"], e["victim"]["comm"]): e for e in document["episodes"] if e["victim"]}
    assert set(kills) == {("spark-01", "llama-server"), ("spark-03", "ollama_llama_se")}
    # Each report is its own host's: its trigger, its tasks table, its memory.
    llama, ollama = kills["spark-01", "llama-server"], kills["spark-03", "ollama_llama_se"]
    assert (llama["trigger"]["comm"], ollama["trigger"]["comm"]) == ("dashboard-servi", "tf-engine")
    assert (llama["ranking"]["candidates"], ollama["ranking"]["candidates"]) == (10, 8)
    hosts = {
        h["host"]
        for h in json.loads(run("list", "--by-host", "-k", str(export), "-f", "json").stdout)["hosts"]
    }
    assert hosts == {"spark-01", "spark-03"}


def test_jsonl_fields_and_host_label_read_any_other_shape(tmp_path: Path) -> None:
    export = tmp_path / "kernel.jsonl"
    rows = [{"ts": _nanos(t), "node": {"name": h}, "body": m} for t, h, m in _two_hosts_at_once()]
    export.write_text("".join(json.dumps(r) + "\n" for r in rows))
    # Unknown, its messages are still found as text, without time or host, and it says so.
    unread = json.loads(run("list", "-k", str(export), "--tz", "UTC", "-f", "json").stdout)
    assert {e["host"] for e in unread["episodes"]} == {None}
    assert "name their fields with --jsonl-fields" in unread["source"]["problems"][0]["problem"]
    read = run(
        "list", "-k", str(export), "--jsonl-fields", "message=body,time=ts,host=node.name", "-f", "json"
    )
    assert {e["host"] for e in json.loads(read.stdout)["episodes"]} == {"spark-01", "spark-03"}
    loki = tmp_path / "loki.jsonl"
    loki.write_text(
        "".join(
            json.dumps({"labels": {"k8s_node": h}, "line": m, "timestamp": t.isoformat()}) + "\n"
            for t, h, m in _two_hosts_at_once()
        )
    )
    labelled = run("list", "--by-host", "-k", str(loki), "--host-label", "k8s_node", "-f", "json")
    assert {h["host"] for h in json.loads(labelled.stdout)["hosts"]} == {"spark-01", "spark-03"}
    bad = run("list", "-k", str(export), "--jsonl-fields", "msg=body")
    assert bad.exit_code == 2 and "--jsonl-fields: cannot read 'msg=body'" in bad.output


def test_loki_without_labels_is_still_loki(tmp_path: Path) -> None:
    """`logcli --output jsonl --no-labels`: no labels, so no host; the times and the kill stay."""
    export = tmp_path / "k.jsonl"
    lines = _messages("seed000_llama_server_gb10", "spark-01")
    export.write_text(
        "".join(json.dumps({"line": m, "timestamp": t.isoformat()}) + "\n" for t, _, m in lines)
    )
    document = json.loads(run("list", "-k", str(export), "--format", "json").stdout)
    (episode,) = document["episodes"]
    assert episode["victim"]["pid"] == 1966928 and episode["time"].startswith("2026-11-14T13:12:12")
    assert not document["source"]["problems"]


def test_files_that_share_a_host_are_read_together() -> None:
    """A store is read a host's files at a time; files that share a host (one file of two hosts,
    a rotated one of either) stay in one merged read, so no host's entries come in two reads."""
    from oomtrace.sources.journalfiles import host_groups

    hosts = {"a.journal": ["a", "b"], "c.journal": ["c"], "b@1.journal~": ["b"], "d.journal": ["d", "c"]}
    assert host_groups(list(hosts), hosts.__getitem__) == [
        ["a.journal", "b@1.journal~"],
        ["c.journal", "d.journal"],
    ]


def test_a_host_whose_only_kill_lost_its_victim_has_no_top_victim_named_none(tmp_path: Path) -> None:
    """`list --by-host` said "top victim None ×1" (JSON "None") for a report whose kill line the
    log lost: no name is said where the log holds none."""
    log = tmp_path / "kern.log"
    log.write_text(
        "Nov 14 13:12:12 hostA kernel: dashboard invoked oom-killer: "
        "gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), order=0, oom_score_adj=0\n"
    )
    result = run("list", "-k", str(log), "--by-host", "--year", "2026", "-f", "json")
    (host,) = json.loads(result.stdout)["hosts"]
    assert host["top_victim"] is None and host["top_victim_kills"] == 0
    said = run("list", "-k", str(log), "--by-host", "--year", "2026").stdout
    assert "None" not in said and "top victim" not in said
