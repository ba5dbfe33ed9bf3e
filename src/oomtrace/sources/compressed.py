"""The compressions a saved log is read through, and what a failure part-way says of the bytes before."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import struct
from collections import deque
from collections.abc import Callable
from typing import Any, BinaryIO

from oomtrace.errors import InputError
from oomtrace.frozen import Frozen
from oomtrace.sources.base import DAMAGED


class Damaged(OSError):
    """A compressed log that failed part-way through."""

    def __init__(self, reason: str, *, trusted: bool, tool: str = "") -> None:
        super().__init__(reason)
        self.tool = tool
        """The command that tests such a file (`gzip -t`)."""
        self.trusted = trusted
        """Is every byte given before the failure right? True for a cut file, and for xz and bzip2,
        whose bytes are given only once checked or far behind the decoder (`_Bzip2Blocks`,
        `_HeldBack`). False for a gzip member or a zstd frame whose check failed: those check only
        at their end, so what the failing one gave may be garbage (a bit flipped in a .gz turned
        1,000 kills into 1,175, with a phantom crash loop)."""


class Compression(Frozen):
    name: str
    magic: bytes
    open: Callable[[BinaryIO], Any]
    """A reader of the decompressed bytes with read1()."""
    checked_at_end: bool
    """Does a data error mean the bytes before it cannot be trusted (see `Damaged.trusted`)?"""
    tool: str
    """The command that tests a file of this kind."""


def _open_zstd(raw: BinaryIO) -> Any:
    # zstandard (not the standard library's until Python 3.14) reads across frames; a cut file
    # ends its stream silently, so the frames are walked alongside to tell a cut (see _ZstdFrames).
    import zstandard

    frames = _ZstdFrames(raw)
    reader = zstandard.ZstdDecompressor().stream_reader(frames, read_across_frames=True)  # type: ignore[arg-type]
    return _ZstdReader(reader, frames)


XZ_MAGIC = b"\xfd7zXZ\x00"


def _open_xz(raw: BinaryIO) -> Any:
    return _HeldBack(_XzStreams(raw), XZ_HELD_BACK)


COMPRESSIONS = (
    Compression("gzip", b"\x1f\x8b", lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"), True, "gzip -t"),
    Compression("xz", XZ_MAGIC, _open_xz, False, "xz -t"),
    Compression("bzip2", b"BZh", lambda raw: _Bzip2Blocks(raw), False, "bzip2 -t"),
    # logrotate and several distributions compress rotated logs with zstd (kern.log.1.zst).
    Compression("zstd", b"\x28\xb5\x2f\xfd", _open_zstd, True, "zstd -t"),
)


def compression_of(head: bytes) -> Compression | None:
    return next((c for c in COMPRESSIONS if head.startswith(c.magic)), None)


class Decompressed:
    """A compressed file's decompressed bytes; its failures raised as `Damaged`."""

    def __init__(self, raw: io.BufferedReader, compression: Compression) -> None:
        self.compression = compression
        self.stream = compression.open(raw)

    def read1(self, size: int = -1, /) -> bytes:
        try:
            return bytes(self.stream.read1(size))
        except Damaged:
            raise
        except EOFError as error:  # the file ends inside a member: all before it is right
            raise Damaged(str(error), trusted=True) from None
        except (*DAMAGED, _zstd_error()) as error:
            raise Damaged(str(error), trusted=self._trusted(error), tool=self.compression.tool) from None

    def _trusted(self, error: BaseException) -> bool:
        if not self.compression.checked_at_end:
            return True
        # gzip: bytes after a member that are not another member (the members before are checked).
        return str(error).startswith("Not a gzipped file")

    def close(self) -> None:
        self.stream.close()  # not the file: its owner (logbytes.LogBytes) closes that


def untrusted(name: str, error: BaseException) -> InputError | None:
    """The refusal for a compressed log whose bytes before the failure cannot be trusted."""
    if not isinstance(error, Damaged) or error.trusted:
        return None
    return InputError(
        f"cannot trust {name}: it is damaged ({error}), and its format checks its data only at the "
        "end, so any of its lines may be garbage: none was read",
        hint=f"test it with `{error.tool} {name}`; read an undamaged copy (a backup, the host's own "
        "/var/log), or decompress it yourself and pass the text with -k if you accept the garbage",
    )


def cut_short(name: str, error: BaseException, lines: int) -> str:
    """What to say of a compressed log whose reading stopped at damage after `lines` lines (a
    rotated log copied while written, a disk that filled up): every line before it is kept. One
    whose lines cannot be trusted, or that gave none, is refused instead (InputError)."""
    refusal = untrusted(name, error)
    if refusal is not None:
        raise refusal from None
    if lines == 0:
        raise InputError(f"cannot decompress {name}: {error}") from None
    return f"cut short after line {lines} ({error})"


def _zstd_error() -> type[BaseException]:
    try:
        import zstandard
    except ImportError:
        return OSError
    return zstandard.ZstdError  # type: ignore[no-any-return]


# bzip2 gives a block's bytes only once it has read the whole block, and checks its CRC as it
# finishes giving them: bytes older than the largest block behind the newest are checked. A block
# holds at most 900,000 bytes after its first run-length step, which makes 4 to 255 equal bytes
# into 5 (at most 51 times as many out).
BZIP2_BLOCK_MAX = 900_000 * 51
# The decompressor's output a call may make (the call after it goes on where it stopped).
_STEP = 1 << 20
# The compressed bytes a bzip2 call is given. A call that finishes a block goes on into the next
# one, and damage found there fails the call, losing the finished block's bytes with it: small
# pieces make that rare (damage in the next block's first KiB).
_BZIP2_PIECE = 1 << 10
# xz checks a block at its end, and `xz` makes a whole file one block: what its decoder gave
# just before it found damage may be garbage. Of 1,500 random bits flipped in a 3 MB log, 114
# gave garbage before the error, up to 67 KB of it: the last MiB is held back until more follows.
XZ_HELD_BACK = 1 << 20
# The compressed bytes an xz call is given, as lzma.LZMAFile gives them: a call that meets damage
# fails, and what it decoded before the damage is lost with it.
_XZ_PIECE = 8 << 10


class _Bzip2Blocks:
    """A bzip2 file's bytes, given only once its blocks' checks passed (`bz2.BZ2File` gives a
    failing block's garbage before its check: a flipped bit read as 900 KB of scrambled lines,
    phantom tasks rows among them). Bytes a call gives are checked when the decoder then needs
    input or ends its stream: it has finished every block it began giving."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self._decompressor = bz2.BZ2Decompressor()
        self._checked: deque[bytes] = deque()
        self._pending: deque[bytes] = deque()  # given since the decoder last needed input
        self._pending_bytes = 0
        self._cut = False  # the file ended inside a stream: raised once the checked bytes are read
        self._ended = False

    def read1(self, size: int = -1, /) -> bytes:
        while not self._checked and not self._ended:
            self._decode()
        if not self._checked:
            if self._cut:
                self._cut = False
                raise EOFError("Compressed file ended before the end-of-stream marker was reached")
            return b""
        given = self._checked.popleft()
        if 0 <= size < len(given):
            given, rest = given[:size], given[size:]
            self._checked.appendleft(rest)
        return given

    def _decode(self) -> None:
        decompressor = self._decompressor
        if decompressor.eof:  # a stream ended: pbzip2 and `cat a.bz2 b.bz2` make several
            piece = decompressor.unused_data
            while len(piece) < len(b"BZh") and (more := self.raw.read(_BZIP2_PIECE)):
                piece += more  # the next stream's magic may straddle two pieces
            if not piece:
                self._ended = True
                return
            if not piece.startswith(b"BZh"):
                self._ended = True
                raise OSError("bytes after the last bzip2 stream are not bzip2")
            self._decompressor = decompressor = bz2.BZ2Decompressor()
        elif decompressor.needs_input:
            piece = self.raw.read(_BZIP2_PIECE)
            if not piece:
                self._ended = self._cut = True
                return
        else:
            piece = b""
        data = decompressor.decompress(piece, _STEP)
        if data:
            self._pending.append(data)
            self._pending_bytes += len(data)
        if decompressor.needs_input or decompressor.eof:
            self._checked.extend(self._pending)
            self._pending.clear()
            self._pending_bytes = 0
        # A run of equal bytes (a NUL hole) makes huge blocks: what lies a whole block behind
        # is given, so that at most a block is held (46 MB; a block of log text gives 900 KB).
        while self._pending and self._pending_bytes - len(self._pending[0]) > BZIP2_BLOCK_MAX:
            older = self._pending.popleft()
            self._pending_bytes -= len(older)
            self._checked.append(older)

    def close(self) -> None:
        self._checked.clear()
        self._pending.clear()


class _NotXz(OSError):
    """Bytes after the last xz stream that are neither stream padding nor another stream: the
    streams before them passed their checks."""


class _XzStreams:
    """An xz file's streams one after another (`cat a.xz b.xz` makes several). Unlike
    `lzma.LZMAFile`, which drops bytes after the last stream without a word, it raises `_NotXz`
    for them, and EOFError where the file ends inside a stream."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self._decompressor = lzma.LZMADecompressor(lzma.FORMAT_XZ)
        self._input = b""  # read from the file for the next stream, not yet decoded
        self._ended = False

    def read1(self, size: int = -1, /) -> bytes:
        while not self._ended:
            decompressor = self._decompressor
            if decompressor.eof:
                self._next_stream(decompressor.unused_data)
                continue
            piece = b""
            if decompressor.needs_input:
                piece, self._input = self._input or self.raw.read(_XZ_PIECE), b""
                if not piece:
                    self._ended = True
                    raise EOFError("Compressed file ended before the end-of-stream marker was reached")
            if data := decompressor.decompress(piece, _STEP):
                return data
        return b""

    def _next_stream(self, left: bytes) -> None:
        # Stream padding (NUL bytes) may follow a stream; then another stream, or the end.
        left = left.lstrip(b"\0")
        while len(left) < len(XZ_MAGIC) and (more := self.raw.read(_XZ_PIECE)):
            left = (left + more).lstrip(b"\0")
        if not left.startswith(XZ_MAGIC):
            self._ended = True
            if left:
                raise _NotXz("bytes after the last xz stream are not xz")
            return
        self._decompressor, self._input = lzma.LZMADecompressor(lzma.FORMAT_XZ), left

    def close(self) -> None:
        self._ended = True


class _HeldBack:
    """A decompressor's bytes, each given only once `behind` more bytes follow it, or the stream
    ended or was cut (a cut gives no garbage; damage raises, and the held bytes are dropped;
    bytes after the last stream, `_NotXz`, are raised as a cut is: after the bytes before them)."""

    def __init__(self, stream: Any, behind: int) -> None:
        self.stream = stream
        self.behind = behind
        self._held = bytearray()
        self._ended = False
        self._cut: EOFError | _NotXz | None = None

    def read1(self, size: int = -1, /) -> bytes:
        while len(self._held) <= self.behind and not self._ended:
            try:
                data = self.stream.read1(_STEP)
            except (EOFError, _NotXz) as ended_inside:
                self._cut, data = ended_inside, b""
            self._ended = not data
            self._held += data
        ready = len(self._held) if self._ended else len(self._held) - self.behind
        if not ready and self._cut is not None:
            cut, self._cut = self._cut, None
            raise cut
        take = ready if size < 0 else min(size, ready)
        given = bytes(self._held[:take])
        del self._held[:take]
        return given

    def close(self) -> None:
        self.stream.close()


class _ZstdReader:
    """zstandard's stream reader, raising EOFError where the file ends inside a frame."""

    def __init__(self, stream: Any, frames: _ZstdFrames) -> None:
        self.stream = stream
        self.frames = frames

    def read1(self, size: int = -1, /) -> bytes:
        data: bytes = self.stream.read1(size)
        if not data and self.frames.inside:
            raise EOFError("the file ends inside a zstd frame (it was cut)")
        return data

    def close(self) -> None:
        self.stream.close()


_ZSTD_MAGIC = 0xFD2FB528
_DICT_ID_BYTES = (0, 1, 2, 4)
_CONTENT_SIZE_BYTES = (0, 2, 4, 8)


class _ZstdFrames:
    """The compressed bytes as zstandard reads them, with frames and blocks walked by their
    headers alone (RFC 8878: no decoding), to know at the end whether the last frame ended."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self._pending = b""  # header bytes not yet complete
        self._skip = 0  # content bytes to pass
        self._state = "frame"
        self._checksum = False
        self._frame_header_bytes = 0
        self._first = b""  # a skippable frame's size's first byte

    @property
    def inside(self) -> bool:
        return self._state != "frame" or self._skip > 0 or bool(self._pending)

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self._walk(data)
        return data

    def tell(self) -> int:
        return self.raw.tell()

    def _walk(self, data: bytes) -> None:
        position = 0
        while position < len(data):
            if self._skip:
                step = min(self._skip, len(data) - position)
                self._skip -= step
                position += step
                if not self._skip and self._state == "checksum":
                    self._state = "frame"
                continue
            need = self._need()
            take = min(need - len(self._pending), len(data) - position)
            self._pending += data[position : position + take]
            position += take
            if len(self._pending) == need:
                header, self._pending = self._pending, b""
                self._header(header)

    def _need(self) -> int:
        if self._state == "frame":
            return 5  # magic and the frame header descriptor (or a skippable frame's size's first byte)
        if self._state == "skippable":
            return 3
        if self._state == "frame-header":
            return self._frame_header_bytes
        return 3  # a block header

    def _header(self, header: bytes) -> None:
        if self._state == "frame":
            magic = struct.unpack("<I", header[:4])[0]
            if magic & 0xFFFFFFF0 == 0x184D2A50:
                self._state, self._first = "skippable", header[4:]
                return
            if magic != _ZSTD_MAGIC:  # not zstd: the decompressor says so
                self._state = "frame"
                return
            descriptor = header[4]
            single = descriptor >> 5 & 1
            self._checksum = bool(descriptor >> 2 & 1)
            size_flag = descriptor >> 6
            size_bytes = _CONTENT_SIZE_BYTES[size_flag] or (1 if single else 0)
            self._frame_header_bytes = (0 if single else 1) + _DICT_ID_BYTES[descriptor & 3] + size_bytes
            self._state = "frame-header" if self._frame_header_bytes else "block"
        elif self._state == "skippable":
            self._skip = struct.unpack("<I", self._first + header)[0]
            self._state = "frame"
        elif self._state == "frame-header":
            self._state = "block"
        else:
            value = int.from_bytes(header, "little")
            last, kind, size = value & 1, value >> 1 & 3, value >> 3
            self._skip = 1 if kind == 1 else size
            if last:
                self._state = "checksum" if self._checksum else "frame"
                if self._checksum:
                    self._skip += 4
            if not self._skip:
                self._state = "frame" if self._state == "checksum" else self._state
