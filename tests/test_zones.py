"""The local zone comes from zoneinfo (dateutil's zone module costs a small run a tenth of its
start-up); where zoneinfo cannot read TZ, dateutil's reading of the C library's rules serves."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from oomtrace.zones import local_zone
from tests.conftest import run

WINTER = datetime(2026, 1, 15, 12, 0)
SUMMER = datetime(2026, 7, 15, 12, 0)


@pytest.fixture
def zone_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    yield monkeypatch
    monkeypatch.undo()
    time.tzset()  # the C library back to the process's own TZ


def _offsets(zone: object) -> tuple[timedelta | None, timedelta | None]:
    return WINTER.replace(tzinfo=zone).utcoffset(), SUMMER.replace(tzinfo=zone).utcoffset()  # type: ignore[arg-type]


def test_an_iana_tz_is_read_by_zoneinfo(zone_env: pytest.MonkeyPatch) -> None:
    zone_env.setenv("TZ", "Europe/Berlin")
    zone = local_zone()
    assert isinstance(zone, ZoneInfo)
    assert _offsets(zone) == (timedelta(hours=1), timedelta(hours=2))


def test_a_colon_tz_is_the_same_key(zone_env: pytest.MonkeyPatch) -> None:
    zone_env.setenv("TZ", ":America/New_York")
    assert _offsets(local_zone()) == (timedelta(hours=-5), timedelta(hours=-4))


def test_a_posix_rule_tz_falls_back_to_the_c_librarys_rules(zone_env: pytest.MonkeyPatch) -> None:
    zone_env.setenv("TZ", "CET-1CEST,M3.5.0,M10.5.0/3")
    time.tzset()
    zone = local_zone()
    assert not isinstance(zone, ZoneInfo)
    assert _offsets(zone) == (timedelta(hours=1), timedelta(hours=2))


def test_no_tz_reads_etc_localtime(zone_env: pytest.MonkeyPatch) -> None:
    zone_env.delenv("TZ", raising=False)
    try:
        with open("/etc/localtime", "rb") as file:
            expected = ZoneInfo.from_file(file)
    except OSError:
        pytest.skip("this machine has no /etc/localtime")
    assert _offsets(local_zone()) == _offsets(expected)


# China's CST is not US Central's: both real systemctl status pastes with a CST stamp
# (systemd#43439, a Chinese blog's mysqld) were +08:00, and were read as -06:00.
@pytest.mark.parametrize(
    ("stamp", "tz_name", "time"),
    [
        # US Central and Cuba print CDT in summer: a summer CST is China's, whatever --tz says.
        ("Wed 2026-08-19 15:38:39 CST", "UTC", "2026-08-19T15:38:39+08:00"),
        ("Wed 2026-08-19 15:38:39 CST", "America/Chicago", "2026-08-19T15:38:39+08:00"),
        # In winter three zones print CST: --tz tells which where it prints it, else no instant.
        ("Wed 2026-01-14 15:38:39 CST", "Asia/Shanghai", "2026-01-14T15:38:39+08:00"),
        ("Wed 2026-01-14 15:38:39 CST", "America/Chicago", "2026-01-14T15:38:39-06:00"),
        ("Wed 2026-01-14 15:38:39 CST", "UTC", None),
        ("Wed 2026-01-14 15:38:39 CET", "UTC", "2026-01-14T15:38:39+01:00"),
    ],
)
def test_an_ambiguous_zone_name_is_read_off_the_date_or_the_reader_or_not_at_all(
    stamp: str, tz_name: str, time: str | None, tmp_path: Path
) -> None:
    kill = (
        "kernel: Out of memory: Killed process 4121 (python3) total-vm:8192kB, anon-rss:4096kB, "
        "file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:64kB oom_score_adj:0"
    )
    status = f"● llama.service - Llama\n     Active: failed (Result: oom-kill) since {stamp}; 3s ago\n"
    for text, want in ((f"{stamp} gpu-3 {kill}\n", time), (status, time if tz_name == "UTC" else "any")):
        log = tmp_path / "k.log"
        log.write_text(text)
        result = run("list", "-k", str(log), "--format", "json", "--tz", tz_name)
        (episode,) = json.loads(result.stdout)["episodes"]
        if want != "any":  # a status's own time knows no reader: its date alone decides
            assert episode["time"] == want, text
