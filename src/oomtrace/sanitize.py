"""Make untrusted log text inert before any format shows it.

One rule for every output: a character that could act on a terminal or a Markdown viewer, or that
draws nothing a reader can tell apart, is shown as its escape (`\\x1b`, `\\u200b`), so two names
that differ never print alike (`a\\u200bb` is not `ab`, `x\\x09y` not `x   y`). Text and Markdown
show the escape (`inert`; a raw log line keeps its tabs, `inert_line`); JSON keeps the exact
string and writes these characters as `\\uXXXX` (formats/json.py, with INVISIBLE).
"""

from __future__ import annotations

import re

# Beyond C0 and C1 controls and DEL (C1 holds the 8-bit CSI 0x9b): every format character (Cf:
# the soft hyphen, zero-width spaces and joiners, direction marks and the bidi overrides that
# reorder what a terminal shows, word joiners, the BOM, tag characters), every space other than
# the space itself (Zs: a no-break or an em space passes for a space), the line and paragraph
# separators (Zl, Zp), and the characters that draw as blank: the Hangul fillers, the combining
# grapheme joiner, variation selectors (Mongolian ones too), Khmer's inherent vowels, the blank
# Braille pattern. They make `ll\u200bama-server` or `\u3164` pass for llama-server or nothing.
# tests/test_hostile.py checks the Cf, Zs, Zl and Zp of Python's Unicode tables are all here.
_INVISIBLE = (
    "\x7f-\x9f\xa0\xad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u1680"
    "\u17b4\u17b5\u180b-\u180f\u2000-\u200f\u2028-\u202f\u205f-\u206f\u2800\u3000\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f\U000e0100-\U000e01ef"
)
INVISIBLE = re.compile(f"[{_INVISIBLE}]")
"""What JSON writes as `\\uXXXX` (json.dumps already escapes C0 controls)."""
CONTROL = re.compile(f"[\x00-\x1f{_INVISIBLE}]")
"""Every character `inert` escapes: a name's or a sentence's tab too (a comm may hold one)."""
_LINE_CONTROL = re.compile(f"[\x00-\x08\x0a-\x1f{_INVISIBLE}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def inert(text: str) -> str:
    """The text with every control, format or blank character shown as a visible escape
    (`\\x1b`, `\\x09`, `\\u200b`)."""
    return CONTROL.sub(_escape, text)


def inert_line(text: str) -> str:
    """A raw log line quoted whole (a Markdown code block): as `inert`, but its tabs, the log's
    own spacing, kept."""
    return _LINE_CONTROL.sub(_escape, text)
