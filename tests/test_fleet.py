"""Fleets: a systemd-journal-remote store of three hosts (one file per host, as
`--split-mode=host` keeps them), read with `list --by-host` and `why`."""

from __future__ import annotations

import json
import secrets
from datetime import timedelta
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run
from tests.journals import REMOTE, kernel_entries, write_journal

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
