"""Fusing ranked channels (lexical, vector) into one ranking, weighted by trust.

Weighted reciprocal rank fusion: fused(d) = sum over channels c of w_c / (K + rank_c(d)).
Plain RRF (all w_c = 1) can rank worse than its best channel when one channel is noise for
this query, e.g. an English-only embedding model asked in Chinese: its ranking is close to
random, and RRF lets it push the near-perfect lexical ranking around. So each channel gets a
trust weight for this query and this book (see `channel_weights`); a channel that cannot be
trusted still contributes, but too little to displace a trusted channel's top hits.

Invariants (property-tested): the result is a permutation of the union of the inputs;
ties are broken stably (best single-channel rank, then first appearance); with positive
weights, a hit found by both channels never ranks below a hit found by one channel with
the same rank there. Constants are documented in contracts/fusion.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Smaller than the customary 60: with per-query weights, a confident channel's first hit
# should be able to lead. (Measured on three eval sets: K in 10..20 all kept hybrid at or
# above the best channel; 60 did not. See contracts/fusion.md.)
RRF_K = 10
PLAIN_RRF_K = 60  # the customary constant (Cormack et al. 2009): the baseline we must beat
# The lexical weight is the share of the query's terms that its top hit contains, to this
# power: a BM25 winner that holds 2 of 7 terms is a near-miss, one that holds them all is
# strong evidence. Exponents 1.5 to 3 behaved alike; 2 is the middle.
LEXICAL_COVERAGE_POWER = 2.0
# The model does not cover the query's script: its ranking is close to noise. Weight 0
# means it orders nothing the lexical channel found; the hits only it found follow, in its
# order (recall when the lexical channel comes up short). Any positive weight, however
# small, lets noise swap adjacent lexical hits: 1/(K+r) - 1/(K+r+1) is only ~0.0003.
UNTRUSTED_VECTOR_WEIGHT = 0.0
CJK_QUERY_SHARE = 0.3  # a query with at least this share of CJK letters is a CJK query


@dataclass(frozen=True)
class ChannelRanking:
    name: str
    record_ids: list[str]  # best first, no duplicates
    weight: float = 1.0


@dataclass
class FusedHit:
    record_id: str
    fused: float
    ranks: dict[str, int] = field(default_factory=dict)  # channel -> 1-based rank


def fuse(rankings: list[ChannelRanking], k: int = RRF_K) -> list[FusedHit]:
    """Weighted RRF. A channel of weight 0 scores nothing: its own hits come last, in its order."""
    hits: dict[str, FusedHit] = {}
    first_seen: dict[str, int] = {}
    order = 0
    for ranking in rankings:
        for position, record_id in enumerate(ranking.record_ids, start=1):
            hit = hits.get(record_id)
            if hit is None:
                hit = hits[record_id] = FusedHit(record_id, 0.0)
                first_seen[record_id] = order
                order += 1
            if ranking.name in hit.ranks:
                continue  # a duplicate inside one channel counts once, at its best rank
            hit.ranks[ranking.name] = position
            hit.fused += ranking.weight / (k + position)
    return sorted(
        hits.values(),
        key=lambda h: (-h.fused, min(h.ranks.values()), first_seen[h.record_id]),
    )


def lexical_trust(top_hit_coverage: float | None) -> tuple[float, str]:
    """How far the lexical ranking can be trusted: from how much of the query its top hit holds."""
    if top_hit_coverage is None:
        return 1.0, "no lexical hit to judge"
    coverage = min(1.0, max(0.0, top_hit_coverage))
    return coverage**LEXICAL_COVERAGE_POWER, f"its top hit holds {coverage:.0%} of the query's terms"


CJK_LANGUAGES = ("zh", "ja", "ko", "yue", "lzh", "multilingual", "mul")


@dataclass(frozen=True)
class LanguageEvidence:
    """What is known of the embedding model's reach, strongest source first.

    `languages`: declared by the package (vectors.json) or known for the model; `source`
    says which ("declared" | "known-model" | "unknown"). `reads`: script ("latin" | "cjk")
    -> whether the model reads it, measured on this machine (services/vector_check.py: the
    local tokenizer's vocabulary, else a self-check on the book's own sentences); `basis`
    names the measurement.
    """

    languages: list[str] | None = None
    source: str = "unknown"
    reads: dict[str, bool] = field(default_factory=dict)
    basis: str | None = None


def query_script(query_cjk_share: float) -> str:
    return "cjk" if query_cjk_share >= CJK_QUERY_SHARE else "latin"


def _covers(languages: list[str], prefixes: tuple[str, ...]) -> bool:
    return any(lang.lower().split("-")[0] in prefixes for lang in languages)


def vector_trust(query_cjk_share: float, evidence: LanguageEvidence) -> tuple[float, str]:
    """How far the vector channel can be trusted for this query (1 or 0: a gate), with the reason.

    A package's declaration wins; then what was measured for the query's script; then what
    is known of the model. With no evidence either way the channel is trusted: a gate shut
    on a guess would throw away a good model's answers.
    """
    script = query_script(query_cjk_share)
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
