"""`oomtrace report`, --since/--until, and --redact across every format."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from dateutil import tz

from oomtrace.explain import adj_origin
from oomtrace.redact import Redactor
from oomtrace.timerange import parse_when
from tests.conftest import FIXTURES, run

SEEDS = [
    FIXTURES / name / "kernel.log"
    for name in ("seed000_llama_server_gb10", "seed002_ds4_server_gb10", "seed004_tensorfold_cotenant_gb10")
]


def sources(*logs: Path) -> list[str]:
    return [arg for log in logs for arg in ("-k", str(log))]


def test_report_counts_every_incident_in_range() -> None:
    result = run(
        "report",
        *sources(*SEEDS),
        "--tz",
        "UTC",
        "--year",
        "2026",
        "--since",
        "2026-11-01",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["counts"]["incidents"] == 2  # seed 004's kill is in October
    assert document["counts"]["kills"] == 5
    assert document["counts"]["by_victim"]["llama-server"] == 1
    assert document["counts"]["by_cause"] == {"kernel-oom": 5}
    assert [s["episode"]["victim"]["comm"] for s in document["incidents"]] == ["llama-server", "ds4-server"]


def test_report_markdown_and_text() -> None:
    for output in ("markdown", "text"):
        result = run("report", *sources(*SEEDS), "--tz", "UTC", "--year", "2026", "--format", output)
        assert result.exit_code == 0, result.output
        assert "3 incident(s), 6 kill(s)" in result.stdout


def test_until_and_since_filter_list() -> None:
    result = run(
        "list", *sources(*SEEDS), "--tz", "UTC", "--year", "2026", "--until", "2026-11-15", "--format", "json"
    )
    victims = [e["victim"]["comm"] for e in json.loads(result.stdout)["episodes"]]
    assert victims == ["ollama_llama_se", "llama-server"]


def test_bad_since_is_a_clear_error() -> None:
    result = run("list", "-k", str(SEEDS[0]), "--since", "the day before the crash")
    assert result.exit_code == 2
    assert "cannot read the time 'the day before the crash'" in result.stderr and "-2h" in result.stderr


@pytest.mark.parametrize(
    ("value", "offset_s"),
    [
        ("10h", -36000),
        ("-1h", -3600),
        ("+1h", 3600),
        ("2d", -172800),
        ("1h30m", -5400),
        ("2 hours", -7200),
        ("30 min ago", -1800),
        ("3 days ago", -259200),
    ],
)
def test_relative_times_as_journalctl_takes_them(value: str, offset_s: int) -> None:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    assert (parse_when(value, UTC, now) - now).total_seconds() == offset_s


def test_epoch_and_clock_times() -> None:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    assert parse_when("@1795179132", UTC, now) == datetime.fromtimestamp(1795179132, UTC)
    assert parse_when("13:00", UTC, now) == datetime(2026, 12, 1, 13, 0, tzinfo=UTC)


@pytest.mark.parametrize("value", ["3", "10", "-99999999999 days"])
def test_ambiguous_or_impossible_times_are_refused(value: str) -> None:
    result = run("list", "-k", str(SEEDS[0]), "--since", value)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "oomtrace: error: " in result.stderr


def test_the_applied_range_is_said_with_what_it_left_out() -> None:
    listed = run("list", "-k", str(SEEDS[0]), "--since", "2026-11-15", "--tz", "UTC")
    assert (
        "No OOM kills in the range since 2026-11-15 00:00:00+00:00: 1 kill in the input outside it."
        in " ".join(listed.stdout.split())
    )
    why = run("why", "llama-server", "-k", str(SEEDS[0]), "--until", "2026-11-14 13:00", "--tz", "UTC")
    assert why.exit_code == 1 and "1 kill in the input outside it" in why.stderr
    document = json.loads(run("list", "-k", str(SEEDS[0]), "--since", "2026-11-15", "-f", "json").stdout)
    assert document["source"]["range"]["kills_outside"] == 1


def test_since_after_until_is_refused() -> None:
    result = run("report", "-k", str(SEEDS[0]), "--since", "2026-11-15", "--until", "2026-11-14")
    assert result.exit_code == 2 and "is after --until" in result.stderr


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("now", "2026-11-29 10:00"),
        ("yesterday", "2026-11-28 00:00"),
        ("-2h", "2026-11-29 08:00"),
        ("30 min ago", "2026-11-29 09:30"),
        ("2026-11-14 13:00", "2026-11-14 13:00"),
    ],
)
def test_time_words(value: str, expected: str) -> None:
    now = datetime(2026, 11, 29, 10, 0, tzinfo=tz.UTC)
    assert parse_when(value, tz.UTC, now).strftime("%Y-%m-%d %H:%M") == expected


HOSTS = ["spark-01", "spark-02"]


@pytest.mark.parametrize("output", ["text", "json", "markdown"])
@pytest.mark.parametrize("command", [["list"], ["why", "llama-server"], ["report"]])
def test_no_host_name_survives_redaction(command: list[str], output: str) -> None:
    logs = sources(SEEDS[0], SEEDS[2])
    plain = run(*command, *logs, "--tz", "UTC", "--year", "2026", "--format", output)
    assert plain.exit_code == 0, plain.output
    redacted = run(*command, *logs, "--tz", "UTC", "--year", "2026", "--format", output, "--redact")
    assert redacted.exit_code == 0, redacted.output
    for host in HOSTS:
        assert host not in redacted.stdout
    if output != "text" and command != ["list"]:
        assert "host-1" in redacted.stdout


def test_redaction_is_stable_and_changes_nothing_else(tmp_path: Path) -> None:
    redactor = Redactor(["spark-01"])
    line = "Nov 14 13:12:12 spark-01 kernel: task_memcg=/docker/2e088fe462e25e60be1dafafe2c05c47bda1a97978648d10ad2b7484fc0b8f50 from 10.1.2.3 /home/alice/x alice@example.com spark-01"
    once = redactor.text(line)
    assert (
        once
        == "Nov 14 13:12:12 host-1 kernel: task_memcg=/docker/id-1 from ip-1 /home/user-1/x email-1 host-1"
    )
    assert redactor.text(line) == once
    untouched = "[ 5864.708440] Node 0 DMA32 free:59728kB min:7832kB ffffffff816861ac 0000:9b:00.0 13:12:12 std::bad_alloc"
    assert redactor.text(untouched) == untouched


def test_redaction_covers_ipv6_and_mac() -> None:
    redactor = Redactor()
    assert (
        redactor.text("fe80::1ce:2ff:fe3a:1 and 2001:db8:0:0:0:0:2:1 mac 00:1a:2b:3c:4d:5e")
        == "ipv6-1 and ipv6-2 mac mac-1"
    )


def test_a_warning_run_that_began_long_before_is_said_so(tmp_path: Path) -> None:
    nvrm = (
        "NVRM: nvCheckFailedNoMemory: Check failed: Out of memory [NV_ERR_NO_MEMORY] (0x00000051) "
        "returned from _memdescAllocInternal(pMemDesc) @ mem_desc.c:1359"
    )
    lines = [f"[{1000 + 600 * i}.000000] {nvrm}" for i in range(13)]
    lines.append(
        "[8500.000000] Out of memory: Killed process 4121 (python3) total-vm:100kB, anon-rss:50kB, file-rss:0kB"
    )
    log = tmp_path / "k.log"
    log.write_text("\n".join(lines) + "\n")
    result = run("why", "python3", "-k", str(log))
    assert "a run since 2h05m before the kill, last 5m00s before, 13 times" in " ".join(result.stdout.split())


def test_redact_keeps_templated_systemd_units() -> None:
    redactor = Redactor(())
    assert redactor.text("/user.slice/user-1000.slice/user@1000.service/app.slice") == (
        "/user.slice/user-1000.slice/user@1000.service/app.slice"
    )
    assert redactor.text("mail alice@example.com") == "mail email-1"


def test_adj_200_is_the_user_managers_only_where_the_cgroup_shows_it() -> None:
    """Issue 39: "200 most likely comes from systemd's user manager" was said of a cgroup that is
    not under user@…service (the real memcg fixture set it by hand). The origin is said only
    where the cgroup path shows it; elsewhere, that the log does not say."""
    shown = adj_origin(200, "/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope")
    assert shown is not None and shown.startswith("200 comes from") and "under user@" in shown
    for cgroup in ("/system.slice/llama.service", "/oomprobe", None):
        unknown = adj_origin(200, cgroup)
        assert unknown is not None and unknown.startswith(
            "200 was set for it, and the log does not say by what"
        )
        assert "most likely" not in unknown and "comes from" not in unknown


# Every kind of value --redact must hide, where a log holds it (issue 12's list of misses).
SECRETS = {
    "pod uid": "3f2a1b4c-8b7d-4e2f-9a1c-0123456789ab",
    "pod uid, systemd driver": "3f2a1b4c_8b7d_4e2f_9a1c_0123456789ab",
    "IPv4 ending a sentence": "10.20.30.40",
    "dash MAC": "0a-1b-2c-3d-4e-5f",
    "iptables MAC": "00:16:3e:aa:bb:cc:00:16:3e:dd:ee:ff:08:00",
    "IPv6 prefix": "2001:db8:abcd::",
    "domain of the host": "prod.example.com",
    "host": "spark-01",
}


def test_redaction_hides_every_kind_in_every_format(tmp_path: Path) -> None:
    seed = FIXTURES / "seed000_llama_server_gb10"
    text = (seed / "kernel.log").read_text()
    text = text.replace(
        "task_memcg=/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice/"
        "vte-spawn-8c6a1f2e-1d1b-4c5e-9b8e-3f6f2b9f1c11.scope",
        "task_memcg=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
        f"{SECRETS['pod uid, systemd driver']}.slice/cri-containerd.scope",
    )
    text = text.replace(
        "Hardware name: NVIDIA NVIDIA DGX Spark/P4242",
        f"Hardware name: spark-01.{SECRETS['domain of the host']} pod{SECRETS['pod uid']}",
    )
    log = tmp_path / "kernel.log"
    log.write_text(text)
    server = tmp_path / "server.log"
    server.write_text(
        (seed / "server.log").read_text()
        + f"srv  log_server_r: request from {SECRETS['IPv4 ending a sentence']}. nic {SECRETS['dash MAC']} "
        f"IN=eth0 MAC={SECRETS['iptables MAC']} route {SECRETS['IPv6 prefix']}/48\n"
    )
    commands = [
        ["list", "-k", str(log)],
        ["why", "llama-server", "-k", str(log), "--server-log", str(server)],
        ["report", "-k", str(log)],
    ]
    seen: set[str] = set()
    for command in commands:
        for output in ("text", "json", "markdown"):
            plain = run(*command, "--tz", "UTC", "--year", "2026", "--format", output)
            redacted = run(*command, "--tz", "UTC", "--year", "2026", "--format", output, "--redact")
            assert redacted.exit_code == plain.exit_code == 0, redacted.output
            shown = [kind for kind, value in SECRETS.items() if value in plain.stdout]
            left = [kind for kind, value in SECRETS.items() if value in redacted.stdout]
            assert left == [], f"{command[0]} {output}: {left} survive --redact"
            seen.update(shown)
    # Each kind was in some output to hide (else the test proves nothing about it).
    assert seen == set(SECRETS)
