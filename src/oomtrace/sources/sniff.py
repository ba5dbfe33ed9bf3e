"""What a log's first MiB says it is (UTF-16 or UTF-32, CR-ended, binary), and the streams that
turn such a log into UTF-8 lines ended by LF."""

from __future__ import annotations

import codecs
from typing import Protocol

from oomtrace.sources.base import DAMAGED

# The sample every judgement is made on: big enough that no rule sits on its threshold (4 KiB of
# /dev/urandom was refused in two runs of three and otherwise read for ever).
SAMPLE_BYTES = 1 << 20
# Bytes a text log does not hold: the C0 controls but tab, LF, VT, FF, CR and ESC (colour codes).
_CONTROL = bytes(b for b in range(32) if b not in (0, 9, 10, 11, 12, 13, 27))
# Share of the sample (NULs left out) that is control bytes or invalid UTF-8 above which it is
# binary. Random bytes score about 0.51; a log, even Latin-1 or coloured, under 0.05.
BINARY_SHARE = 0.3
_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32"),  # before UTF-16's, which it starts with
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
    (b"\xef\xbb\xbf", "utf-8-sig"),
)


class ByteStream(Protocol):
    def read1(self, size: int = ..., /) -> bytes: ...

    def close(self) -> None: ...


class Head:
    """A stream whose first SAMPLE_BYTES are read ahead, to be judged; a failure met while reading
    them is raised when the bytes before it have been given."""

    def __init__(self, stream: ByteStream, read_bytes: int) -> None:
        self.stream = stream
        parts: list[bytes] = []
        size = 0
        self.error: BaseException | None = None
        try:
            # In the pieces every reader takes: a damaged decompressor loses what one read decoded.
            while size < SAMPLE_BYTES and (piece := stream.read1(read_bytes)):
                parts.append(piece)
                size += len(piece)
        except DAMAGED as error:
            self.error = error
        self.sample = b"".join(parts)
        self._given = 0

    def read1(self, size: int = -1, /) -> bytes:
        if self._given < len(self.sample):
            end = len(self.sample) if size < 0 else self._given + size
            piece = self.sample[self._given : end]
            self._given += len(piece)
            return piece
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        return self.stream.read1(size)

    def close(self) -> None:
        self.stream.close()


def encoding_of(sample: bytes) -> str | None:
    """The encoding of a log that is not UTF-8 (or ASCII): by its byte order mark, or UTF-16 by
    its NULs (every other byte of an ASCII text), else None."""
    for bom, encoding in _BOMS:
        if sample.startswith(bom):
            return encoding
    # UTF-32 (PowerShell's `Out-File -Encoding utf32` without its BOM, a copy that cut it): of
    # each four bytes of an ASCII text, three are NULs.
    quarters = [sample[i:4096:4] for i in range(4)]
    if len(quarters[3]) >= 32:
        nuls = [q.count(0) / len(q) for q in quarters]
        if nuls[0] < 0.1 and min(nuls[1:]) > 0.9:
            return "utf-32-le"
        if nuls[3] < 0.1 and min(nuls[:3]) > 0.9:
            return "utf-32-be"
    even, odd = sample[0:2048:2], sample[1:2048:2]
    if len(odd) >= 32:
        if odd.count(0) > 0.9 * len(odd) and even.count(0) < 0.1 * len(even):
            return "utf-16-le"
        if even.count(0) > 0.9 * len(even) and odd.count(0) < 0.1 * len(odd):
            return "utf-16-be"
    return None


def cr_ended(sample: bytes) -> bool:
    """Are the lines ended by a lone CR (old Mac style, some serial consoles): no LF at all?"""
    return b"\r" in sample and b"\n" not in sample


def looks_binary(sample: bytes) -> bool:
    """Binary, not a log with a run of NULs (what a crash leaves in a file being appended to)."""
    # NULs are left out: a crash can leave any amount of them in a text log, and a file of
    # nothing else is refused later as holding no line break.
    text = sample.replace(b"\x00", b"")
    if not text:
        return False
    control = len(text) - len(text.translate(None, _CONTROL))
    invalid = text.decode("utf-8", "replace").count("\ufffd") - text.count("\ufffd".encode())
    return (control + invalid) / len(text) > BINARY_SHARE


class Transcoded:
    """A log in another encoding, as UTF-8."""

    def __init__(self, stream: ByteStream, encoding: str, read_bytes: int) -> None:
        self.stream = stream
        self.read_bytes = read_bytes
        self._decoder = codecs.getincrementaldecoder(encoding)("replace")
        self._done = False

    def read1(self, size: int = -1, /) -> bytes:
        while not self._done:
            piece = self.stream.read1(self.read_bytes)
            self._done = not piece
            text = self._decoder.decode(piece, final=self._done)
            if text:
                return text.encode("utf-8", "replace")
        return b""

    def close(self) -> None:
        self.stream.close()


class CrEnded:
    """A log whose lines end with a lone CR, its CRs made LFs."""

    def __init__(self, stream: ByteStream) -> None:
        self.stream = stream

    def read1(self, size: int = -1, /) -> bytes:
        return self.stream.read1(size).replace(b"\r", b"\n")

    def close(self) -> None:
        self.stream.close()
