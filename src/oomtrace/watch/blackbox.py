"""The watcher's files: `--record` (an append-only JSONL black box, fsync'd per event) and
`--cursor-file` (where to resume, replaced atomically)."""

from __future__ import annotations

import json
import os
from typing import Any

from oomtrace import outputs
from oomtrace.errors import InputError
from oomtrace.watch.notice import SCHEMA, Notice


class Record:
    """Every notice appended as one JSON line and fsync'd: a machine that wedges (journald syncs
    only every few minutes) still leaves the last minute on disk."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = outputs.open_append(path, "--record")
        # A watcher killed mid-write leaves a cut last line: start on a fresh one.
        if os.fstat(self._fd).st_size and not _ends_with_newline(path):
            os.write(self._fd, b"\n")

    def write(self, notice: Notice) -> None:
        os.write(self._fd, (json.dumps(notice.to_json(), ensure_ascii=False) + "\n").encode())
        os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)


def _ends_with_newline(path: str) -> bool:
    with open(path, "rb") as existing:
        existing.seek(-1, os.SEEK_END)
        return existing.read(1) == b"\n"


def read_cursor(path: str, source: str) -> str | None:
    """The saved cursor, if the file is there and was written for this kind of source."""
    try:
        with open(path, encoding="utf-8") as saved:
            document = json.load(saved)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise InputError(f"cannot read --cursor-file {path}: {error}") from None
    if not isinstance(document, dict) or document.get("source") != source:
        return None
    cursor = document.get("cursor")
    return cursor if isinstance(cursor, str) else None


def write_cursor(path: str, source: str, cursor: str, extra: dict[str, Any] | None = None) -> None:
    """Temp file, fsync, rename, fsync the folder: the cursor file is always whole."""
    folder = os.path.dirname(os.path.abspath(path))
    temp = f"{path}.tmp.{os.getpid()}"
    document = {"schema": SCHEMA, "source": source, "cursor": cursor, **(extra or {})}
    with open(temp, "w", encoding="utf-8") as out:
        json.dump(document, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temp, path)
    directory = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
