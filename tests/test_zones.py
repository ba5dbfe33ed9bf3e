"""The local zone comes from zoneinfo (dateutil's zone module costs a small run a tenth of its
start-up); where zoneinfo cannot read TZ, dateutil's reading of the C library's rules serves."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from oomtrace.zones import local_zone

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
