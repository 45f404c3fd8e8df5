"""The kernel's word that a registered package has not changed, so a search need not lstat it.

Every use of a book checks its package (fingerprint.py: about 13 lstat calls). On a virtual
machine a system call costs 3-4 us, so that check was a tenth of a warm one-book search
(issue 29). On Linux the kernel can say instead whether anything happened to those paths:
once a full check has found a package unchanged, inotify watches its files, the folders that
hold them and every folder above its root; a later check reads the watch's queue (one ioctl
when it is empty) and trusts the last full check only when no event touched that package.
The kernel queues an event before the call that made the change returns, so a change made
before a search began is always seen by it, as with lstat.

The watches are armed before the full check they stand on (a change in between is an event:
the next check is full again). Any event for a package (a write, an attribute or a time set, an
entry created, removed or renamed in a folder that holds its files, a folder above it moved or
removed), a full queue, a process forked from the one that armed it, or a filesystem the
kernel may not hear about (network and FUSE mounts: another machine's writes raise no event)
all mean the full check. So does a kernel without inotify, or one out of watches or instances.
What no check here sees (the lstat check did): a filesystem mounted over the package or a
folder above it, and writes through a shared memory map (both need privileges or the package's
own files open for writing).
"""

from __future__ import annotations

import atexit
import os
import re
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inotify_simple import INotify

# Filesystems whose every change passes through this kernel (so through inotify)
LOCAL_FILESYSTEMS = frozenset({
    "ext2", "ext3", "ext4", "xfs", "btrfs", "bcachefs", "f2fs", "jfs", "reiserfs", "zfs", "tmpfs", "ramfs",
    "overlay", "vfat", "exfat", "ntfs3", "hfsplus", "nilfs2",
})

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF = 0x400, 0x800
IN_Q_OVERFLOW, IN_IGNORED = 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW, IN_MASK_ADD = 0x01000000, 0x02000000, 0x20000000

FILE_EVENTS = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVE_SELF | IN_DELETE_SELF
HOLDER_EVENTS = IN_ATTRIB | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MOVE_SELF | IN_DELETE_SELF
ABOVE_EVENTS = IN_MOVE_SELF | IN_DELETE_SELF  # a folder above the root: replaced only by moving or removing it

_OCTAL = r"\\([0-7]{3})"  # mountinfo's escapes of space, tab, newline and backslash (re caches it compiled)


class PackageWatch:
    """Full checks, skipped while the kernel reports nothing for a package (see the module doc)."""

    def __init__(self, mounts: Callable[[], str] | None = None) -> None:
        self._lock = threading.Lock()
        self._mounts = mounts or _read_mountinfo
        self._inotify: INotify | None = None
        self._pid = 0  # the process whose inotify this is
        self._unusable = False  # no inotify here: every check is full
        self._owners: dict[int, set[str]] = {}  # watch descriptor -> the package roots it watches for
        self._events: dict[str, int] = {}  # root -> events seen for it so far
        self._clean: dict[str, Mapping[str, Any]] = {}  # root -> the fingerprint its last full check found

    def changes(self, root: Path, recorded: Mapping[str, Any], check: Callable[[], list[str]]) -> list[str]:
        """`check()`'s answer for this package: [] at once when a full check found it as
        `recorded` and no event touched it since; else the full check (watches armed first)."""
        key = str(root)
        with self._lock:
            self._drain()
            if self._clean.get(key) == recorded:
                return []
            self._clean.pop(key, None)
            before = self._events.get(key, 0)
            armed = self._arm(key, recorded)
        changed = check()
        if armed and not changed:
            with self._lock:
                self._drain()
                if self._events.get(key, 0) == before:  # nothing happened while checking
                    self._clean[key] = recorded
        return changed

    def close(self) -> None:
        with self._lock:
            self._reset()

    # --- the kernel's side ----------------------------------------------------------------

    def _watcher(self) -> INotify | None:
        if self._unusable:
            return None
        if self._inotify is not None and self._pid != os.getpid():
            self._reset()  # forked: the parent's queue is not this process's to read
        if self._inotify is None:
            try:
                from inotify_simple import INotify
            except ImportError:  # not Linux (the dependency is Linux's only)
                self._unusable = True
                return None
            try:
                self._inotify, self._pid = INotify(nonblocking=True), os.getpid()
            except OSError:  # no inotify, or out of instances
                self._unusable = True
                return None
            atexit.register(self.close)
        return self._inotify

    def _arm(self, root: str, recorded: Mapping[str, Any]) -> bool:
        """Watches on the package's files, the folders holding them and the folders above its
        root; False (every check full) when the kernel cannot promise to see its changes."""
        if not root.startswith("/") or root.startswith("//") or os.path.normpath(root) != root \
                or not _is_local(root, self._mounts):
            return False
        inotify = self._watcher()
        if inotify is None:
            return False
        files = [f"{root}/{rel}" for rel in recorded]
        holders = {root} | {path.rsplit("/", 1)[0] for path in files}
        holders |= {f"{root}/{'/'.join(rel.split('/')[:depth])}" for rel in recorded
                    for depth in range(1, rel.count("/"))}  # folders on the way to a nested file
        above = [root[:at] for at in range(1, len(root)) if root[at] == "/"]
        try:
            for path, mask in ([(p, FILE_EVENTS) for p in files] + [(p, HOLDER_EVENTS | IN_ONLYDIR) for p in holders]
                               + [(p, ABOVE_EVENTS | IN_ONLYDIR) for p in above]):
                wd = inotify.add_watch(path, mask | IN_DONT_FOLLOW | IN_MASK_ADD)
                self._owners.setdefault(wd, set()).add(root)
        except OSError:  # a path gone already (the check will say so), or out of watches
            return False
        return True

    def _drain(self) -> None:
        """Every queued event: the packages it touched are no longer known clean."""
        if self._inotify is None:
            return
        if self._pid != os.getpid():
            self._watcher()
            return
        try:
            events = self._inotify.read(timeout=0)
        except OSError:
            self._reset()
            return
        for event in events:
            if event.mask & IN_Q_OVERFLOW:  # events were lost: nothing is known clean
                for root in self._events.keys() | self._clean.keys():
                    self._events[root] = self._events.get(root, 0) + 1
                self._clean.clear()
                continue
            for root in self._owners.get(event.wd, ()):
                self._events[root] = self._events.get(root, 0) + 1
                self._clean.pop(root, None)
            if event.mask & IN_IGNORED:  # the watched inode is gone
                self._owners.pop(event.wd, None)

    def _reset(self) -> None:
        if self._inotify is not None:
            self._inotify.close()  # in a forked child, its own copy of the descriptor only
        self._inotify = None
        self._owners.clear()
        self._clean.clear()
        self._events = {root: count + 1 for root, count in self._events.items()}


def _is_local(root: str, mounts: Callable[[], str]) -> bool:
    """Whether the filesystem holding `root` is one whose changes this kernel always sees."""
    try:
        table = mounts()
    except OSError:
        return False
    best, kind = "", ""
    for line in table.splitlines():
        fields = line.split(" ")
        try:
            point = re.sub(_OCTAL, lambda m: chr(int(m.group(1), 8)), fields[4])  # \040 for a space
            kind_at = fields.index("-", 6) + 1
        except (IndexError, ValueError):
            continue
        inside = root == point or root.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):  # the last mount over a path is the one in force
            best, kind = point, fields[kind_at] if kind_at < len(fields) else ""
    return kind in LOCAL_FILESYSTEMS


def _read_mountinfo() -> str:
    return Path("/proc/self/mountinfo").read_text(encoding="utf-8", errors="replace")


PACKAGE_WATCH = PackageWatch()  # one per process: inotify instances are few (128 a user by default)
