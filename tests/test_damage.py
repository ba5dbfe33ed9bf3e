"""Paste damage as transformations, with an oracle (issue 38 part 3).

Every canonical report (the fixtures' kernel logs and clean real pastes of other formats and
userspace killers) is damaged the ways a paste is (tests/damage.py), alone and in combinations
hypothesis draws; the facts read from the damaged text must equal the clean text's, or be
unknown: never a different value. A damaged paste must not invent a kill; it may lose one only
where the damage cut a line.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests import damage
from tests.conftest import FIXTURES, run
from tests.realworld.score import _actual

CASES = Path(__file__).parent / "realworld" / "cases"

REPORTS = {
    # The fixtures: journalctl -k short, dmesg -T, ISO syslog, a real memcg v1 dmesg, RHEL 6's
    # /var/log/messages.
    "seed000-journalctl": FIXTURES / "seed000_llama_server_gb10" / "kernel.log",
    "seed002-dmesg-T": FIXTURES / "seed002_ds4_server_gb10" / "kernel.log",
    "seed004-iso-syslog-memcg": FIXTURES / "seed004_tensorfold_cotenant_gb10" / "kernel.log",
    "memcg-v1-dmesg": FIXTURES / "real_memcg_v1_6.18" / "kernel.log",
    "rhel6-syslog": FIXTURES / "rhel6_2.6.32_messages" / "kernel.log",
    # Clean real pastes of other formats and killers, each read whole (tests/realworld/score.py).
    "armv7-plain-dmesg": CASES / "kern-rpi4-armv7-udevd-then-systemd" / "input.txt",
    "mips-plain-dmesg": CASES / "kern-mips-openwrt-mwan3rtmon-then-mwan3rtmon" / "input.txt",
    "el7-dmesg-T": CASES / "old-rhkb-keystone-el7-dmesgT" / "input.txt",
    "el7-dmesg-T-memcg": CASES / "k8s-kubepods-dmesg-T-rhel7-java" / "input.txt",
    "el7-syslog-memcg": CASES / "k8s-doris-syslog-palo-be-containerd" / "input.txt",
    "earlyoom-journal": CASES / "user-earlyoom-journal-two-victims" / "input.txt",
    "systemd-oomd-journal": CASES / "user-oomd-ubuntu-vte-spawn-scope" / "input.txt",
    "lmkd-logcat": CASES / "dev-crdroid-lmkd-logcat" / "input.txt",
    "lowmemorykiller-kmsg": CASES / "dev-android-tv-lmk-kmsg" / "input.txt",
}

FACTS = (
    "killer",
    "victim",
    "pid",
    "trigger",
    "trigger_pid",
    "constraint",
    "anon_rss_kb",
    "total_vm_kb",
    "oom_score_adj",
    "memcg",
    "gfp_mask",
    "order",
    "uptime_s",
    "clock",
    "date",
)
"""What the oracle compares, each read off an episode as tests/realworld/score.py reads it."""


def _facts(text: str) -> list[dict[str, Any]]:
    result = run("list", "-k", "-", "--all", "-f", "json", "--tz", "UTC", "--year", "2026", input=text)
    assert result.exit_code == 0, result.output
    episodes = json.loads(result.stdout)["episodes"]
    return [{name: _actual(episode, name) for name in FACTS} for episode in episodes]


@cache
def _clean(report: str) -> tuple[str, list[dict[str, Any]]]:
    text = REPORTS[report].read_text()
    return text, _facts(text)


def _different(report: str, damages: list[damage.Damage]) -> list[str]:
    """What the damaged paste reads differently from the clean one (empty when the oracle holds)."""
    text, clean = _clean(report)
    for one in damages:
        text = one(text)
    read = _facts(text)
    cut = any(d.__name__ in damage.CUTTING for d in damages)
    wrong = []
    if len(read) > len(clean) or (len(read) < len(clean) and not cut):
        wrong.append(f"{len(read)} kills read, {len(clean)} in the clean report")
    unmatched = list(range(len(clean)))
    for n, facts in enumerate(read):
        at = _match(facts, clean, unmatched)
        if at is None:
            wrong.append(f"kill #{n + 1}: pid {facts['pid']} is no clean kill's")
            continue
        unmatched.remove(at)
        for name, got in facts.items():
            want = clean[at][name]
            if got is not None and not _same(name, want, got):
                wrong.append(f"kill #{n + 1}: {name} {got!r}, clean {want!r}")
    return wrong


def _match(facts: dict[str, Any], clean: list[dict[str, Any]], unmatched: list[int]) -> int | None:
    """The clean kill a damaged one stands for: the same victim pid; without one (a report whose
    kill line is lost), the same trigger pid; else the next in order."""
    for key in ("pid", "trigger_pid"):
        if facts[key] is not None:
            same = [i for i in unmatched if clean[i][key] == facts[key]]
            if same:
                return same[0]
            if key == "pid":
                return None
    return unmatched[0] if unmatched else None


def _same(name: str, want: Any, got: Any) -> bool:
    """One fact read alike. An episode's time is its kill line's, or its report's first line's
    where the kill line is lost (docs/json.md): the same report, under a second apart."""
    if want is None:
        return False
    if name == "uptime_s":
        return abs(got - want) < 1.0
    if name == "clock":
        return abs(_seconds(got) - _seconds(want)) <= 1
    return bool(got == want)


def _seconds(clock: str) -> int:
    hours, minutes, seconds = clock.split(":")
    return int(hours) * 3600 + int(minutes) * 60 + int(seconds)


def test_every_report_is_read_clean() -> None:
    """The oracle stands on reports read whole: each clean one gives at least one kill."""
    for report in REPORTS:
        assert _clean(report)[1], report


# Named limits: a damage on a report that reads a different value, or loses a kill, today; each
# says what it reads and why. strict: the day one is read right, its test fails until it leaves.
_TWICE = "its kill line wrapped twice, the middle piece reads as no event alone, so no join reads the kill"
# None today: every damage alone reads every report the same or says a fact unknown (the mail
# re-flowed at 60 columns, lines cut twice and systemd's unit line cut in its name now are).
LIMITS: dict[tuple[str, str], str] = {}


def _alone() -> list[Any]:
    params = []
    for report in REPORTS:
        for one in damage.ALONE:
            marks = []
            if (reason := LIMITS.get((one.__name__, report))) is not None:
                marks = [pytest.mark.xfail(strict=True, reason=reason)]
            params.append(pytest.param(report, one, marks=marks, id=f"{report}-{one.__name__}"))
    return params


@pytest.mark.parametrize(("report", "one"), _alone())
def test_one_damage_reads_the_same_or_unknown(report: str, one: damage.Damage) -> None:
    assert _different(report, [one]) == []


# Damages a combination draws from, by name: the wraps are few (one of each kind stands for all
# widths), the rest all but `cat -n`'s numbers, which are not taken off (see LIMITS: a number
# before a line hides its stamp from whatever else is glued to it, and completes a cut value).
_COMBINABLE = {
    d.__name__: d
    for d in [d for d in damage.ALONE if not d.__name__.startswith("wrap_")]
    + [damage.wrap_terminal(80), damage.wrap_words(72, " ")]
}
_LINE_NUMBERED = _COMBINABLE.pop("line_numbered")


# Reports whose kill line, cut by two damages (a wrap, then a mail's re-flow or soft breaks),
# is lost: its pieces after the first read nothing joined two by two, nor three.
_CUT_TWICE_LOST = {"earlyoom-journal", "lmkd-logcat"}
# Damages that cut a line in two, and that change its end.
_SPLITTING = {"quoted_printable", "wrap_terminal_80", "wrap_words_72_indented"}
_LINE_ENDS = {"crlf", "lone_cr"}


@pytest.mark.xfail(
    strict=True,
    reason="gfp_mask 0x4020, clean 0x400dc0: `cat -n`'s numbers (which are not taken off) after a "
    "line cut inside a number: the rest `20 0dc0(GFP_...` completes `gfp_mask=0x40` with the "
    "line's number; so line_numbered is left out of the combinations",
)
def test_a_line_number_after_a_cut_number_is_read_as_its_digits() -> None:
    names = ["backticks", "lone_cr", "quoted_printable"]
    damages = [_COMBINABLE[name] for name in names] + [_LINE_NUMBERED]
    assert _different("armv7-plain-dmesg", damages) == []


@pytest.mark.xfail(strict=True, reason=f"0 kills of 1 read: {_TWICE} (a wrap, then quoted-printable)")
def test_a_userspace_kill_line_cut_twice_is_lost() -> None:
    names = ["wrap_terminal_80", "quoted_printable"]
    assert _different("lmkd-logcat", [_COMBINABLE[name] for name in names]) == []


def test_a_kill_line_cut_by_quoted_printable_then_a_reflow_reads_its_name() -> None:
    # A raw quoted-printable mail re-flowed again at 72 columns cuts the kill line into five
    # pieces (`... Killed process 1966928`, ` (ll=`, `ama-server) ...`, ` shm=`, `em-rss:...`).
    # Standard input's chunk scan read one line after a kill line, then the last piece for its
    # `oom_score_adj`: the joins paired ` (ll` with it, victim `llem-rss:0kB, UID:1000 ...`.
    names = ["backticks", "quoted_printable", "wrap_words_72_indented"]
    assert _different("seed000-journalctl", [_COMBINABLE[name] for name in names]) == []


# Reports whose lines hold no `=`: mailed quoted-printable, nothing but a soft break's length
# tells it.
_NO_EQUALS_SIGN = {report for report, path in REPORTS.items() if "=" not in path.read_text()}


@pytest.mark.xfail(
    strict=True,
    reason="0 kills of 2 read: earlyoom's lines hold no `=` of their own, so quoted-printable is "
    "known only by a soft break ending a line of 76 characters (its longest); a list's dash and a "
    "code span around each line change that length, and each soft break's `=` stays "
    "(`proces=` / `s 29410`)",
)
def test_quoted_printable_without_an_equals_sign_inside_other_marks_is_not_seen() -> None:
    names = ["backticks", "quoted_printable", "dash_bullets"]
    assert _different("earlyoom-journal", [_COMBINABLE[name] for name in names]) == []


@pytest.mark.parametrize(
    ("report", "first", "then"),
    [
        (report, first, then)
        for report in sorted(REPORTS)
        if report not in _CUT_TWICE_LOST
        for first in sorted(_SPLITTING)
        for then in sorted(_SPLITTING)
        if first != then
    ],
)
def test_a_line_cut_by_two_damages_reads_the_same_or_unknown(report: str, first: str, then: str) -> None:
    # Before: seed 002's kill line wrapped at 80 then mailed quoted-printable read the victim
    # `kactivitymanage)=20total-vm:481768kB, ...` (a `=20` in a line with no `=3D` of its own);
    # systemd-oomd's unit line cut twice read two kills of one death.
    assert _different(report, [_COMBINABLE[first], _COMBINABLE[then]]) == []


@settings(max_examples=300, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    report=st.sampled_from(sorted(REPORTS)),
    names=st.lists(st.sampled_from(sorted(_COMBINABLE)), min_size=2, max_size=4, unique=True),
)
def test_combined_damages_read_the_same_or_unknown(report: str, names: list[str]) -> None:
    # A combination holding a damage that is a named limit on this report alone says nothing new.
    assume(not any((name, report) in LIMITS for name in names))
    # Two damages that cut lines cut some twice: earlyoom's and lmkd's kill lines are then lost
    # (a named limit, the test above); the other reports read the same.
    assume(len(_SPLITTING & set(names)) < 2 or report not in _CUT_TWICE_LOST)
    # A quoted-printable text with no `=` of its own, inside other marks: a named limit (above).
    assume(not (report in _NO_EQUALS_SIGN and "quoted_printable" in names))
    # What is copied comes first: a person elides the log they copy (an elision after a wrap would
    # cut a kill line's rest, which no person does) and copies the prompt with it (never inside
    # a mail's quoting); a paste has one kind of line end, set where it is saved, after every
    # other damage (a file of lone CRs mailed quoted-printable would be one line of thousands of
    # characters).
    ends = [name for name in names if name in _LINE_ENDS]
    assume(len(ends) <= 1)
    copied = [name for name in names if name.startswith(("elide_", "prompt_"))]
    names = copied + [name for name in names if name not in _LINE_ENDS and name not in copied] + ends

    assert _different(report, [_COMBINABLE[name] for name in names]) == []


# What the suite found and fixed, each from its reproduction: the damaged real line, what it
# reads now, and what it read before (the different value it must not say).

_SEED000 = (FIXTURES / "seed000_llama_server_gb10" / "kernel.log").read_text().splitlines()
_LMK = (CASES / "dev-android-tv-lmk-kmsg" / "input.txt").read_text().splitlines()


def _episodes(text: str) -> list[dict[str, Any]]:
    result = run("list", "-k", "-", "--all", "-f", "json", "--tz", "UTC", "--year", "2026", input=text)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["episodes"]


def test_a_quoted_printable_soft_line_break_is_taken_off_the_name_it_cut() -> None:
    # seed 000's report mailed quoted-printable: the kill line broken at 76 columns inside the
    # name, `(lla=` then `ma-server)`. Before: the victim `lla=ma-server`.
    text = damage.quoted_printable("\n".join(_SEED000[6:8] + _SEED000[74:75]) + "\n")
    assert "(lla=\nma-server)" in text
    [episode] = _episodes(text)
    assert episode["victim"]["comm"] == "llama-server"
    assert episode["victim"]["pid"] == 1966928


def test_a_line_ending_in_an_equals_sign_keeps_it_outside_quoted_printable() -> None:
    # Without a `=3D` in the source a bare `=` at a line's end is the log's own (a terminal cut
    # after it): kept, and the rest joined after it.
    from oomtrace.prefixes.undecorate import undecorate

    assert (
        undecorate("[ 53.4] x invoked oom-killer: gfp_mask=", "") == "[ 53.4] x invoked oom-killer: gfp_mask="
    )
    assert undecorate("[ 53.4] x invoked oom-killer: gfp_mask=", "", quoted_printable=True) == (
        "[ 53.4] x invoked oom-killer: gfp_mask"
    )


def test_html_list_tags_and_ordered_list_numbers_are_taken_off() -> None:
    from oomtrace.prefixes.undecorate import undecorate

    kill = _SEED000[74]
    assert undecorate(f"<li>{kill}</li>", "") == kill
    assert undecorate(f"<p><i>{kill}</i></p>", "") == kill
    assert undecorate(f"12. {kill}", "") == kill
    # The kernel's own angle brackets and numbers stay.
    for own in ("[  53.4] </TASK>", "<4>[  53.4] <TASK>", "2110 (oomprobe-hog) total-vm:78244kB", "1.5 GiB"):
        assert undecorate(own, "") == own


def test_a_numbered_logcat_line_keeps_its_date() -> None:
    # dev-crdroid-lmkd-logcat as an `<ol>` copies: `3. 10-24 14:24:26.342 ...`. Before: the
    # number read into the date, 10 March (work/attack's free-form date reading now refuses it
    # too; the number taken off, the logcat prefix is read as logcat's).
    text = damage.numbered((CASES / "dev-crdroid-lmkd-logcat" / "input.txt").read_text())
    [episode] = _episodes(text)
    assert episode["time"].startswith("2026-10-24T14:24:26")


def test_a_number_a_terminal_cut_at_the_line_end_is_completed() -> None:
    # dev-android-tv-lmk-kmsg in a 60-column terminal: `..., adj 10` then `00,`. Before: adj 10.
    text = damage.wrap_terminal(60)("\n".join(_LMK[7:11]) + "\n")
    assert "adj 10\n00," in text
    [episode] = _episodes(text)
    assert episode["victim"]["oom_score_adj"] == 1000


def test_lowmemorykiller_without_its_on_behalf_line_names_no_trigger() -> None:
    # The same record indented: its `on behalf of 'kswapd0' (442)` line is not joined. Before:
    # the trigger `lowmemorykiller`, a task that never asked for memory.
    [episode] = _episodes(damage.leading_spaces("\n".join(_LMK[7:11]) + "\n"))
    assert episode["victim"]["comm"] == "d.play.games.ui"
    assert episode["trigger"] is None
    [whole] = _episodes("\n".join(_LMK[7:11]) + "\n")
    assert (whole["trigger"]["comm"], whole["trigger"]["pid"]) == ("kswapd0", 442)


def test_an_indented_continuation_joins_without_its_indent() -> None:
    # k8s-kubepods-dmesg-T-rhel7-java re-flowed at 80 columns with a 4-space indent: the cgroup
    # path on a line of its own. Before: the memcg `   /kubepods/...` with the indent in it.
    text = damage.wrap_words(80, "    ")(REPORTS["el7-dmesg-T-memcg"].read_text())
    assert "\n    /kubepods/pod95387fa4" in text
    episode = _episodes(text)[0]
    assert episode["memcg"] == "/kubepods/pod95387fa4-da9c-11e7-9d36-5254b24cbf5e/" + (
        "6895a3e13439535852d3184ac2aadd26d7363cc035f171545ec7d4ce74073b0b"
    )
