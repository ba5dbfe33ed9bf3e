"""Localised month and weekday names in journalctl, syslog and `dmesg -T` stamps (issue 38 §2).

The tables are glibc's LC_TIME as each locale's source file defines them: bminor/glibc commit
04e750e75b73957cf1c791535a3f4319534a52fc (2026-01-20), localedata/locales/<locale>, the fields
`abmon` (what `%b` prints: journalctl's short stamp, `dmesg -T`), `mon` (`%B`, in the languages
that decline it the genitive form printed beside a day: uk_UA `листопада`) and `abday` (`%a`:
`dmesg -T`'s weekday), each copied in order, `;`-separated, with glibc's own padding (ja_JP's and
ko_KR's ` 1月`). Every language issue 38 names is here (fr, de, es, pt_BR, pt_PT, it, nl, pl, ru,
uk, zh, ja, ko), with the four the grammar read before it (be, cs, tr, fi).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from oomtrace.prefixes import LineSplitter, month_number
from tests.conftest import run

MSG = (
    "Out of memory: Killed process 4242 (llama) total-vm:1000kB, anon-rss:500kB, file-rss:0kB, "
    "shmem-rss:0kB, UID:0 pgtables:40kB oom_score_adj:0"
)

# locale: (abmon, mon, abday), from glibc's localedata/locales/<locale> (see the module docstring).
GLIBC = {
    "fr_FR": (
        "janv.;févr.;mars;avril;mai;juin;juil.;août;sept.;oct.;nov.;déc.",
        "janvier;février;mars;avril;mai;juin;juillet;août;septembre;octobre;novembre;décembre",
        "dim.;lun.;mar.;mer.;jeu.;ven.;sam.",
    ),
    "de_DE": (
        "Jan;Feb;Mär;Apr;Mai;Jun;Jul;Aug;Sep;Okt;Nov;Dez",
        "Januar;Februar;März;April;Mai;Juni;Juli;August;September;Oktober;November;Dezember",
        "So;Mo;Di;Mi;Do;Fr;Sa",
    ),
    "es_ES": (
        "ene;feb;mar;abr;may;jun;jul;ago;sep;oct;nov;dic",
        "enero;febrero;marzo;abril;mayo;junio;julio;agosto;septiembre;octubre;noviembre;diciembre",
        "dom;lun;mar;mié;jue;vie;sáb",
    ),
    "pt_BR": (
        "jan;fev;mar;abr;mai;jun;jul;ago;set;out;nov;dez",
        "janeiro;fevereiro;março;abril;maio;junho;julho;agosto;setembro;outubro;novembro;dezembro",
        "dom;seg;ter;qua;qui;sex;sáb",
    ),
    "pt_PT": (
        "jan;fev;mar;abr;mai;jun;jul;ago;set;out;nov;dez",
        "janeiro;fevereiro;março;abril;maio;junho;julho;agosto;setembro;outubro;novembro;dezembro",
        "dom;seg;ter;qua;qui;sex;sáb",
    ),
    "it_IT": (
        "gen;feb;mar;apr;mag;giu;lug;ago;set;ott;nov;dic",
        "gennaio;febbraio;marzo;aprile;maggio;giugno;luglio;agosto;settembre;ottobre;novembre;dicembre",
        "dom;lun;mar;mer;gio;ven;sab",
    ),
    "nl_NL": (
        "jan;feb;mrt;apr;mei;jun;jul;aug;sep;okt;nov;dec",
        "januari;februari;maart;april;mei;juni;juli;augustus;september;oktober;november;december",
        "zo;ma;di;wo;do;vr;za",
    ),
    "pl_PL": (
        "sty;lut;mar;kwi;maj;cze;lip;sie;wrz;paź;lis;gru",
        "stycznia;lutego;marca;kwietnia;maja;czerwca;lipca;sierpnia;września;października;listopada;grudnia",
        "nie;pon;wto;śro;czw;pią;sob",
    ),
    "ru_RU": (
        "янв;фев;мар;апр;мая;июн;июл;авг;сен;окт;ноя;дек",
        "января;февраля;марта;апреля;мая;июня;июля;августа;сентября;октября;ноября;декабря",
        "Вс;Пн;Вт;Ср;Чт;Пт;Сб",
    ),
    "uk_UA": (
        "січ;лют;бер;кві;тра;чер;лип;сер;вер;жов;лис;гру",
        "січня;лютого;березня;квітня;травня;червня;липня;серпня;вересня;жовтня;листопада;грудня",
        "нд;пн;вт;ср;чт;пт;сб",
    ),
    "zh_CN": (
        "1月;2月;3月;4月;5月;6月;7月;8月;9月;10月;11月;12月",
        "一月;二月;三月;四月;五月;六月;七月;八月;九月;十月;十一月;十二月",
        "日;一;二;三;四;五;六",
    ),
    "ja_JP": (
        " 1月; 2月; 3月; 4月; 5月; 6月; 7月; 8月; 9月;10月;11月;12月",
        "1月;2月;3月;4月;5月;6月;7月;8月;9月;10月;11月;12月",
        "日;月;火;水;木;金;土",
    ),
    "ko_KR": (
        " 1월; 2월; 3월; 4월; 5월; 6월; 7월; 8월; 9월;10월;11월;12월",
        "1월;2월;3월;4월;5월;6월;7월;8월;9월;10월;11월;12월",
        "일;월;화;수;목;금;토",
    ),
    "be_BY": (
        "сту;лют;сак;кра;мая;чэр;ліп;жні;вер;кас;ліс;сне",
        "студзеня;лютага;сакавіка;красавіка;мая;чэрвеня;ліпеня;жніўня;верасня;кастрычніка;лістапада;снежня",
        "Няд;Пан;Аўт;Срд;Чцв;Пят;Суб",
    ),
    "cs_CZ": (
        "led;úno;bře;dub;kvě;čen;čec;srp;zář;říj;lis;pro",
        "ledna;února;března;dubna;května;června;července;srpna;září;října;listopadu;prosince",
        "ne;po;út;st;čt;pá;so",
    ),
    "tr_TR": (
        "Oca;Şub;Mar;Nis;May;Haz;Tem;Ağu;Eyl;Eki;Kas;Ara",
        "Ocak;Şubat;Mart;Nisan;Mayıs;Haziran;Temmuz;Ağustos;Eylül;Ekim;Kasım;Aralık",
        "Paz;Pzt;Sal;Çrş;Prş;Cum;Cts",
    ),
    "fi_FI": (
        "tammi;helmi;maalis;huhti;touko;kesä;heinä;elo;syys;loka;marras;joulu",
        "tammikuu;helmikuu;maaliskuu;huhtikuu;toukokuu;kesäkuu;heinäkuu;elokuu;syyskuu;lokakuu;marraskuu;joulukuu",
        "su;ma;ti;ke;to;pe;la",
    ),
}
MONTHS = range(1, 13)


def _split(line: str) -> tuple[str, str | None, str | None, datetime | None, str, float | None]:
    splitter = LineSplitter("t", zone=UTC, year=2025)
    (record,) = splitter.split(line, 1)
    stamp = record.stamp
    return record.message, record.ident, record.host, stamp.wall, stamp.raw, stamp.clock


def _names(locale: str, field: int) -> list[str]:
    return GLIBC[locale][field].split(";")


@pytest.mark.parametrize("locale", GLIBC)
@pytest.mark.parametrize("field", [0, 1], ids=["abmon", "mon"])
def test_every_month_name_of_every_locale_is_its_month(locale: str, field: int) -> None:
    for number, name in enumerate(_names(locale, field), start=1):
        assert month_number(name.strip()) == number, (locale, name)


@pytest.mark.parametrize("locale", GLIBC)
@pytest.mark.parametrize("month", MONTHS)
def test_journalctl_short_stamp_in_every_locale(locale: str, month: int) -> None:
    """`journalctl -k` (short): `%b %d %H:%M:%S host kernel: `, as journalctl prints it under
    the locale (ja_JP's ` 1月` begins the line with a space)."""
    name = _names(locale, 0)[month - 1]
    stamp = f"{name} 28 10:11:12"
    message, ident, host, wall, raw, _ = _split(f"{stamp} gpu1 kernel: {MSG}")
    assert (message, ident, host) == (MSG, "kernel", "gpu1")
    assert wall == datetime(2025, month, 28, 10, 11, 12, tzinfo=UTC)
    assert raw == stamp.strip()


@pytest.mark.parametrize("locale", GLIBC)
@pytest.mark.parametrize("month", MONTHS)
def test_syslog_stamp_in_every_locale(locale: str, month: int) -> None:
    """rsyslog's kern.log under a localised template: the day padded, the kernel's uptime
    after `kernel: `; and the genitive `%B` (`листопада`) where the month is written out."""
    for name in (_names(locale, 0)[month - 1], _names(locale, 1)[month - 1]):
        message, ident, host, wall, raw, _ = _split(f"{name.strip()}  7 10:11:12 gpu1 kernel: [ 12.5] {MSG}")
        assert (message, ident, host) == (MSG, "kernel", "gpu1"), name
        assert wall == datetime(2025, month, 7, 10, 11, 12, tzinfo=UTC), name
        assert raw == f"{name.strip()}  7 10:11:12 [ 12.5]"


@pytest.mark.parametrize("locale", GLIBC)
@pytest.mark.parametrize("month", MONTHS)
def test_dmesg_T_stamp_in_every_locale(locale: str, month: int) -> None:
    """`dmesg -T`: `[%a %b %e %H:%M:%S %Y]` with the locale's weekday and month."""
    day = datetime(2025, month, 9)
    weekday = _names(locale, 2)[(day.weekday() + 1) % 7]  # glibc's abday begins on Sunday
    line = f"[{weekday} {_names(locale, 0)[month - 1]}  9 10:11:12 2025] {MSG}"
    message, _, _, wall, _, _ = _split(line)
    assert message == MSG
    assert wall == datetime(2025, month, 9, 10, 11, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    ("stamp", "wall"),
    [
        ("dim. 19 avril 18:03:30 2026", datetime(2026, 4, 19, 18, 3, 30, tzinfo=UTC)),  # day first
        ("mar. 18 mars 18:03:30 2026", datetime(2026, 3, 18, 18, 3, 30, tzinfo=UTC)),  # mar. is Tuesday
        ("сб тра 24 01:23:30 2025", datetime(2025, 5, 24, 1, 23, 30, tzinfo=UTC)),
        ("2025年12月02日 10:11:12", datetime(2025, 12, 2, 10, 11, 12, tzinfo=UTC)),
        ("2025년 12월 02일 10:11:12", datetime(2025, 12, 2, 10, 11, 12, tzinfo=UTC)),
        ("ven. 28 nov. 2025 01:23:30", datetime(2025, 11, 28, 1, 23, 30, tzinfo=UTC)),
        ("czw, 6 listopada 2025 01:23:30", datetime(2025, 11, 6, 1, 23, 30, tzinfo=UTC)),
    ],
)
def test_bracketed_localised_stamps(stamp: str, wall: datetime) -> None:
    message, _, _, read, raw, _ = _split(f"[{stamp}] {MSG}")
    assert (message, read, raw) == (MSG, wall, stamp)


@pytest.mark.parametrize("word", ["xyz", "Нов", "лиc", "mois", "Brumaire"])
def test_an_unknown_month_word_gives_no_date(word: str) -> None:
    """A month word no table holds gives no date, never another month: a syslog stamp keeps
    its host and tag and reads as a time of day; a bracketed one reads as no stamp."""
    message, ident, host, wall, raw, clock = _split(f"{word} 02 10:11:12 gpu1 kernel: {MSG}")
    assert (message, ident, host, wall) == (MSG, "kernel", "gpu1", None)
    assert (raw, clock) == (f"{word} 02 10:11:12", 36672.0)
    for stamp in (f"dim. 19 {word} 18:03:30 2026", f"19 {word} 18:03:30"):
        assert _split(f"[{stamp}] {MSG}")[3] is None, stamp


@pytest.mark.parametrize("word", ["xyz", "Нов", "лиc", "mois"])
def test_an_unknown_month_in_dmesg_T_is_a_time_of_day_not_the_line_befores_date(word: str) -> None:
    """`dmesg -T` with a month word no table holds: a time of day with no date. Read as no
    stamp, the kill took the date of the line before it."""
    splitter = LineSplitter("t", zone=UTC, year=2025)
    splitter.split("[Fri Nov 28 01:23:30 2025] Mem-Info:", 1)
    (record,) = splitter.split(f"[Sat {word} 19 18:03:30 2026] {MSG}", 2)
    assert (record.message, record.stamp.wall) == (MSG, None)
    assert (record.stamp.raw, record.stamp.clock) == (f"Sat {word} 19 18:03:30 2026", 65010.0)


@pytest.mark.parametrize("stamp", ["02 10:11:12 CET", "Nov 10:11:12", "Sat 10:11:12 2026"])
def test_a_stamp_without_its_month_or_day_gives_no_date(stamp: str) -> None:
    """dateutil fills what a text does not give from today: a zone is no month, and a month
    is no day."""
    assert _split(f"[{stamp}] {MSG}")[3] is None


@pytest.mark.parametrize(
    ("prefix", "time", "raw", "host"),
    [
        ("лис 02 10:11:12 host kernel: ", "2026-11-02T10:11:12+00:00", "лис 02 10:11:12", "host"),
        ("кві 02 10:11:12 host kernel: ", "2026-04-02T10:11:12+00:00", "кві 02 10:11:12", "host"),
        ("xyz 02 10:11:12 host kernel: ", None, "xyz 02 10:11:12", "host"),
        ("[dim. 19 avril 18:03:30 2026] ", "2026-04-19T18:03:30+00:00", "dim. 19 avril 18:03:30 2026", None),
        ("[сб тра 24 01:23:30 2025] ", "2025-05-24T01:23:30+00:00", "сб тра 24 01:23:30 2025", None),
        ("[2025年12月02日 10:11:12] ", "2025-12-02T10:11:12+00:00", "2025年12月02日 10:11:12", None),
        ("[ven. 28 nov. 2025 01:23:30] ", "2025-11-28T01:23:30+00:00", "ven. 28 nov. 2025 01:23:30", None),
    ],
)
def test_issue_38_reproductions(
    tmp_path: object, prefix: str, time: str | None, raw: str, host: str | None
) -> None:
    """Issue 38 §2 as reported, through `list -f json` (a year given: the issue ran on
    2026-12-04). Before, `лис` (November) and `кві` (April) were both dated 2 December with
    `host kernel:` in the stamp, and the three bracketed stamps gave no time."""
    import json

    log = tmp_path / "l.log"  # type: ignore[operator]
    log.write_text(f"{prefix}{MSG}\n", encoding="utf-8")
    year = time[:4] if time else "2026"
    result = run("list", "-k", str(log), "-f", "json", "--year", year, "--tz", "UTC")
    assert result.exit_code == 0, result.output
    (episode,) = json.loads(result.output)["episodes"]
    assert (episode["time"], episode["raw_time"], episode["host"]) == (time, raw, host)
