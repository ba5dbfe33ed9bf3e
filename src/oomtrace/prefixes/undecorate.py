"""What a copy adds around a log line, taken off before any family reads it.

E-mail quoting, quoted-printable (its soft line breaks too), Markdown emphasis and escapes, list
bullets and numbers, HTML tags around a line, terminal colours and invisible characters, and the
decoration a source's lines share (a console's name). From
tests/realworld/cases/old-linuxmm-qp-nested-msgctl11 and dev-smartdns-logread-bold:

    >> > > > msgctl11 invoked oom-killer: gfp_mask=3D0x200da, order=3D0, oom_ad=
    **Fri Aug  7 08:24:06 2026 kern.info kernel: [13579.902296] oom-kill:constraint=...**

read as `msgctl11 invoked oom-killer: gfp_mask=0x200da, order=0, oom_ad` and
`Fri Aug  7 08:24:06 2026 kern.info kernel: [13579.902296] oom-kill:constraint=...`.
"""

from __future__ import annotations

import quopri

from oomtrace.lazyregex import lazy_compile

# Decorations glued to pasted lines: e-mail quoting, Markdown emphasis and code marks, and the
# backslashes Markdown escapes need.
_QUOTED = lazy_compile(r"(?:[ \t]{0,3}>)+[ \t]?")
# Not `__`: kernel symbols begin with it (`__alloc_pages_slowpath+0x...`).
MARKS = "*`"
_MARKDOWN_EDGE = lazy_compile(r"^\s*(?:\*\*|`+)|(?:\*\*|`+)\s*$")
_MD_ESCAPE = lazy_compile(r"\\([\[\]_*#<>`()|-])")
# Escapes only Markdown writes, where the kernel writes the text (a stamp's or a pid's bracket,
# its field names): a line without one is log text, whose backslashes (`ll\ama\-srv`) are its own.
_MD_ESCAPED = lazy_compile(r"\\\[\s*\d|oom\\_|\\_(?:mask|memcg|allowed|bytes|adj)|\\-(?:rss|vm|killer)")
# Characters a copy adds before a line that nobody sees: zero-width spaces and joiners, direction
# marks, a byte-order mark. Only before it: inside the message they are the log's own (a comm
# `a\u200bb` is not `ab`), kept, and shown escaped (sanitize.py). A no-break space stands for a
# space anywhere.
_INVISIBLE_LEAD = "\u200b\u200c\u200d\u200e\u200f\u2060\ufeff"
_NO_BREAK = {0xA0: " "}
# Terminal sequences a paste kept before its lines (`dmesg --color=always`, a pager's output), and
# the colours within a line that begins with one. An escape inside a message of an uncoloured
# line is the message's own (a process name may hold one): kept, and shown escaped.
_ANSI_LEAD = lazy_compile(r"(?:\x1b\[[0-9;?]*[ -/]*[@-~])+")
_ANSI_COLOUR = lazy_compile(r"\x1b\[[0-9;]*m")
# A list bullet before each line of a paste (`* [ 123.4] Out of memory: ...`, `• ...`, `- ...`;
# a dash only with a space after it: `-- Boot ...` is journalctl's own).
_BULLET = lazy_compile(r"\s{0,3}(?:[*•·][ \t]*(?=\S)(?!\*)|-[ \t]+(?=\S))")
# An ordered list's number, as a web page's `<ol>` copies to text (`3. 10-24 14:24:26.342 ...`):
# a dot and a space, which no log line's own prefix begins with (`1.5` has no space; `cat -n`'s
# bare numbers are not taken: a wrapped kill line's rest begins with its pid).
_NUMBERED = lazy_compile(r"\s{0,3}\d{1,5}\.[ \t]+(?=\S)")
# HTML tags around a line copied from a page's source (`<p><i>[18328.475820] Out of memory: ...`,
# `<li>...</li>`): the tags of text and lists only; the kernel's own `<TASK>` is upper-case, and a
# priority `<4>` is a number.
_HTML_LEAD = lazy_compile(r"\s*(?:<(?:li|p|i|b|em|strong|code|pre|tt|span|div|br|ol|ul)(?:\s[^<>]*)?/?>)+")
_HTML_TAIL = lazy_compile(r"(?:</(?:li|p|i|b|em|strong|code|pre|tt|span|div|ol|ul)>|<br\s*/?>)+\s*$")
# What only quoted-printable writes besides an escaped `=` (`=3D`): a UTF-8 character's bytes
# escaped (`=D0=B0`, a Russian month name in a stamp).
_QP_ESCAPES = lazy_compile(r"=[C-F][0-9A-F]=[89AB][0-9A-F]")
# An escaped space or tab (`=20`, `=09`).
_QP_BLANK = lazy_compile(r"=(?:20|09)")
# Largest prefix kept as a decoration to cut off the lines that follow.
MAX_DECORATION = 80


def undecorate(line: str, decoration: str, *, quoted_printable: bool = False) -> str:
    """The line without what a copy added, and without `decoration` (a prefix the lines before
    it had, see state.ReadState._learn) where it begins with it. In a source known to be
    quoted-printable (`quoted_printable`: a `=3D` was seen), a bare `=` ending a line is a soft
    line break."""
    if line[:1] == "\0":
        # The NUL run an unclean shutdown leaves in a log (its size was written, not its blocks),
        # of any length: what follows is the next line the daemon wrote.
        line = line.lstrip("\0")
    if not line.isascii():
        line = line.lstrip(_INVISIBLE_LEAD).translate(_NO_BREAK)
    if line[:1] == "\x1b" and (lead := _ANSI_LEAD.match(line)):
        line = _ANSI_COLOUR.sub("", line[lead.end() :])
    if decoration and line.startswith(decoration):
        line = line[len(decoration) :]
    line = _unwrapped(line)
    if "\\" in line and _MD_ESCAPED.search(line):
        line = _MD_ESCAPE.sub(r"\1", line).rstrip("\\")
    if "=3D" in line:
        # A mail quoted-printable in transit: `gfp_mask=3D0x200da` (every `=` is `=3D` then).
        line = quopri.decodestring(line.encode("utf-8", "surrogateescape")).decode("utf-8", "replace")
    elif quoted_printable and "=" in line and _QP_BLANK.search(line) is not None:
        # In one known to be, a line with no `=` of its own keeps its escaped blanks
        # (`(kactivitymanage)=20total-vm:`: a space a terminal's wrap left at a line's end).
        line = _QP_BLANK.sub(lambda blank: " " if blank.group(0) == "=20" else "\t", line)
    # Once more: a quoted-printable line's own wrappings are inside its escapes.
    line = _unwrapped(line)
    if quoted_printable and line.rstrip(" \t")[-1:] == "=":
        # Its soft line break, a line over 76 characters broken at a bare `=` (`(lla=` then
        # `ma-server)`; a literal `=` would be `=3D`), inside any Markdown around the mail, with
        # any spaces after it (which a decoder ignores): the `=` goes, and rejoin.py joins the rest.
        line = line.rstrip(" \t")[:-1]
    return line


def _untagged(line: str) -> str:
    """The line without the HTML tags of text and lists around it (`<li>...</li>`)."""
    if "<" in line[:5] and (lead := _HTML_LEAD.match(line)):
        line = line[lead.end() :]
    if line[-1:] == ">" and "</" in line:
        line = _HTML_TAIL.sub("", line)
    return line


def quoted_printable_in(line: str) -> bool:
    """Does the line show its source is a mail read raw in quoted-printable: an escape only it
    writes, or a soft line break that ends a line of its longest, 76 characters?"""
    if "=" not in line:
        return False
    if "=3D" in line or (len(line) == 76 and line[-1] == "="):
        return True
    # Read per line a source reads the long way: the search only where a UTF-8 lead byte may be.
    return any(lead in line for lead in ("=C", "=D", "=E", "=F")) and _QP_ESCAPES.search(line) is not None


def _unwrapped(line: str) -> str:
    """The line without a page's tags, a mail's quoting, a list's bullet or number, and Markdown
    emphasis or code marks at its ends, in whatever order they were put around it."""
    for _ in range(4):
        before, line = line, _unwrapped_once(line)
        if line == before:
            break
    return line


def _unwrapped_once(line: str) -> str:
    if line[-1:] == ">" or line.lstrip()[:1] == "<":
        line = _untagged(line)
    if ">" in line[:4]:
        line = _QUOTED.sub("", line, count=1) if _QUOTED.match(line) else line
    if line.lstrip()[:1] in "*•·-":
        # Before the Markdown marks: a list item's code span (`` - `[ 20.4] ...` ``).
        line = _BULLET.sub("", line, count=1) if _BULLET.match(line) else line
    if line.lstrip()[:1] in MARKS or line[-1:] in MARKS:
        # `**[ 123.4] Out of memory: ...**`, a code span, a fence: Markdown, never log text.
        line = _MARKDOWN_EDGE.sub("", line)
        if line[-1:] == ">" or line.lstrip()[:1] == "<":
            line = _untagged(line)
    if line.lstrip()[:1].isdigit() and (number := _NUMBERED.match(line)):
        line = line[number.end() :]
    return line
