"""Make untrusted log text inert before any format shows it."""

from __future__ import annotations

import re

# C0 controls but tab, DEL, and C1 controls (which include the 8-bit CSI 0x9b), plus the
# Unicode line and paragraph separators and bidi overrides that can reorder what a terminal shows,
# and the invisible format characters that can make `ll\u200bama-server` pass for llama-server:
# zero-width spaces and joiners, direction marks, word joiners, the BOM, soft hyphen, tag characters.
CONTROL = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff"
    "\U000e0000-\U000e007f]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def inert(text: str) -> str:
    """The text with every control character shown as a visible escape (`\\x1b`)."""
    return CONTROL.sub(_escape, text)
