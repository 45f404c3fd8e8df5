"""Reading archives member by member: format detection and the zip and tar sources.

A source turns its format's headers into neutral `Member`s and opens one member at a
time as a stream; it never writes. Every foreign read error (zipfile, tarfile, zlib,
gzip, bz2, lzma) becomes `archive.corrupt` here, in `reading()`.
"""

from __future__ import annotations

import bz2
import copy
import gzip
import io
import lzma
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from book_agent.domain.errors import BookAgentError

Kind = Literal["file", "dir", "link", "special"]
BLOCK = 512
_TRAILER_SLACK = 1 << 20  # bytes tolerated after a tar's end marker (record padding is 10 KiB)
_ZIP_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED}
_ZIP_AES = 99  # WinZip AES: an encrypted member whatever the flag bits say
_ZIP_ENCRYPTED = 0x1
_ZIP_STRONG_ENCRYPTION = 0x40


@dataclass(frozen=True)
class Member:
    name: str  # as the archive spells it (zip: after the Unicode-path extra field)
    kind: Kind
    size: int  # declared uncompressed size
    compressed: int | None = None  # zip only: bytes of compressed data
    encrypted: bool = False
    method: str | None = None  # zip: compression method when not stored/deflated
    raw_name: str = ""  # zip: the name before zipfile cut it at a NUL byte
    handle: object = None  # the format's own header object


@contextmanager
def reading(what: str) -> Iterator[None]:
    try:
        yield
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error, lzma.LZMAError) as exc:
        raise corrupt(what, exc) from exc
    except (OSError, ValueError) as exc:  # gzip.BadGzipFile, bz2 data errors, bad UTF-8 names
        raise corrupt(what, exc) from exc


def corrupt(what: str, exc: BaseException | str) -> BookAgentError:
    return BookAgentError(
        "archive.corrupt",
        f"the archive is damaged or truncated ({what}): {exc}",
        details={"stage": what, "error": str(exc)},
        remediation="download or copy the archive again; check it with `unzip -t` or `tar -tf`",
    )


def detect_format(handle: IO[bytes]) -> str:
    """'zip', 'tar', 'tar.gz', 'tar.bz2', 'tar.xz' or 'empty-tar', from content alone."""
    handle.seek(0)
    head = handle.read(BLOCK)
    handle.seek(0)
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    opener: Callable[[IO[bytes]], io.BufferedIOBase] | None = None
    if head.startswith(b"\x1f\x8b"):
        kind, opener = "tar.gz", lambda raw: gzip.GzipFile(fileobj=raw, mode="rb")
    elif head.startswith(b"BZh"):
        kind, opener = "tar.bz2", lambda raw: bz2.BZ2File(raw, "rb")
    elif head.startswith(b"\xfd7zXZ\x00"):
        kind, opener = "tar.xz", lambda raw: lzma.LZMAFile(raw, "rb")  # noqa: SIM115
    else:
        kind = "tar"
    if opener is not None:
        with reading("decompressing the first block"), opener(handle) as inner:
            head = inner.read(BLOCK)
        handle.seek(0)
    if len(head) == BLOCK and head[257:262] == b"ustar":
        return kind
    if len(head) == BLOCK and head == bytes(BLOCK):
        return "empty-tar"  # a tar with nothing but its end marker
    raise BookAgentError(
        "archive.unsupported_format",
        "not a zip or (compressed) POSIX tar archive",
        details={"detected": kind if opener is not None else "unknown", "head": head[:8].hex()},
        remediation="package the book folder as .zip, .tar, .tar.gz or .tgz",
    )


class ZipSource:
    """All members are known up front from the central directory."""

    def __init__(self, handle: IO[bytes]) -> None:
        with reading("reading the zip directory"):
            self._zip = zipfile.ZipFile(handle)
            self._infos = self._zip.infolist()
        self.member_count: int | None = len(self._infos)
        self.declared_total: int | None = sum(info.file_size for info in self._infos)

    def members(self) -> Iterator[Member]:
        for info in self._infos:
            yield Member(
                name=info.filename,
                kind=_zip_kind(info),
                size=info.file_size,
                compressed=info.compress_size,
                encrypted=bool(info.flag_bits & (_ZIP_ENCRYPTED | _ZIP_STRONG_ENCRYPTION))
                or info.compress_type == _ZIP_AES,
                method=None if info.compress_type in _ZIP_METHODS else str(info.compress_type),
                raw_name=info.orig_filename,
                handle=info,
            )

    def open(self, member: Member) -> IO[bytes]:
        # zipfile stops at the declared size and then fails the CRC check, which hides a
        # lying header as mere corruption. Lift the cap so the writer counts the bytes
        # that really come out (the CRC is still checked at the real end).
        info = copy.copy(member.handle)
        assert isinstance(info, zipfile.ZipInfo)
        info.file_size = 1 << 62
        with reading(f"opening {member.name!r}"):
            return self._zip.open(info)

    def finish(self) -> None:
        pass

    def close(self) -> None:
        self._zip.close()


def _zip_kind(info: zipfile.ZipInfo) -> Kind:
    mode = info.external_attr >> 16
    kind = stat.S_IFMT(mode)
    if kind == stat.S_IFLNK:
        return "link"
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        return "special"
    if info.filename.endswith("/") or kind == stat.S_IFDIR or info.external_attr & 0x10:
        return "dir"
    return "file"


class TarSource:
    """Members arrive one header at a time; nothing is known up front."""

    member_count: int | None = None
    declared_total: int | None = None

    def __init__(self, handle: IO[bytes], kind: str) -> None:
        mode = {"tar": "r:", "tar.gz": "r:gz", "tar.bz2": "r:bz2", "tar.xz": "r:xz"}[kind]
        with reading("opening the tar stream"):
            self._tar: tarfile.TarFile = tarfile.open(fileobj=handle, mode=mode)  # type: ignore[call-overload]  # noqa: SIM115

    def members(self) -> Iterator[Member]:
        while True:
            with reading("reading a tar header"):
                info = self._tar.next()
            if info is None:
                return
            yield Member(name=info.name, kind=_tar_kind(info), size=info.size, handle=info)

    def open(self, member: Member) -> IO[bytes]:
        assert isinstance(member.handle, tarfile.TarInfo)
        with reading(f"opening {member.name!r}"):
            stream = self._tar.extractfile(member.handle)
        if stream is None:  # only for non-regular members, which never get here
            raise corrupt(f"opening {member.name!r}", "no data")
        return stream

    def finish(self) -> None:
        """tarfile ends quietly at a truncated or garbled header; insist on the real
        end-of-archive block, then read the compressed trailer so its CRC is checked."""
        stream = self._tar.fileobj
        assert stream is not None
        with reading("checking the end of the tar"):
            stream.seek(self._tar.offset)
            if stream.read(BLOCK) != bytes(BLOCK):
                raise corrupt("checking the end of the tar", "missing end-of-archive block")
            if len(stream.read(_TRAILER_SLACK + 1)) > _TRAILER_SLACK:
                raise corrupt("checking the end of the tar", "unexpected data after the end")

    def close(self) -> None:
        self._tar.close()


def _tar_kind(info: tarfile.TarInfo) -> Kind:
    if info.isreg():
        return "file"
    if info.isdir():
        return "dir"
    if info.issym() or info.islnk():
        return "link"
    return "special"  # devices, FIFOs and unknown type flags


def is_archive_file(path: Path) -> bool:
    """Whether a file is one of the archive formats `detect_format` reads (by its bytes)."""
    try:
        with open(path, "rb") as handle:
            detect_format(handle)
    except (OSError, BookAgentError):
        return False
    return True
