"""What a paste does to a log: one pure function (text → text) a kind of damage.

Each imitates a shape the real-paste corpus holds (tests/realworld/cases, named in its docstring);
tests/test_damage.py applies them to clean reports and checks that what oomtrace reads off the
damaged text is what it reads off the clean one, or unknown, never a different value.
"""

from __future__ import annotations

import quopri
import re
import textwrap
from collections.abc import Callable

Damage = Callable[[str], str]


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _join(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def _each(text: str, change: Callable[[str], str]) -> str:
    return _join([change(line) for line in _lines(text)])


def wrap_terminal(width: int) -> Damage:
    """A terminal (or a web page's `<pre>`) that wrapped each long line at exactly `width`
    columns, mid-word, copied with the breaks: gpu-tranx-terminal-wrap."""

    def damage(text: str) -> str:
        out = []
        for line in _lines(text):
            out.extend(line[i : i + width] for i in range(0, max(len(line), 1), width))
        return _join(out)

    damage.__name__ = f"wrap_terminal_{width}"
    return damage


def wrap_words(width: int, indent: str) -> Damage:
    """A mail client or an editor that re-flowed each long line at a space before `width`
    columns, its continuations indented by `indent`: paste-linuxmm-patch-syslog-indented-wrap
    (`... Killed process 2692` / ` (systemd-udevd) total-vm:...`)."""

    def damage(text: str) -> str:
        out = []
        for line in _lines(text):
            pieces = textwrap.wrap(
                line,
                width,
                subsequent_indent=indent,
                break_long_words=False,
                break_on_hyphens=False,
                drop_whitespace=True,
            )
            out.extend(pieces or [line])
        return _join(out)

    damage.__name__ = f"wrap_words_{width}{'_indented' if indent else ''}"
    return damage


def quoted(depth: int, mark: str = "> ") -> Damage:
    """A reply's `> ` quoting, `depth` levels deep: old-lkml-24-httpd-mysqld-quoted (one),
    old-lkml-24-vm-killing-nested-quote (`> > > `), paste-lkml-ltp-oom01-six-level-quote."""

    def damage(text: str) -> str:
        return _each(text, lambda line: mark * depth + line)

    damage.__name__ = f"quoted_{depth}{'_tight' if mark == '>' else ''}"
    return damage


def quoted_printable(text: str) -> str:
    """A mail sent quoted-printable and read raw: `=` as `=3D`, lines over 76 characters broken
    with a soft `=` at their end: old-linuxmm-qp-nested-msgctl11, paste-cifs-qp-encoded-newlines."""
    return quopri.encodestring(text.encode()).decode("ascii")


def markdown_bold(text: str) -> str:
    """Each line set in Markdown bold (`**...**`), rendered or not: dev-smartdns-logread-bold."""
    return _each(text, lambda line: f"**{line}**" if line.strip() else line)


def backticks(text: str) -> str:
    """Each line a Markdown code span (`` `...` ``): gpu-languagemodels-backtick-glued, whose
    backtick opens the line."""
    return _each(text, lambda line: f"`{line}`" if line.strip() else line)


def fenced(text: str) -> str:
    """The block in a Markdown fence (```` ``` ````, a language named): forum-equinor-numbered-kill-lines
    and most forum pastes."""
    return "```text\n" + text + "```\n"


def dash_bullets(text: str) -> str:
    """Each line a Markdown list item (`- ...`): user-earlyoom-v19-markdown-list-failed."""
    return _each(text, lambda line: f"- {line}" if line.strip() else line)


def star_bullets(text: str) -> str:
    """Each line a `* ` list item (Markdown's other bullet), as a forum's list copies."""
    return _each(text, lambda line: f"* {line}" if line.strip() else line)


def numbered(text: str) -> str:
    """Each line numbered as an HTML `<ol>` copies to text (`1. ...`): the numbered lines of
    forum-equinor-numbered-kill-lines (there `cat -n`'s `  1 `)."""
    return _join([f"{n}. {line}" for n, line in enumerate(_lines(text), 1)])


def line_numbered(text: str) -> str:
    """Each line numbered as `cat -n` or an editor shows it (`  1 [...`):
    forum-equinor-numbered-kill-lines."""
    return _join([f"{n:>3} {line}" for n, line in enumerate(_lines(text), 1)])


def html_list(text: str) -> str:
    """Each line an HTML list item as a page's source holds it (`<li>...</li>`): the tagged
    lines of paste-html-lab-report-retyped-kills (`<p><i>[18328.475820] Out of memory: ...`)."""
    return "<ol>\n" + _each(text, lambda line: f"<li>{line}</li>") + "</ol>\n"


def prompt_line(text: str) -> str:
    """The command that printed the log, with its prompt, pasted above it:
    forum-dietpi-prompt-dmesg-level-err (`root@DietPi:~# dmesg -l err`)."""
    return "root@gpu-3:~# dmesg | grep -i -A40 oom\n" + text + "root@gpu-3:~# \n"


def prompt_glued(text: str) -> str:
    """A prompt glued before the first line, its newline lost: dev-weimarnetz-prompt-glued."""
    return "root@gpu-3:~# " + text


def leading_spaces(text: str) -> str:
    """Each line indented (a forum's code block, a mail's indent):
    forum-earlyoom-web-content-indented (`   Oct 09 10:13:27 Catherine earlyoom[1307]: ...`)."""
    return _each(text, lambda line: "   " + line)


def trailing_spaces(text: str) -> str:
    """Spaces and a tab after each line, as a web page's copy pads them:
    kern-arch-619-nwg-displays-indented-summary."""
    return _each(text, lambda line: line + "  \t ")


def crlf(text: str) -> str:
    """Windows line ends (a paste through a Windows editor or a ticket system). No case of the
    corpus keeps them: its copies were stored with `\\n`; this is the shape such a copy has."""
    return text.replace("\n", "\r\n")


def lone_cr(text: str) -> str:
    """Classic Mac line ends (`\\r` alone), as a serial console's capture writes them. No case
    of the corpus keeps one; this is the shape."""
    return text.replace("\n", "\r")


# Lines a kill's facts rest on: an elision a person makes keeps them (they cut the trace).
_FACT_LINE = re.compile(
    r"invoked oom-killer|Killed process|Kill process|oom-kill:|CPU: \d|Pid: \d|Task in |memory: usage"
    r"|sending SIG|Killing|killed|Killed|oomd|lowmemorykiller|lmkd|earlyoom|constraint|\[ *pid *\]"
)


def _elided(text: str, mark: str) -> str:
    lines = _lines(text)
    lo, hi = len(lines) // 4, (3 * len(lines)) // 4
    start = next((i for i in range(lo, hi) if not _FACT_LINE.search(lines[i])), None)
    if start is None:
        return text
    end = start
    while end < hi and not _FACT_LINE.search(lines[end]):
        end += 1
    return _join([*lines[:start], mark, *lines[end:]])


def elide_dots(text: str) -> str:
    """A run of lines without a kill's facts (a call trace, Mem-Info) replaced by `...`:
    dev-immortalwrt-dmesg-elided."""
    return _elided(text, "...")


def elide_snip(text: str) -> str:
    """The same cut marked `[snip]`: kern-linuxmm-2634-malloc-then-rsyslogd-snip (`<snip>`),
    paste-lkml-reiserfsck-skip-elided."""
    return _elided(text, "[snip]")


def cut_first_line(text: str) -> str:
    """The paste starts mid-line: the first line's first half is gone (a selection begun late):
    kern-arm64-netcup-p2pd-header-cut. Kills may be lost; none may be invented."""
    lines = _lines(text)
    return _join([lines[0][len(lines[0]) // 2 :], *lines[1:]]) if lines else text


def cut_last_line(text: str) -> str:
    """The paste ends mid-line: the last line's second half is gone (an excerpt cut, a pager):
    gpu-nvrm-no-memory-fedora-cut. Kills may be lost; none may be invented."""
    lines = _lines(text)
    return "\n".join([*lines[:-1], lines[-1][: len(lines[-1]) // 2]]) if lines else text


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
LOCALES = {
    "fr": (
        "janv.",
        "févr.",
        "mars",
        "avril",
        "mai",
        "juin",
        "juil.",
        "août",
        "sept.",
        "oct.",
        "nov.",
        "déc.",
    ),
    "ru": ("янв", "фев", "мар", "апр", "мая", "июн", "июл", "авг", "сен", "окт", "ноя", "дек"),
    "de": ("Jan", "Feb", "Mär", "Apr", "Mai", "Jun", "Jul", "Aug", "Sep", "Okt", "Nov", "Dez"),
    # glibc localedata/locales/uk_UA abmon (tests/test_locales.py); no real paste found.
    "uk": ("січ", "лют", "бер", "кві", "тра", "чер", "лип", "сер", "вер", "жов", "лис", "гру"),
}
# An English month in a line's stamp: at its start (journalctl, syslog) or after `dmesg -T`'s
# `[Thu `; never in a message.
_STAMP_MONTH = re.compile(r"^(\s*(?:\[\w{3} )?)(" + "|".join(_MONTHS) + r")(?= +\d)")


def translated_months(locale: str) -> Damage:
    """The stamp's month in a locale's words, as journalctl and `dmesg -T` print them under
    LC_TIME: k8s-minikube-journal-cyrillic-month (`дек 06 14:58:14`),
    paste-systemd-oomd-journal-fr-mars-cut (`mars 01 10:28:39`)."""
    names = dict(zip(_MONTHS, LOCALES[locale], strict=True))

    def damage(text: str) -> str:
        return _each(text, lambda line: _STAMP_MONTH.sub(lambda m: m.group(1) + names[m.group(2)], line))

    damage.__name__ = f"months_{locale}"
    return damage


ALONE: list[Damage] = [
    wrap_terminal(60),
    wrap_terminal(80),
    wrap_terminal(132),
    wrap_words(60, ""),
    wrap_words(72, " "),
    wrap_words(80, "    "),
    wrap_words(132, ""),
    quoted(1),
    quoted(3),
    quoted(2, ">"),
    quoted_printable,
    markdown_bold,
    backticks,
    fenced,
    dash_bullets,
    star_bullets,
    numbered,
    line_numbered,
    html_list,
    prompt_line,
    prompt_glued,
    leading_spaces,
    trailing_spaces,
    crlf,
    lone_cr,
    elide_dots,
    elide_snip,
    cut_first_line,
    cut_last_line,
    translated_months("fr"),
    translated_months("ru"),
    translated_months("de"),
    translated_months("uk"),
]
"""Every damage, each applied alone to every canonical report."""

CUTTING = frozenset({"cut_first_line", "cut_last_line"})
"""The damages that take text away from a line that may be a kill's: the only ones after which
fewer kills may be read."""
