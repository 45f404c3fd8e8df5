"""LocalQueryEncoder: the QueryEncoder port served in-process by numpy (no torch).

Locating the model is cheap and happens when first needed; loading (weights, tokenizer)
happens on the first encode and once per process per model folder. The loading modules
(st_config, verify, loaded_model, bert_numpy, weights, the tokenizer) are imported then
too: a search that brings its own query vector still asks where the model is (its route
names the folder), and must not pay for, or keep in memory, the code that runs it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from book_agent.domain.errors import QueryRuntimeError
from book_agent.ports import QueryEncoder

from . import errors
from .known_models import KnownModel
from .model_files import ModelLocation, find_model

if TYPE_CHECKING:
    from . import loaded_model
    from .st_config import ModelSpec
    from .weights import F32


class LocalQueryEncoder(QueryEncoder):
    """Encode queries with exactly the book's model, from files already on this machine."""

    def __init__(
        self,
        model_name: str,
        dimensions: int | None,
        *,
        normalize: bool = True,
        query_instruction: str = "",
        model_dir: Path | str | None = None,
        search_paths: Sequence[Path] | None = None,
        hf_home: Path | str | None = None,
        verify_cache_dir: Path | str | None = None,
        models_dir: Path | str | None = None,
    ) -> None:
        """`search_paths` replaces the default Hugging Face hub caches; `verify_cache_dir`
        keeps sha256 results across processes (the caller's cache folder); `models_dir`: where
        `book-agent model install` put models (the data dir's cache/models)."""
        self.model_name = model_name
        self.dimensions = dimensions
        self.normalize = normalize
        self.query_instruction = query_instruction
        self._model_dir = Path(model_dir) if model_dir is not None else None
        self._search_paths = list(search_paths) if search_paths is not None else None
        self._hf_home = hf_home
        self._models_dir = Path(models_dir) if models_dir is not None else None
        self._verify_cache = Path(verify_cache_dir) if verify_cache_dir is not None else None
        self._location: ModelLocation | None = None
        self._model: loaded_model.LoadedModel | None = None
        self._checks: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    # -- the port ---------------------------------------------------------------------
    @property
    def route(self) -> str:
        try:
            return f"local:numpy:{self.locate().path}"
        except QueryRuntimeError:
            return f"local:numpy:unresolved:{self.model_name}"

    def encode(self, text: str) -> F32:
        """One query -> float32 (dims,). The query instruction is prefixed."""
        if not isinstance(text, str):
            raise errors.error(errors.ENCODE_FAILED, "A query must be a string.",
                               got=type(text).__name__)
        return cast("F32", self._embed([self.query_instruction + text])[0])

    def encode_batch(self, texts: Sequence[str], *, with_instruction: bool = False) -> F32:
        """Texts -> float32 (n, dims). For building example packages (documents), so the
        query instruction is only prefixed when asked."""
        prefix = self.query_instruction if with_instruction else ""
        items = [prefix + t for t in texts]
        if not items:
            return np.zeros((0, self.load().spec.dimensions), dtype=np.float32)
        return self._embed(items)

    # -- loading ----------------------------------------------------------------------
    def locate(self) -> ModelLocation:
        if self._location is None:
            self._location = find_model(
                self.model_name, self._model_dir, self._hf_home, hub_caches=self._search_paths,
                models_dir=self._models_dir
            )
        return self._location

    def load(self) -> loaded_model.LoadedModel:
        """Check identity, dimensions and hashes, then load (once per process per folder)."""
        from . import loaded_model
        from .st_config import load_spec

        with self._lock:
            if self._model is None:
                location = self.locate()
                spec = load_spec(location.path)
                self._check_identity(location, spec)
                self._checks = self._verify(location, spec)
                self._model = loaded_model.load(location.path, spec, self._verify_cache)
            return self._model

    def warm_up(self, pack_in_background: bool = True) -> threading.Thread | None:
        """Load and run one tiny encode unless a query has (maps the pages, sizes BLAS's buffers),
        so a server's first real query costs what later ones do; then pack the weights for repeated use.
        Packing is plain numpy copying, safe on any thread (the swap is atomic), so by
        default it runs on a daemon thread and a query arriving meanwhile is not held up."""
        model = self.load()
        if not model.calls:  # a query has not done it already (an MCP server packs after its first)
            self.encode("warm up")
        if not pack_in_background:
            model.pack()
            return None
        thread = threading.Thread(target=model.pack, name="book-agent-pack", daemon=True)
        thread.start()
        return thread

    def _check_identity(self, location: ModelLocation, spec: ModelSpec) -> None:
        if self.dimensions is not None and spec.dimensions != self.dimensions:
            raise errors.error(
                errors.DIMENSION_MISMATCH,
                f"The model at {location.path} gives {spec.dimensions}-d vectors; the book "
                f"needs {self.dimensions}.",
                "Point query.model_dir at the exact model the book was built with.",
                model=self.model_name, model_dir=location.path,
                model_dimensions=spec.dimensions, expected_dimensions=self.dimensions,
            )
        known: KnownModel | None = location.known
        if known is None:
            return
        problems = {
            key: (have, want)
            for key, have, want in (
                ("dimensions", spec.dimensions, known.dimensions),
                ("model_type", spec.model_type, known.model_type),
                ("num_hidden_layers", spec.num_layers, known.num_hidden_layers),
                ("vocab_size", spec.vocab_size, known.vocab_size),
            )
            if want is not None and have != want
        }
        if problems:
            code = errors.DIMENSION_MISMATCH if "dimensions" in problems else errors.MODEL_MISMATCH
            raise errors.error(
                code, f"The model at {location.path} is not {known.repo_id}.",
                "Point query.model_dir at the exact model the book was built with.",
                model=known.repo_id, model_dir=location.path,
                mismatches={k: {"found": h, "expected": w} for k, (h, w) in problems.items()},
            )

    def _verify(self, location: ModelLocation, spec: ModelSpec) -> list[dict[str, Any]]:
        from . import loaded_model, verify

        known = location.known
        if known is None or not known.sha256:
            return [{"file": str(loaded_model.weights_file(location.path, spec)),
                     "verified": False, "reason": "no published sha256 known for this model"}]
        return [
            verify.verify_file(location.path / name, digest, self._verify_cache)
            for name, digest in known.sha256.items()
        ]

    def _embed(self, texts: list[str]) -> F32:
        from .bert_numpy import l2_normalize

        model = self.load()
        try:
            vectors = model.embed(texts)
        except QueryRuntimeError:
            raise
        except (ValueError, IndexError, MemoryError, FloatingPointError) as exc:
            raise errors.error(errors.ENCODE_FAILED, f"Local encoding failed: {exc}",
                               model_dir=model.folder) from exc
        if self.normalize or model.spec.normalize:
            vectors = l2_normalize(vectors)
        if not np.isfinite(vectors).all():
            raise errors.error(errors.ENCODE_FAILED, "The model produced non-finite values.",
                               errors.REMEDIATION_CORRUPT, model_dir=model.folder)
        return vectors

    def vocabulary(self) -> list[str]:
        """The model tokenizer's word pieces (loads the tokenizer only, not the weights):
        evidence of which scripts the model was trained to read."""
        from .st_config import load_spec
        from .text_tokenizer import TextTokenizer

        location = self.locate()
        tokenizer = TextTokenizer(location.path, load_spec(location.path), self._verify_cache)
        return list(tokenizer.vocabulary())

    # -- reporting --------------------------------------------------------------------
    def model_info(self, load: bool = True) -> dict[str, Any]:
        """Files used, hash verification, dims, pooling, truncation. Loads unless load=False."""
        from .st_config import load_spec

        location = self.locate()
        model = self.load() if load else self._model
        spec = model.spec if model else load_spec(location.path)
        info: dict[str, Any] = {
            "backend": "numpy",
            "route": f"local:numpy:{location.path}",
            "model_name": location.model_name,
            "model_dir": str(location.path),
            "source": location.source,
            "model_type": spec.model_type,
            "name_or_path": spec.name_or_path,
            "dimensions": spec.dimensions,
            "pooling": list(spec.pooling),
            "pooling_source": spec.pooling_source,
            "normalize": bool(self.normalize or spec.normalize),
            "max_seq_length": spec.max_seq_length,
            "query_instruction": self.query_instruction,
            "loaded": model is not None,
            "verification": list(self._checks) if model else [],
        }
        if model is not None:
            from . import loaded_model

            info["files"] = [str(loaded_model.weights_file(location.path, spec)),
                             str(model.tokenizer.path)]
            info["load_seconds"] = round(model.load_seconds, 4)
            info["sha256_verified"] = all(c.get("verified") for c in self._checks)
        return info
