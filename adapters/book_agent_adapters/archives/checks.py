"""The checks made on headers before a member's bytes are written.

Zip archives are checked in full before extraction starts (the central directory lists
every member); tar members are checked one header at a time, each before its data.
"""

from __future__ import annotations

from collections.abc import Iterator

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.archives.limits import ArchiveLimits
from book_agent_adapters.archives.members import Member
from book_agent_adapters.archives.names import NameRegistry, member_parts, refuse


def precheck(count: int | None, total: int | None, limits: ArchiveLimits, size: int) -> None:
    """Totals the headers declare (zip only), refused before anything is written."""
    if count is not None and count > limits.max_members:
        raise too_many(count, limits)
    if total is not None:
        if total > limits.max_total_bytes:
            raise BookAgentError(
                "archive.too_large",
                f"the archive declares {total} bytes, limit {limits.max_total_bytes}",
                details={"bytes": total, "limit": limits.max_total_bytes},
                remediation="raise ArchiveLimits(max_total_bytes=...) if the archive is trusted",
            )
        if total > limits.ratio_floor_bytes and total / max(size, 1) > limits.max_ratio:
            ratio = total / max(size, 1)
            raise BookAgentError(
                "archive.ratio_exceeded",
                f"the archive declares a compression ratio of {ratio:.0f}:1, limit "
                f"{limits.max_ratio:.0f}:1 (a zip bomb?)",
                details={"ratio": round(ratio, 1), "limit": limits.max_ratio},
                remediation="raise ArchiveLimits(max_ratio=...) only if the archive is trusted",
            )


def checked_members(
    members: Iterator[Member], limits: ArchiveLimits
) -> Iterator[tuple[Member, tuple[str, ...]]]:
    registry = NameRegistry()
    for count, member in enumerate(members, start=1):
        if count > limits.max_members:
            raise too_many(count, limits)
        name = member.name
        if member.kind == "link":
            raise refuse("archive.link_member", "symbolic and hard links are not allowed", name)
        if member.kind == "special":
            raise refuse(
                "archive.special_member",
                "devices, FIFOs and other special members are not allowed",
                name,
            )
        if member.encrypted:
            raise refuse("archive.encrypted_member", "encrypted members are not supported", name)
        if member.method is not None:
            raise refuse(
                "archive.unsupported_compression",
                "only stored and deflated zip members are supported",
                name,
                method=member.method,
            )
        if member.raw_name and member.raw_name != name:
            # zipfile cuts names at NUL, turns "\\" into "/" on Windows and prefers the
            # Unicode-path extra field: the header's own spelling must pass too.
            member_parts(member.raw_name, limits)
        parts = member_parts(name, limits)
        if not parts:
            if member.kind == "dir":
                continue  # the archive root, "./"
            raise refuse("archive.bad_name", "member has an empty name", name)
        registry.add(parts, member.kind == "dir", name)
        if member.size > limits.max_member_bytes:
            raise refuse(
                "archive.member_too_large",
                "member declares more bytes than allowed",
                name,
                bytes=member.size,
                limit=limits.max_member_bytes,
            )
        if (
            member.compressed is not None
            and member.size > limits.ratio_floor_bytes
            and member.size / max(member.compressed, 1) > limits.max_ratio
        ):
            raise refuse(
                "archive.ratio_exceeded",
                "member's compression ratio exceeds the limit (a zip bomb?)",
                name,
                ratio=round(member.size / max(member.compressed, 1), 1),
                limit=limits.max_ratio,
            )
        yield member, parts


def too_many(count: int, limits: ArchiveLimits) -> BookAgentError:
    return BookAgentError(
        "archive.too_many_members",
        f"the archive has more than {limits.max_members} members",
        details={"members_at_least": count, "limit": limits.max_members},
        remediation="raise ArchiveLimits(max_members=...) if the archive is trusted",
    )
