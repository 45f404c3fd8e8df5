"""The built-in `local` library backend: the impact index (lexical/) and the faiss indexes
(vectors/), their files under data_dir/library/.

Options (`[library.local]` in the data dir's config.toml): `min_vectors`, the vectors a
model group needs before it is searched through an approximate index (default
APPROXIMATE_MIN_VECTORS). faiss itself is imported only when such an index is built or opened.
"""

from __future__ import annotations

from pathlib import Path

from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import APPROXIMATE_MIN_VECTORS, LibraryBackendSetting
from book_agent.ports.library import LibraryBackend

OPTIONS = ("min_vectors",)


def create_local(data_dir: Path, setting: LibraryBackendSetting) -> LibraryBackend:
    from book_agent_adapters.library.local.lexical.library_lexical_index import SqliteLibraryIndex
    from book_agent_adapters.library.local.vectors.faiss_vector_index import FaissLibraryVectors

    unknown = sorted(set(setting.options) - set(OPTIONS))
    min_vectors = setting.options.get("min_vectors", APPROXIMATE_MIN_VECTORS)
    if unknown or not isinstance(min_vectors, int) or isinstance(min_vectors, bool) or min_vectors < 1:
        raise BookAgentError(
            "config.invalid", f"[library.local] takes only min_vectors, a whole number >= 1 (got {dict(setting.options)})",
            details={"unknown": unknown}, remediation="fix the [library.local] table of the data dir's config.toml")
    folder = Path(data_dir) / "library"
    return LibraryBackend(setting.name, SqliteLibraryIndex(folder), FaissLibraryVectors(folder, min_vectors))
