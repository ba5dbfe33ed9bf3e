"""`--redact` for public issues: every identifying string a careful person removes, in every
command and format, and nothing more (issues 23 and 26)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from oomtrace.frozen import Frozen
from oomtrace.redact import Redactor
from tests.conftest import FIXTURES, run

SEED = FIXTURES / "seed000_llama_server_gb10"
POD = "3f2a1b4c_8b7d_4e2f_9a1c_0123456789ab"
CONTAINER = "9e1f4c2a7b3d5e6f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f"
# What a careful person removes before posting a log, each where a real log holds it.
IDENTIFYING = {
    "host of the prefixes": "spark-01",
    "another host named the same way": "spark-02",
    "FQDN": "gpu-node-7.corp.example.com",
    "name before .local": "nas-backup.local",
    "name before .internal": "db-primary.internal",
    "IPv4": "10.0.3.17",
    "IPv6": "fe80::2e0:4cff:fe68:1",
    "MAC": "00:e0:4c:68:00:01",
    "MAC, Cisco form": "00e0.4c68.0002",
    "MAC, bare": "0cc47a1b2c3d",
    "user name in a path": "alice",
    "user name in a slice": "bob",
    "e-mail": "ops@example.org",
    "UUID": "8c6a1f2e-1d1b-4c5e-9b8e-3f6f2b9f1c11",
    "pod uid": POD,
    "pod uid as Kubernetes writes it": POD.replace("_", "-"),
    "container id": CONTAINER,
    "serial number": "2106WXYZ0042",
}
# Kernel lines of the kinds that carry them, as the kernel prints them.
KERNEL_LINES = [
    "r8169 0000:01:00.0 eth0: RTL8125B, 00:e0:4c:68:00:01, XID 641, IRQ 129",
    "bond0: (slave eno1): peer 00e0.4c68.0002 announced",
    "ixgbe 0000:03:00.0: MAC: 3, PHY: 0, permanent addr 0cc47a1b2c3d",
    "IPv4: martian source 10.0.3.17 from 10.0.3.1, on dev eno1",
    "IPv6: eno1: IPv6 duplicate address fe80::2e0:4cff:fe68:1 used by 00:e0:4c:68:00:02 detected!",
    "usb 1-3: SerialNumber: 2106WXYZ0042",
    "nfs: server nas-backup.local not responding, still trying",
]


def build(tmp_path: Path) -> tuple[Path, Path]:
    """The seed's kernel log (journalctl -k of host spark-01) with a line of each kind before its
    report and the victim in a pod's container, and its server's log naming hosts and people;
    both files named after the host, as people name what they copy off a machine."""
    lines = SEED.joinpath("kernel.log").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if "invoked oom-killer" in line)
    stamp = lines[at].split(" kernel: ", 1)[0]
    added = [f"{stamp} kernel: {line}" for line in KERNEL_LINES]
    text = "\n".join(lines[:at] + added + lines[at:]) + "\n"
    text = text.replace(
        "/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice/"
        "vte-spawn-8c6a1f2e-1d1b-4c5e-9b8e-3f6f2b9f1c11.scope",
        f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{POD}.slice/"
        f"cri-containerd-{CONTAINER}.scope",
        1,
    )
    kernel = tmp_path / "spark-01-kern.log"
    kernel.write_text(text)
    server = tmp_path / "spark-01-llama-server.log"
    server.write_text(
        SEED.joinpath("server.log").read_text()
        + "main: loading model from /home/alice/models/llama-3.gguf for ops@example.org\n"
        + "srv  log_server_r: request from 10.0.3.17 via gpu-node-7.corp.example.com, "
        "cache db-primary.internal:6379\n"
        + "srv  log_server_r: session 8c6a1f2e-1d1b-4c5e-9b8e-3f6f2b9f1c11 scope /user.slice/user-bob.slice\n"
        # The server's last line, quoted by `why`: what `spark-02` and the FQDN once slipped through.
        + "srv  update_slots: spark-02 took over the queue from gpu-node-7.corp.example.com "
        "(10.0.3.17, fe80::2e0:4cff:fe68:1, nic 00:e0:4c:68:00:01 00e0.4c68.0002 0cc47a1b2c3d, "
        "S/N 2106WXYZ0042, nfs nas-backup.local, cache db-primary.internal:6379, "
        "/home/alice, user-bob.slice, ops@example.org, session 8c6a1f2e-1d1b-4c5e-9b8e-3f6f2b9f1c11)\n"
    )
    mtime = SEED.joinpath("server.log").stat().st_mtime
    os.utime(server, (mtime, mtime))
    return kernel, server


def survivors(output: str) -> list[str]:
    """The identifying strings still in an output, however a format escapes them (Markdown's
    backslashes, JSON's), case aside."""
    plain = output.replace("\\\\", "\\").replace("\\", "").lower()
    found = []
    for kind, value in IDENTIFYING.items():
        value = value.lower()
        # A user's name is a word (`alice`, not part of another); the rest are found anywhere.
        pattern = (
            r"(?<![a-z0-9])" + re.escape(value) + r"(?![a-z0-9])" if value.isalpha() else re.escape(value)
        )
        if re.search(pattern, plain):
            found.append(kind)
    return found


COMMANDS = {
    "list": ["list"],
    "why": ["why", "llama-server"],
    "why --all": ["why", "llama-server", "--all"],
    "report": ["report"],
}


def test_no_identifying_string_survives_redaction_in_any_command_or_format(tmp_path: Path) -> None:
    kernel, server = build(tmp_path)
    shown: set[str] = set()
    for command, words in COMMANDS.items():
        for output in ("text", "markdown", "json"):
            args = [*words, "-k", str(kernel), "--tz", "UTC", "--year", "2026", "--format", output]
            if command.startswith("why"):
                args += ["--server-log", str(server)]
            plain = run(*args)
            assert plain.exit_code == 0, plain.output
            redacted = run(*args, "--redact")
            assert redacted.exit_code == 0, redacted.output
            left = survivors(redacted.stdout + redacted.stderr)
            assert left == [], f"{command} {output}: {left} survive --redact"
            assert "host-1" in redacted.stdout
            # The story survives: the victim and its pid.
            assert "llama-server" in redacted.stdout and "1966928" in redacted.stdout
            shown.update(survivors(plain.stdout))
    # Each kind was in some output to hide (else the test proves nothing about it).
    assert shown == set(IDENTIFYING), set(IDENTIFYING) - shown


class Sighting(Frozen):
    host: str
    comm: str


def test_a_host_is_replaced_where_it_stands_as_a_host_never_as_a_process_or_unit() -> None:
    redactor = Redactor(["postgres"])
    line = "Nov 14 13:12:12 postgres kernel: Out of memory: Killed process 5 (postgres) in postgres.service"
    assert redactor.text(line) == (
        "Nov 14 13:12:12 host-1 kernel: Out of memory: Killed process 5 (postgres) in postgres.service"
    )
    # A record's host field is replaced whole; the same word as a process's name is not.
    assert redactor.apply(Sighting("postgres", "postgres")) == Sighting("host-1", "postgres")
    assert redactor.text("https://postgres/x, postgres:5432, admin@postgres, postgres.corp.example.com") == (
        "https://host-1/x, host-1:5432, admin@host-1, host-1"
    )
    assert redactor.text("task_memcg=/system.slice/postgres.service,task=postgres") == (
        "task_memcg=/system.slice/postgres.service,task=postgres"
    )


def test_a_host_named_like_a_process_keeps_the_victim_in_every_format(tmp_path: Path) -> None:
    text = (FIXTURES / "real_memcg_v1_6.18" / "kernel.log").read_text().splitlines()
    lines = [
        f"2026-11-01T03:00:00+0000 oomprobe-hog kernel: {line.split('] ', 1)[1]}"
        for line in text
        if "] " in line
    ]
    log = tmp_path / "kernel.log"
    log.write_text("\n".join(lines) + "\n")
    for output in ("text", "markdown", "json"):
        result = run("why", "oomprobe-hog", "-k", str(log), "--format", output, "--redact", "--tz", "UTC")
        assert result.exit_code == 0, result.output
        assert "oomprobe-hog (pid 2110)" in result.stdout.replace("\\", "") or output == "json"
        if output == "json":
            document = json.loads(result.stdout)
            assert document["episode"]["victim"]["comm"] == "oomprobe-hog"
            assert document["episode"]["host"] == "host-1"


@pytest.mark.parametrize(
    "value, expected",
    [
        ("peer 00e0.4c68.0002 and 00:E0:4C:68:00:02", "peer mac-1 and mac-1"),
        ("permanent addr 0cc47a1b2c3d", "permanent addr mac-1"),
        ("usb 1-3: SerialNumber: 2106WXYZ0042", "usb 1-3: SerialNumber: serial-1"),
        ("Serial Number: 1572924017093", "Serial Number: serial-1"),
        ("/user.slice/user-bob.slice/session-3.scope", "/user.slice/user-user-1.slice/session-3.scope"),
        ("gpu-node-7.corp.example.com and printer.lan", "host-1 and host-2"),
    ],
)
def test_each_form_is_replaced(value: str, expected: str) -> None:
    assert Redactor().text(value) == expected


@pytest.mark.parametrize(
    "untouched",
    [
        "serial8250: ttyS0 at I/O 0x3f8 (irq = 4, base_baud = 115200) is a 16550A",
        "total_vm 123456789012 pgtables_bytes 64851968 RIP: 0033:0x7f3a2b1c4d5e",
        "returned from _memdescAllocInternal(pMemDesc) @ mem_desc.c:1359 libc.so.6 main.py",
        "task_memcg=/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice",
        "Hardware name: NVIDIA NVIDIA DGX Spark/P4242, BIOS 5.36_0ACUM018 06/26/2025",
    ],
)
def test_kernel_text_that_only_looks_identifying_is_left_alone(untouched: str) -> None:
    assert Redactor(["spark-01"]).text(untouched) == untouched


def test_check_and_export_apply_redact(tmp_path: Path) -> None:
    kernel, _ = build(tmp_path)
    cursor = tmp_path / "cursor.json"
    cursor.write_text(json.dumps({"kind": "check", "last_kill": "2026-11-14T00:00:00+00:00", "seen": []}))
    args = ["-k", str(kernel), "--tz", "UTC", "--year", "2026"]
    plain = run("check", "--cursor-file", str(cursor), *args)
    assert plain.exit_code == 1, plain.output
    assert "pod 3f2a1b4c" in plain.stdout
    cursor.write_text(json.dumps({"kind": "check", "last_kill": "2026-11-14T00:00:00+00:00", "seen": []}))
    redacted = run("check", "--cursor-file", str(cursor), *args, "--redact")
    assert redacted.exit_code == 1, redacted.output
    assert survivors(redacted.stdout) == [] and "3f2a1b4c" not in redacted.stdout
    assert "OOM kill: llama-server (pid 1966928)" in redacted.stdout and "pod id-1" in redacted.stdout
    prom = tmp_path / "oomtrace.prom"
    assert run("export", "--prom-textfile", str(prom), *args, "--redact").exit_code == 0
    assert survivors(prom.read_text()) == [] and "llama-server" in prom.read_text()


def test_a_urls_host_is_replaced_whatever_its_name() -> None:
    """Issue 39: `http://gpu-node-7.corp.example.com:8080` in a server log line kept its host
    (a domain after `://` was not read as one); the docs promise a host after `://` is replaced.
    Its user and password go too; an address stays an address, localhost stays."""
    redactor = Redactor(hosts=["spark-01"])
    line = "POST http://gpu-node-7.corp.example.com:8080/v1/completions failed, retrying redis://admin:s3cret@cache-3:6379/0"
    said = redactor.text(line)
    assert "gpu-node-7" not in said and "corp.example.com" not in said and "cache-3" not in said
    assert "admin" not in said and "s3cret" not in said
    assert said == "POST http://host-1:8080/v1/completions failed, retrying redis://user-1@host-2:6379/0"
    assert (
        redactor.text("http://gpu-node-7.corp.example.com/health") == "http://host-1/health"
    )  # the same host
    assert (
        redactor.text("ws://10.0.0.5:9000 http://localhost:8080/") == "ws://ip-1:9000 http://localhost:8080/"
    )
    assert redactor.text("http://spark-01.lan/x on spark-01") == "http://host-3/x on host-3"
