"""A generated corpus of hostile archives, each with the error code it must be refused with.

Every builder writes a real zip or tar with the standard library; where the library
refuses to write something hostile (a lying size, an encryption flag, a NUL in a name),
the header bytes are patched by hand afterwards. Builders take `victim`, a folder an
escaping member would aim at, so a test can check that nothing landed there.
Used by tests/integration/package/test_archive_hostile.py and tools/bench/bench_archive.py.
"""

from __future__ import annotations

import gzip
import io
import stat
import struct
import tarfile
import warnings
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Entry = tuple[str | zipfile.ZipInfo, bytes]


@dataclass(frozen=True)
class Hostile:
    kind: str
    code: str
    build: Callable[[Path, Path], Path]  # (dest folder, victim folder) -> archive path
    limits: dict[str, Any] = field(default_factory=dict)  # ArchiveLimits overrides
    slow: bool = False


# -- writers ---------------------------------------------------------------------------


def write_zip(path: Path, entries: Sequence[Entry], method: int = zipfile.ZIP_DEFLATED) -> Path:
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w", compression=method) as archive:
        warnings.simplefilter("ignore", UserWarning)  # "Duplicate name" is the point
        for name, data in entries:
            archive.writestr(name, data)
    return path


def zip_info(name: str, mode: int | None = None, raw_name: str | None = None) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    if raw_name is not None:
        info.filename = raw_name  # bypasses ZipInfo's NUL truncation: written as given
    if mode is not None:
        info.create_system = 3  # Unix, so readers honour the mode bits
        info.external_attr = mode << 16
    return info


def tar_member(name: str, data: bytes = b"", type_: bytes = tarfile.REGTYPE, link: str = "") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = type_
    info.linkname = link
    info.size = len(data) if type_ == tarfile.REGTYPE else 0
    info.mode = 0o644
    return info, data


def write_tar(path: Path, members: Sequence[tuple[tarfile.TarInfo, bytes]], mode: str = "w") -> Path:
    with tarfile.open(path, mode, format=tarfile.PAX_FORMAT) as archive:  # type: ignore[call-overload]
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


def patch_zip(path: Path, change: Callable[[bytearray, int, bool], None]) -> Path:
    """Call change(buffer, header_offset, is_central) for every local and central header."""
    data = bytearray(path.read_bytes())
    for signature, central in ((b"PK\x03\x04", False), (b"PK\x01\x02", True)):
        start = data.find(signature)
        while start >= 0:
            change(data, start, central)
            start = data.find(signature, start + 4)
    path.write_bytes(bytes(data))
    return path


def _set_sizes(size: int) -> Callable[[bytearray, int, bool], None]:
    def change(data: bytearray, at: int, central: bool) -> None:
        struct.pack_into("<I", data, at + (24 if central else 22), size)

    return change


def _set_flag(bit: int) -> Callable[[bytearray, int, bool], None]:
    def change(data: bytearray, at: int, central: bool) -> None:
        offset = at + (8 if central else 6)
        (flags,) = struct.unpack_from("<H", data, offset)
        struct.pack_into("<H", data, offset, flags | bit)

    return change


def good_files(prefix: str = "pkg/") -> list[Entry]:
    return [(prefix + "book.md", b"# Book\n"), (prefix + "SKILL.md", b"skill\n")]


# -- the corpus ------------------------------------------------------------------------


def _zip(name: str, *entries: Entry, method: int = zipfile.ZIP_DEFLATED) -> Callable[[Path, Path], Path]:
    return lambda dest, victim: write_zip(dest / name, [*good_files(), *entries], method)


def _tar(name: str, mode: str, make: Callable[[Path], list[tuple[tarfile.TarInfo, bytes]]]) -> Callable[[Path, Path], Path]:
    def build(dest: Path, victim: Path) -> Path:
        good = [tar_member(n, d) for n, d in good_files() if isinstance(n, str)]
        return write_tar(dest / name, [*good, *make(victim)], mode)

    return build


def _zip_slip(dest: Path, victim: Path) -> Path:
    return write_zip(dest / "slip.zip", [*good_files(), ("pkg/../../../zip-slip.txt", b"pwned")])


def _absolute_zip(dest: Path, victim: Path) -> Path:
    return write_zip(dest / "abs.zip", [*good_files(), (zip_info("x", raw_name=str(victim / "abs.txt")), b"pwned")])


def _size_lie(smaller: bool) -> Callable[[Path, Path], Path]:
    def build(dest: Path, victim: Path) -> Path:
        path = write_zip(dest / f"lie-{smaller}.zip", [("pkg/book.md", b"A" * 5000)])
        return patch_zip(path, _set_sizes(100 if smaller else 9000))

    return build


def _encrypted(dest: Path, victim: Path) -> Path:
    return patch_zip(write_zip(dest / "enc.zip", [("pkg/secret.md", b"secret" * 100)]), _set_flag(0x1))


def _bomb_zip(dest: Path, victim: Path) -> Path:
    return write_zip(dest / "bomb.zip", [*good_files(), ("pkg/zeros.bin", bytes(20 << 20))])


def _bomb_tgz(dest: Path, victim: Path) -> Path:
    return write_tar(dest / "bomb.tgz", [tar_member("pkg/zeros.bin", bytes(20 << 20))], "w:gz")


def _truncated(kind: str) -> Callable[[Path, Path], Path]:
    def build(dest: Path, victim: Path) -> Path:
        payload = bytes(range(256)) * 4000  # 1 MB that compresses only a little
        if kind == "zip":
            path = write_zip(dest / "cut.zip", [("pkg/book.md", payload)], zipfile.ZIP_STORED)
            cut = len(path.read_bytes()) // 2
        elif kind == "tgz":
            path = write_tar(dest / "cut.tgz", [tar_member("pkg/book.md", payload)], "w:gz")
            cut = len(path.read_bytes()) - 20
        else:  # plain tar cut right after a complete member: tarfile alone would accept it
            path = write_tar(dest / "cut.tar", [tar_member("pkg/a.md", b"a" * 512), tar_member("pkg/b.md", b"b")])
            cut = 1024
        path.write_bytes(path.read_bytes()[:cut])
        return path

    return build


def _name_smuggle(dest: Path, victim: Path) -> Path:
    """The central directory says pkg/a.md; the local header says pkg/b.md."""
    path = write_zip(dest / "smuggle.zip", [("pkg/a.md", b"a")])
    data = path.read_bytes()
    at = data.find(b"pkg/a.md")  # the first copy is in the local header
    path.write_bytes(data[:at] + b"pkg/b.md" + data[at + 8 :])
    return path


def _plain(name: str, data: bytes) -> Callable[[Path, Path], Path]:
    def build(dest: Path, victim: Path) -> Path:
        (dest / name).write_bytes(data)
        return dest / name

    return build


def _many_members(dest: Path, victim: Path) -> Path:
    path = dest / "many.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for index in range(100_001):
            archive.writestr(f"pkg/{index:06d}", b"")
    return path


def _gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


LINK = tarfile.SYMTYPE
CORPUS: list[Hostile] = [
    Hostile("zip slip (../)", "archive.path_traversal", _zip_slip),
    Hostile("tar slip (../)", "archive.path_traversal", _tar("slip.tar", "w", lambda v: [tar_member("../../tar-slip.txt", b"x")])),
    Hostile("fullwidth dots (NFKC ..)", "archive.path_traversal", _zip("fw.zip", ("pkg/\uff0e\uff0e/x.md", b"x"))),
    Hostile("absolute path (zip)", "archive.absolute_path", _absolute_zip),
    Hostile("absolute path (tar)", "archive.absolute_path", _tar("abs.tar", "w", lambda v: [tar_member(str(v / "abs-tar.txt"), b"x")])),
    Hostile("drive letter", "archive.absolute_path", _zip("drive.zip", ("C:/Windows/evil.txt", b"x"))),
    Hostile("backslash traversal", "archive.bad_name", _zip("bs.zip", ("pkg\\..\\..\\evil.txt", b"x"))),
    Hostile("NUL in name", "archive.bad_name", _zip("nul.zip", (zip_info("x", raw_name="pkg/evil.md\x00.pdf"), b"x"))),
    Hostile("control character", "archive.bad_name", _zip("ctl.zip", ("pkg/bell\x07.md", b"x"))),
    Hostile("symlink out (tar)", "archive.link_member", _tar("sym.tar", "w", lambda v: [tar_member("pkg/link", type_=LINK, link=str(v))])),
    Hostile("symlink out (zip)", "archive.link_member", _zip("sym.zip", (zip_info("pkg/link", stat.S_IFLNK | 0o777), b"/etc"))),
    Hostile("symlink chain", "archive.link_member", _tar("chain.tar", "w", lambda v: [tar_member("pkg/a", type_=LINK, link="."), tar_member("pkg/a/b", type_=LINK, link=".."), tar_member("pkg/a/b/c", type_=LINK, link="../..")])),
    Hostile("hard link", "archive.link_member", _tar("hard.tar", "w", lambda v: [tar_member("pkg/hard", type_=tarfile.LNKTYPE, link="/etc/passwd")])),
    Hostile("device (tar)", "archive.special_member", _tar("dev.tar", "w", lambda v: [tar_member("pkg/null", type_=tarfile.CHRTYPE)])),
    Hostile("device (zip)", "archive.special_member", _zip("dev.zip", (zip_info("pkg/null", stat.S_IFCHR | 0o666), b""))),
    Hostile("FIFO", "archive.special_member", _tar("fifo.tar", "w", lambda v: [tar_member("pkg/fifo", type_=tarfile.FIFOTYPE)])),
    Hostile("zip bomb by ratio", "archive.ratio_exceeded", _bomb_zip),
    Hostile("gzip bomb by ratio (tgz)", "archive.ratio_exceeded", _bomb_tgz),
    Hostile("size header lies (smaller)", "archive.size_mismatch", _size_lie(True)),
    Hostile("size header lies (larger)", "archive.size_mismatch", _size_lie(False)),
    Hostile("100,001 tiny members", "archive.too_many_members", _many_members, slow=True),
    Hostile("too many members (tar, streaming)", "archive.too_many_members", _tar("many.tar", "w", lambda v: [tar_member(f"pkg/{i}", b"x") for i in range(20)]), {"max_members": 10}),
    Hostile("total too large", "archive.too_large", _zip("big.zip", ("pkg/a.bin", b"a" * 3000), ("pkg/b.bin", b"b" * 3000)), {"max_total_bytes": 4000}),
    Hostile("total too large (tar, streaming)", "archive.too_large", _tar("big.tar", "w", lambda v: [tar_member("pkg/a.bin", b"a" * 3000), tar_member("pkg/b.bin", b"b" * 3000)]), {"max_total_bytes": 4000}),
    Hostile("member too large", "archive.member_too_large", _zip("member.zip", ("pkg/a.bin", b"a" * 3000)), {"max_member_bytes": 1000}),
    Hostile("duplicate name", "archive.duplicate_name", _zip("dup.zip", ("pkg/book.md", b"again"))),
    Hostile("case-only collision", "archive.duplicate_name", _zip("case.zip", ("pkg/BOOK.md", b"x"))),
    Hostile("NFC/NFD collision", "archive.duplicate_name", _zip("nfd.zip", ("pkg/caf\u00e9.md", b"x"), ("pkg/cafe\u0301.md", b"y"))),
    Hostile("file/folder clash", "archive.duplicate_name", _zip("clash.zip", ("pkg/book.md/inner.md", b"x"))),
    Hostile("encrypted member (flag 0x1)", "archive.encrypted_member", _encrypted),
    Hostile("bzip2 member in zip", "archive.unsupported_compression", _zip("bz.zip", ("pkg/x.md", b"x" * 100), method=zipfile.ZIP_BZIP2)),
    Hostile("path too long", "archive.path_too_long", _zip("long.zip", ("pkg/" + "n" * 200 + "/" + "m" * 200 + "/" + "o" * 200, b"x"))),
    Hostile("component too long", "archive.path_too_long", _zip("comp.zip", ("pkg/" + "n" * 300, b"x"))),
    Hostile("too deep", "archive.too_deep", _zip("deep.zip", ("/".join(["d"] * 40) + "/x", b"x"))),
    Hostile("truncated zip", "archive.corrupt", _truncated("zip")),
    Hostile("truncated tgz", "archive.corrupt", _truncated("tgz")),
    Hostile("tar cut at a header", "archive.corrupt", _truncated("tar")),
    Hostile("zip names disagree (local vs central)", "archive.corrupt", _name_smuggle),
    Hostile("non-archive file", "archive.unsupported_format", _plain("notes.zip", b"just some text, not an archive\n" * 40)),
    Hostile("gzip of a non-tar", "archive.unsupported_format", _plain("single.tgz", _gz(b"plain text " * 100))),
    Hostile("empty zip", "archive.empty", lambda d, v: write_zip(d / "empty.zip", [])),
    Hostile("empty tar", "archive.empty", lambda d, v: write_tar(d / "empty.tar", [])),
    Hostile("folders only", "archive.empty", lambda d, v: write_zip(d / "dirs.zip", [("pkg/", b""), ("pkg/sub/", b"")])),
]
