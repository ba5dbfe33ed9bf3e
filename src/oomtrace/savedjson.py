"""A state file oomtrace wrote as JSON (`--cursor-file` of `watch` and `check`), read back.

One reading for both commands, because the same accidents reach both: a file made with `touch`
(or by a unit's StateDirectory=) before the first run, a disk that filled between create and
write on a filesystem without atomic rename, or a file that is not ours at all.
"""

from __future__ import annotations

import json
from typing import Any

# A cursor is a few kilobytes; a file much larger than that is not one of ours.
MAX_BYTES = 16 * 1024 * 1024


class NotOurs(ValueError):
    """The file holds something that is not a saved state (said, never overwritten)."""


def load(path: str) -> Any | None:
    """The saved document; None when there is none yet: no file, or a file of nothing but
    whitespace (an empty file is a first run's, not a damaged state). Anything else that is not
    JSON raises NotOurs with the reason, so a file that is not ours is refused, never replaced."""
    try:
        with open(path, "rb") as saved:
            data = saved.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise NotOurs(error.strerror or str(error)) from None
    if len(data) > MAX_BYTES:
        raise NotOurs(f"over {MAX_BYTES // (1024 * 1024)} MiB, not a file oomtrace wrote")
    if not data.strip():
        return None
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise NotOurs("not UTF-8 text, not a file oomtrace wrote") from None
    except RecursionError:  # `[[[[…` nested past the parser's stack
        raise NotOurs("JSON nested too deeply, not a file oomtrace wrote") from None
    except ValueError as error:
        raise NotOurs(f"not JSON ({error}), not a file oomtrace wrote") from None
