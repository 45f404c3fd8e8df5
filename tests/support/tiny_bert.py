"""Writes tiny random BERT / XLM-RoBERTa sentence-transformers model folders for tests.

Real files throughout: config.json, a WordPiece tokenizer.json made with `tokenizers`,
model.safetensors with random float32 weights, modules.json, 1_Pooling/config.json and
sentence_bert_config.json.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

WORDS = ["the", "all", "warfare", "is", "based", "on", "deception", "hence", "when", "able", "to", "attack", "we", "must", "seem", "unable", "general", "battle", "fought", "moral", "law", "people", "book", "art", "war", "a", "query", "with", "numbers", "and", "symbols"]
BERT_SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
XLMR_SPECIAL = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")


def vocab_for(arch: str) -> dict[str, int]:
    tokens = list(BERT_SPECIAL if arch == "bert" else XLMR_SPECIAL)
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + list("0123456789.,!?#@")
    tokens += letters + ["##" + c for c in letters] + sorted(set(WORDS) - set(letters))
    return {t: i for i, t in enumerate(tokens)}


def write_tokenizer(path: Path, arch: str, fixed_padding: int | None = None) -> None:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    vocab = vocab_for(arch)
    cls, sep, unk, pad = (
        ("[CLS]", "[SEP]", "[UNK]", "[PAD]") if arch == "bert" else ("<s>", "</s>", "<unk>", "<pad>")
    )
    tok = Tokenizer(models.WordPiece(vocab, unk_token=unk, max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}", pair=f"{cls} $A {sep} $B:1 {sep}:1",
        special_tokens=[(cls, vocab[cls]), (sep, vocab[sep])],
    )
    tok.decoder = decoders.WordPiece()
    if fixed_padding:
        # Like the real MiniLM tokenizer.json: padding/truncation the encoder must override.
        tok.enable_padding(length=fixed_padding, pad_id=vocab[pad], pad_token=pad)
        tok.enable_truncation(max_length=fixed_padding)
    tok.save(str(path))


def random_tensors(config: dict[str, Any], seed: int, prefix: str = "") -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    h, inter = config["hidden_size"], config["intermediate_size"]

    def w(*shape: int, scale: float = 0.3) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def ln() -> tuple[np.ndarray, np.ndarray]:
        return (1.0 + w(h, scale=0.1)), w(h, scale=0.1)

    t: dict[str, np.ndarray] = {
        "embeddings.word_embeddings.weight": w(config["vocab_size"], h),
        "embeddings.position_embeddings.weight": w(config["max_position_embeddings"], h),
        "embeddings.token_type_embeddings.weight": w(config["type_vocab_size"], h),
    }
    t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"] = ln()
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        for name in ("query", "key", "value"):
            t[p + f"attention.self.{name}.weight"] = w(h, h)
            t[p + f"attention.self.{name}.bias"] = w(h, scale=0.1)
        t[p + "attention.output.dense.weight"] = w(h, h)
        t[p + "attention.output.dense.bias"] = w(h, scale=0.1)
        t[p + "attention.output.LayerNorm.weight"], t[p + "attention.output.LayerNorm.bias"] = ln()
        t[p + "intermediate.dense.weight"] = w(inter, h)
        t[p + "intermediate.dense.bias"] = w(inter, scale=0.1)
        t[p + "output.dense.weight"] = w(h, inter)
        t[p + "output.dense.bias"] = w(h, scale=0.1)
        t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"] = ln()
    return {prefix + k: v for k, v in t.items()}


def write_tiny_model(
    dest: Path,
    *,
    arch: str = "bert",
    hidden: int = 16,
    layers: int = 2,
    heads: int = 4,
    intermediate: int = 24,
    max_positions: int = 40,
    max_seq_length: int = 24,
    pooling: Sequence[str] = ("mean",),
    normalize_module: bool = True,
    hidden_act: str = "gelu",
    seed: int = 0,
    tensor_prefix: str = "",
    fixed_padding: int | None = None,
    with_modules: bool = True,
) -> Path:
    """A complete sentence-transformers folder at `dest` (created); returns `dest`."""
    from safetensors.numpy import save_file

    dest.mkdir(parents=True, exist_ok=True)
    xlmr = arch != "bert"
    config = {
        "_name_or_path": f"tests/tiny-{arch}",
        "architectures": ["XLMRobertaModel" if xlmr else "BertModel"],
        "model_type": "xlm-roberta" if xlmr else "bert",
        "hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
        "intermediate_size": intermediate, "hidden_act": hidden_act,
        "max_position_embeddings": max_positions, "type_vocab_size": 1 if xlmr else 2,
        "vocab_size": len(vocab_for(arch)), "pad_token_id": 1 if xlmr else 0,
        "layer_norm_eps": 1e-5 if xlmr else 1e-12, "position_embedding_type": "absolute",
    }
    (dest / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    write_tokenizer(dest / "tokenizer.json", arch, fixed_padding)
    save_file(random_tensors(config, seed, tensor_prefix), str(dest / "model.safetensors"),
              metadata={"format": "pt"})
    if with_modules:
        modules = [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        ]
        if normalize_module:
            modules.append({"idx": 2, "name": "2", "path": "2_Normalize",
                            "type": "sentence_transformers.models.Normalize"})
        (dest / "modules.json").write_text(json.dumps(modules), encoding="utf-8")
        (dest / "1_Pooling").mkdir(exist_ok=True)
        keys = {"cls": "pooling_mode_cls_token", "mean": "pooling_mode_mean_tokens",
                "max": "pooling_mode_max_tokens", "mean_sqrt_len": "pooling_mode_mean_sqrt_len_tokens"}
        pool_cfg: dict[str, object] = {"word_embedding_dimension": hidden}
        pool_cfg.update({key: mode in pooling for mode, key in keys.items()})
        (dest / "1_Pooling" / "config.json").write_text(json.dumps(pool_cfg), encoding="utf-8")
        (dest / "sentence_bert_config.json").write_text(
            json.dumps({"max_seq_length": max_seq_length, "do_lower_case": False}), encoding="utf-8"
        )
    return dest
