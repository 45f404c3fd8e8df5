"""The dense index of the Milvus vector channel: its type and parameters, from `[library.milvus]`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# FLAT by default: it gives exactly the local backend's vector hits. Measured on milvus-lite 2.5.1
# at 100k 384-d vectors (real MiniLM mixes, real eval queries): FLAT recall@10 1.000 (p50 68 ms
# under load), AUTOINDEX 0.816, IVF_FLAT nlist 1024 0.57 at any nprobe. On a real cluster HNSW
# (m 16, ef 128+) or IVF with a high nprobe trade recall for speed: choose it with index_type.
EXACT_STORAGE = {"FLAT", "IVF_FLAT", "HNSW", "DISKANN", "AUTOINDEX", "GPU_CAGRA", "GPU_IVF_FLAT"}


@dataclass(frozen=True)
class DenseIndex:
    """The dense index's type and parameters (build and search), from `[library.milvus]`."""

    index_type: str = "FLAT"  # exact: ranks as the local backend (above)
    nlist: int = 1024  # IVF lists (per segment: Milvus indexes each sealed segment)
    nprobe: int = 64  # lists searched
    m: int = 16  # HNSW links per node
    ef_construction: int = 200
    ef: int = 128  # HNSW search breadth (at least the depth asked for)

    @property
    def exact_scores(self) -> bool:
        return self.index_type in EXACT_STORAGE

    def build_params(self) -> dict[str, Any]:
        if self.index_type.startswith("IVF"):
            return {"nlist": self.nlist}
        if self.index_type.startswith("HNSW"):
            return {"M": self.m, "efConstruction": self.ef_construction}
        return {}

    def search_params(self, depth: int) -> dict[str, Any]:
        if self.index_type.startswith("IVF"):
            return {"nprobe": self.nprobe}
        if self.index_type.startswith("HNSW"):
            return {"ef": max(self.ef, depth)}
        return {}
