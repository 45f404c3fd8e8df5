"""The vector channel's gate: can the embedding model be trusted for a query's script?

A channel that cannot be trusted for a query (an English-only model asked in Chinese) gets
weight 0 in the fusion (book_agent/domain/search/fusion.py): it orders nothing the other channel found. The
evidence, strongest first, and the per-script rule: contracts/fusion.md ("The gate").
"""

from __future__ import annotations

from typing import NamedTuple

# The model does not cover the query's script: its ranking is close to noise. Weight 0
# means it orders nothing the lexical channel found; the hits only it found follow.
UNTRUSTED_VECTOR_WEIGHT = 0.0
CJK_QUERY_SHARE = 0.3  # a query with at least this share of CJK letters is a CJK query
CJK_LANGUAGES = ("zh", "ja", "ko", "yue", "lzh", "multilingual", "mul")


class LanguageEvidence(NamedTuple):
    """What is known of the embedding model's reach, strongest source first.

    `languages`: declared by the package (vectors.json) or known for the model; `source`
    says which ("declared" | "known-model" | "unknown"). `reads`: script ("latin" | "cjk")
    -> whether the model reads it, measured on this machine (services/vector_check.py: the
    local tokenizer's vocabulary, else a self-check on the book's own sentences); `basis`
    names the measurement.
    """

    languages: list[str] | None = None
    source: str = "unknown"
    reads: dict[str, bool] = {}  # read only: a shared default is never changed
    basis: str | None = None


def query_script(query_cjk_share: float) -> str:
    return "cjk" if query_cjk_share >= CJK_QUERY_SHARE else "latin"


def _covers(languages: list[str], prefixes: tuple[str, ...]) -> bool:
    return any(lang.lower().split("-")[0] in prefixes for lang in languages)


def vector_trust(query_cjk_share: float, evidence: LanguageEvidence) -> tuple[float, str]:
    """How far the vector channel can be trusted for a query of one script (1 or 0: a gate),
    with the reason; the script is the query's by its CJK share. See `query_vector_trust`
    for queries that mix scripts.

    A package's declaration wins; then what was measured for the query's script; then what
    is known of the model. With no evidence either way the channel is trusted: a gate shut
    on a guess would throw away a good model's answers.
    """
    return script_trust(query_script(query_cjk_share), evidence)


def script_trust(script: str, evidence: LanguageEvidence) -> tuple[float, str]:
    """The gate (1 or 0) for text of one script ("latin" | "cjk"), with the reason."""
    declared = evidence.source == "declared" and evidence.languages
    if not declared and script in evidence.reads:
        reads = evidence.reads[script]
        return (1.0 if reads else UNTRUSTED_VECTOR_WEIGHT), (
            f"measured by its {evidence.basis or 'self-check'}: the embedding model "
            + ("reads" if reads else "does not read") + f" {script} text")
    if evidence.languages is None:
        return 1.0, "no evidence about the embedding model's languages (trusted)"
    if script == "cjk" and not _covers(evidence.languages, CJK_LANGUAGES):
        return UNTRUSTED_VECTOR_WEIGHT, (
            f"the embedding model covers {', '.join(evidence.languages)}, not the query's CJK script"
        )
    return 1.0, "the embedding model covers the query's language"


def query_vector_trust(letters: dict[str, int], evidence: LanguageEvidence) -> tuple[float, str]:
    """The vector channel's gate for a query, per script run rather than per query.

    `letters`: the query's letters per script ({"latin": n, "cjk": m}; digits and marks do
    not count, see `lexical_text.script_letters`). Each script gets its own gate; the query's
    is the letter-weighted mean, so a one-script query keeps its 1 or 0 and a Chinese title
    whose Latin term carries the meaning (`基于ANSYS的...` for an English-only model) keeps
    the vector channel at the Latin run's share instead of losing it.
    """
    present = {script: n for script, n in letters.items() if n > 0}
    if not present:
        return script_trust("latin", evidence)
    if len(present) == 1:
        return script_trust(next(iter(present)), evidence)
    gates = {script: script_trust(script, evidence) for script in present}
    total = sum(present.values())
    gate = sum(gates[s][0] * n for s, n in present.items()) / total
    if len({g for g, _ in gates.values()}) == 1:
        return gate, next(iter(gates.values()))[1]
    reasons = "; ".join(f"{s} {n}/{total} letters: {gates[s][1]}" for s, n in sorted(present.items()))
    return gate, f"mixed scripts, gated per script run ({reasons})"
