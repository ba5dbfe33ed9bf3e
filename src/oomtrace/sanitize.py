"""Make untrusted log text inert before any format shows it."""

from __future__ import annotations

import re

# C0 controls but tab, DEL, and C1 controls (which include the 8-bit CSI 0x9b), plus the
# Unicode line and paragraph separators and bidi overrides that can reorder what a terminal shows.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def inert(text: str) -> str:
    """The text with every control character shown as a visible escape (`\\x1b`)."""
    return _CONTROL.sub(_escape, text)
