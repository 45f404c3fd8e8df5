"""Skill folders: install with a hash manifest, verify, and uninstall exactly what we put there.

A skill is installed as `<skills_dir>/<name>/` holding SKILL.md, the package's `skill/...`
files (relative paths kept, so SKILL.md's links still work) and `.book-agent-skill.json`:

    {"schema": "book-agent.host-skill", "version": 1, "name": ..., "book_id": ...,
     "owners": [server names that installed it],
     "files": [{"path", "source", "original_sha256", "installed_sha256", "bytes"}]}

Hosts want the front-matter `name` to equal the folder name, so a book's SKILL.md is
installed with `name:` rewritten; the manifest keeps both hashes. The shipped `book-agent`
skill is shared by every book: each book is an owner, and it goes with its last owner.
A file we did not write (or that was edited since) is never overwritten or deleted.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any

from book_agent.domain.book.package import PackageInfo
from book_agent.domain.errors import BookAgentError
from book_agent_adapters.hosts.files.ops import Op

MANIFEST_NAME = ".book-agent-skill.json"
SCHEMA = "book-agent.host-skill"


@dataclass(frozen=True)
class SkillFile:
    rel: str
    data: bytes
    original_sha256: str
    source: str


@dataclass(frozen=True)
class SkillBundle:
    name: str
    files: tuple[SkillFile, ...]
    book_id: str | None = None


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def set_front_matter_name(text: str, name: str, description: str) -> str:
    """SKILL.md with front-matter `name: <name>` (front matter added when absent)."""
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.split(newline)
    if lines and lines[0].strip() == "---" and "---" in (ln.strip() for ln in lines[1:]):
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
        for i in range(1, end):
            if re.match(r"^name\s*:", lines[i]):
                lines[i] = f"name: {name}"
                break
        else:
            lines.insert(1, f"name: {name}")
        return newline.join(lines)
    head = ["---", f"name: {name}", "description: " + json.dumps(description, ensure_ascii=False), "---", ""]
    return newline.join(head) + text


def _safe_rel(rel: str) -> str:
    path = PurePosixPath(rel)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise BookAgentError(
            "host.skill_path_unsafe",
            f"skill file path {rel!r} leaves the skill folder",
            details={"path": rel},
            remediation="rebuild the package: extra_files paths must be relative and stay inside it",
        )
    return path.as_posix()


def _package_file(root: Path, rel: str, expected: str | None) -> bytes:
    path = root / rel
    if path.is_symlink() or not path.is_file():
        raise BookAgentError(
            "host.skill_source_missing",
            f"the package's skill file {rel} is missing or not a regular file",
            details={"path": str(path)},
            remediation="re-import the package (`book-agent init PACKAGE`)",
        )
    data = path.read_bytes()
    if expected and sha256(data) != expected:
        raise BookAgentError(
            "host.package_changed",
            f"the package's {rel} no longer matches its manifest hash",
            details={"path": str(path), "expected_sha256": expected, "actual_sha256": sha256(data)},
            remediation="re-import the package; a package is never edited in place",
        )
    return data


def book_bundle(package: PackageInfo, name: str) -> SkillBundle:
    """The book's SKILL.md (name rewritten to `name`) and its skill/... extra files."""
    manifest = package.archive_manifest or {}
    files = manifest.get("files") or {}
    skill_entry = files.get("skill") or {}
    skill_rel = skill_entry.get("path") or "SKILL.md"
    if package.skill_path is not None:
        skill_rel = package.skill_path.relative_to(package.root).as_posix()
    original = _package_file(package.root, _safe_rel(skill_rel), skill_entry.get("sha256"))
    title = package.title or package.book_id or name
    text = original.decode("utf-8-sig")
    installed = set_front_matter_name(text, name, f"Search and cite {title} with book-agent.")
    out = [SkillFile("SKILL.md", installed.encode("utf-8"), sha256(original), skill_rel)]
    for extra in manifest.get("extra_files") or []:
        rel = _safe_rel(str(extra.get("path", "")))
        if rel.startswith("skill/"):
            data = _package_file(package.root, rel, extra.get("sha256"))
            out.append(SkillFile(rel, data, sha256(data), rel))
    return SkillBundle(name, tuple(out), package.book_id)


def shipped_bundle(name: str = "book-agent") -> SkillBundle:
    """The book-agent skill shipped in book_agent/resources/skill."""
    root = resources.files("book_agent").joinpath("resources", "skill")
    out: list[SkillFile] = []

    def walk(node: Any, prefix: str) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            rel = prefix + child.name
            if child.is_dir():
                walk(child, rel + "/")
            elif child.name != "__init__.py" and not child.name.endswith(".pyc"):
                data = child.read_bytes()
                out.append(SkillFile(rel, data, sha256(data), "book_agent/resources/skill/" + rel))

    walk(root, "")
    return SkillBundle(name, tuple(out), None)


def read_manifest(folder: Path) -> dict[str, Any] | None:
    path = folder / MANIFEST_NAME
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise BookAgentError(
            "host.skill_manifest_malformed",
            f"{path} cannot be read",
            details={"path": str(path)},
            remediation=f"remove {folder} by hand and install again",
        ) from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise BookAgentError(
            "host.skill_manifest_malformed",
            f"{path} is not a book-agent skill manifest",
            details={"path": str(path)},
            remediation=f"remove {folder} by hand and install again",
        )
    return data


def _conflict(folder: Path, files: list[str], why: str) -> BookAgentError:
    return BookAgentError(
        "host.skill_conflict",
        f"{folder} holds files book-agent did not write ({why}); nothing was changed",
        details={"folder": str(folder), "files": files},
        remediation=f"move {folder} aside (or undo the edits), then install again",
    )


def install_ops(bundle: SkillBundle, skills_dir: Path, owner: str) -> list[Op]:
    folder = skills_dir / bundle.name
    old = read_manifest(folder)
    if old is None and folder.exists() and any(folder.iterdir()):
        raise _conflict(folder, sorted(p.name for p in folder.iterdir()), "no book-agent manifest")
    old_files = {f["path"]: f for f in (old or {}).get("files", [])}
    ops: list[Op] = []
    clashes: list[str] = []
    for item in bundle.files:
        target = folder / item.rel
        if target.is_file():
            now = sha256(target.read_bytes())
            ours = old_files.get(item.rel, {}).get("installed_sha256")
            if now not in (sha256(item.data), ours):
                clashes.append(item.rel)
        ops.append(Op(target, item.data, "skill_file"))
    if clashes:
        raise _conflict(folder, clashes, "edited or foreign files")
    wanted = {item.rel for item in bundle.files}
    for rel, entry in sorted(old_files.items()):
        target = folder / rel
        if rel not in wanted and target.is_file() and sha256(target.read_bytes()) == entry["installed_sha256"]:
            ops.append(Op(target, None, "skill_file", prune_to=folder))
    owners = sorted({*(old or {}).get("owners", []), owner})
    ops.append(Op(folder / MANIFEST_NAME, _manifest(bundle, owners), "skill_manifest"))
    return ops


def _manifest(bundle: SkillBundle, owners: list[str]) -> bytes:
    data = {
        "schema": SCHEMA,
        "version": 1,
        "name": bundle.name,
        "book_id": bundle.book_id,
        "owners": owners,
        "files": [
            {"path": f.rel, "source": f.source, "original_sha256": f.original_sha256,
             "installed_sha256": sha256(f.data), "bytes": len(f.data)}
            for f in bundle.files
        ],
    }
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def uninstall_ops(name: str, skills_dir: Path, owner: str) -> list[Op]:
    """Ops removing our files (edited ones stay), or only `owner` while others remain."""
    folder = skills_dir / name
    old = read_manifest(folder)
    if old is None:
        return []
    owners = [o for o in old.get("owners", []) if o != owner]
    if owners:
        data = dict(old, owners=owners)
        return [Op(folder / MANIFEST_NAME, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode(), "skill_manifest")]
    ops: list[Op] = []
    for entry in old.get("files", []):
        target = folder / entry["path"]
        if target.is_file() and sha256(target.read_bytes()) == entry["installed_sha256"]:
            ops.append(Op(target, None, "skill_file", prune_to=folder))
    ops.append(Op(folder / MANIFEST_NAME, None, "skill_manifest", prune_to=folder))
    return ops


def verify_skill(name: str, skills_dir: Path, expected: SkillBundle | None = None) -> dict[str, Any]:
    folder = skills_dir / name
    manifest = read_manifest(folder)
    result: dict[str, Any] = {"name": name, "folder": str(folder), "installed": manifest is not None,
                              "missing": [], "modified": [], "outdated": []}
    files = {f["path"]: f for f in (manifest or {}).get("files", [])}
    for rel, entry in sorted(files.items()):
        target = folder / rel
        if not target.is_file():
            result["missing"].append(rel)
        elif sha256(target.read_bytes()) != entry["installed_sha256"]:
            result["modified"].append(rel)
    if manifest is not None and expected is not None:
        for item in expected.files:
            if files.get(item.rel, {}).get("installed_sha256") != sha256(item.data):
                result["outdated"].append(item.rel)
    result["ok"] = manifest is not None and not (result["missing"] or result["modified"] or result["outdated"])
    return result
