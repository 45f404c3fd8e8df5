"""The search's passage-reading step (book_agent/services/search/passage_reading.py, book_agent/domain/search/proximity.py) through
the real search service on real packages, and its reader (FtsPassageTerms) against FTS5's own
reading of the texts."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from book_agent import BookAgent
from book_agent_adapters.text.fts_terms import FtsTerms
from book_agent_adapters.text.passage_terms import FtsPassageTerms
from tests.support.library_support import make_book, unit
from tests.support.package_builder import RecordSpec

FILLER = "the council met in the hall and spoke of grain and roads and rain for a long time"
# The answer holds the query's words together; its sibling holds them more often, far apart.
SCATTERED = (f"Acoustic instruments were tuned. {FILLER}. Acoustic halls. {FILLER}. A wave of applause. "
             f"{FILLER}. The wave rose. {FILLER}. Propagation of rumours. {FILLER}.")
TOGETHER = f"Acoustic wave propagation in reacting gases is slowed by the reactions. {FILLER}."
QUERY = "acoustic wave propagation"


def book(tmp_path: Path, book_id: str, answer_heading: str) -> Path:
    records = [RecordSpec("scattered", SCATTERED, ["Chapter 1"], 0),
               RecordSpec("together", TOGETHER, [answer_heading], 0)]
    records += [RecordSpec(f"other{i}", f"{FILLER} number {i} of the river valley.", ["Chapter 3"], 1) for i in range(6)]
    return make_book(tmp_path, book_id, records)


def ranked(agent: BookAgent, book_id: str) -> tuple[list[str], dict]:
    result = agent.search(book_id, QUERY, top_k=5, query_vector=[float(x) for x in unit(SCATTERED)])
    return [h["record_id"] for h in result["hits"]], result["fusion"]["passage_reading"]


def test_of_two_passages_of_one_section_the_one_holding_the_words_together_comes_first(tmp_path: Path):
    with BookAgent(tmp_path / "data") as agent:
        agent.init(book(tmp_path, "one-section", "Chapter 1"))
        agent.init(book(tmp_path, "two-sections", "Chapter 2"))
        same, reading = ranked(agent, "one-section")
        apart, _ = ranked(agent, "two-sections")
    # both channels put the scattered passage first; read together, its sibling wins
    assert apart[:2] == ["scattered", "together"], apart  # two sections: the channels' order
    assert same[:2] == ["together", "scattered"], same
    assert reading["applied"] and reading["passages_read"] >= 2
    assert {"window", "weight", "top_n"} <= set(reading)


def test_a_library_reads_the_passages_as_the_one_book_does(tmp_path: Path):
    with BookAgent(tmp_path / "data") as agent:
        agent.init(book(tmp_path, "one-section", "Chapter 1"))
        one, _ = ranked(agent, "one-section")
        library = agent.search("@all", QUERY, top_k=5, query_vector=[float(x) for x in unit(SCATTERED)])
    assert [h["record_id"] for h in library["hits"]] == one
    assert library["fusion"]["passage_reading"]["applied"]


def test_the_eval_rankings_are_the_searchs(tmp_path: Path):
    """`make eval` scores channel_rankings' hybrid list: it must be what a search shows."""
    with BookAgent(tmp_path / "data") as agent:
        agent.init(book(tmp_path, "one-section", "Chapter 1"))
        searcher = agent.books.open("one-section").searcher()
        vector = [float(x) for x in unit(SCATTERED)]
        rankings = searcher.channel_rankings(QUERY, depth=50, query_vector=vector)
        shown, _ = ranked(agent, "one-section")
    assert rankings["hybrid"][:len(shown)] == shown


def test_the_reader_reads_as_fts5_reads(tmp_path: Path):
    texts = ["The dogs were running; a dog runs.", "高血壓的危險因素", "Ünïcode naïve café", ""]
    reader, fts = FtsPassageTerms(), FtsTerms()
    terms, positions = reader.positions("running dog 血压", texts)
    reader.close()
    expected_terms, _ = fts.query_terms("running dog 血压")
    assert terms == list(dict.fromkeys(expected_terms)) == ["血压", "run", "dog"]
    flat, sizes = fts.batch_ids(texts)
    start = 0
    for text, size, found in zip(texts, sizes.tolist(), positions, strict=True):
        tokens = [fts.terms[i] for i in flat[start:start + size].tolist()]
        start += size
        assert {t: list(at) for t, at in found.items()} == {
            t: [p for p, x in enumerate(tokens) if x == t] for t in tokens}, text
    assert list(positions[0]["dog"]) == [1, 5] and list(positions[0]["run"]) == [3, 6]
    assert list(positions[1]["血压"]) == [1]  # traditional folded to simplified, as the index holds it
    fts.close()


def test_the_readers_cache_never_answers_for_another_text_and_survives_its_bounds():
    texts = [f"alpha beta gamma {i} " * (i + 1) for i in range(6)]
    first = FtsPassageTerms()
    reference = first.positions("alpha gamma", texts)
    first.close()
    small = FtsPassageTerms(max_readings=2, max_terms=5)  # evicts and starts again on every call
    for _ in range(3):
        assert small.positions("alpha gamma", texts) == reference
        assert small.positions("alpha gamma", list(reversed(texts)))[1] == list(reversed(reference[1]))
    small.close()
    assert small.positions("alpha gamma", texts) == reference  # usable after close
    assert small.positions("", texts) == ([], [{} for _ in texts])
    small.close()


def test_a_real_books_sections_are_read(tmp_path: Path):
    """The example book (a real EPUB's package): its chapters hold many passages each."""
    from tests.support import REPO_ROOT

    with BookAgent(tmp_path / "data") as agent:
        book_id = agent.init(REPO_ROOT / "examples" / "art-of-war-package")["book_id"]
        vector = [float(x) for x in unit("know the enemy", 384)]
        first = agent.search(book_id, "know the enemy and know yourself", top_k=5, query_vector=vector)
        again = agent.search(book_id, "know the enemy and know yourself", top_k=5, query_vector=vector)
    reading = first["fusion"]["passage_reading"]
    assert reading["applied"] and reading["passages_read"] > 1, reading
    assert [h["evidence_id"] for h in first["hits"]] == [h["evidence_id"] for h in again["hits"]]


def test_a_chinese_section_is_read_by_its_bigrams(tmp_path: Path):
    """The same in Chinese: the query's characters in sequence are its bigrams standing together."""
    filler = "議會在大廳裏談了很久的糧食和道路和雨水"
    scattered = "".join(f"{word}。{filler}。" for word in ("高血", "血壓", "因素", "有關", "哪些") * 3)
    together = f"高血壓與哪些因素有關，醫生說明了。{filler}。{filler}。{filler}。"
    records = [RecordSpec("scattered", scattered, ["第一章"], 0), RecordSpec("together", together, ["第一章"], 0)]
    records += [RecordSpec(f"other{i}", f"{filler}第{i}號", ["第三章"], 1) for i in range(6)]
    with BookAgent(tmp_path / "data") as agent:
        agent.init(make_book(tmp_path, "zh-book", records))
        result = agent.search("zh-book", "高血压与哪些因素有关", top_k=5, query_vector=[float(x) for x in unit(scattered)])
    assert [h["record_id"] for h in result["hits"]][:2] == ["together", "scattered"]
    assert result["fusion"]["passage_reading"]["applied"]
    assert result["hits"][0]["scores"]["fused"] < result["hits"][1]["scores"]["fused"]  # moved up by reading


def test_a_warmed_books_words_are_read_without_stemming_and_read_alike(tmp_path: Path, monkeypatch):
    """Issue 29: the reader learns a book's words and their terms from its impact file when the
    file loads (a warm-up), so a search's first readings stem nothing, and read as before."""
    from tests.support import REPO_ROOT

    texts = ["They were running, hastening; the enemies ran!", "Know the enemy and know yourself."]
    fresh = FtsPassageTerms()
    reference = fresh.positions("running enemy knowing", texts)
    fresh.close()
    stemmed: list[list[str]] = []
    real_stem = FtsTerms._stem

    def counted(self: FtsTerms, words: list[str]) -> list[list[str]]:
        stemmed.append(list(words))
        return real_stem(self, words)

    with BookAgent(tmp_path / "data") as agent:
        book_id = agent.init(REPO_ROOT / "examples" / "art-of-war-package")["book_id"]
        for _ in range(2):  # the impact file is built by the first warm process, loaded by the next use
            agent.warm_up(book_id, encoder=False, segmenter=False)
            agent.close()
        agent.warm_up(book_id, encoder=False, segmenter=False)
        reader = agent.books.open(book_id).passage_terms
        assert reader is not None
        monkeypatch.setattr(FtsTerms, "_stem", counted)
        result = agent.search(book_id, "know the enemy and know yourself", top_k=5,
                              query_vector=[float(x) for x in unit("know the enemy", 384)])
        assert result["fusion"]["passage_reading"]["passages_read"] > 1
        assert stemmed == []  # every word of the book's passages was known
        assert reader.positions("running enemy knowing", texts) == reference  # learnt terms read alike


def test_learnt_terms_never_change_a_reading():
    texts = ["The dogs were running; a dog runs.", "Ünïcode naïve café", "高血壓的危險因素"]
    plain = FtsPassageTerms()
    reference = plain.positions("running dog café", texts)
    taught = FtsPassageTerms()
    taught.learn({"dogs": "dog", "running": "run", "naïve": "naiv", "café": "cafe", "runs": "run"})
    assert taught.positions("running dog café", texts) == reference
    bounded = FtsPassageTerms(max_terms=3)
    bounded.learn({"dogs": "dog", "running": "run", "runs": "run", "were": "were"})  # past the bound: not learnt
    assert bounded.positions("running dog café", texts) == reference
    for reader in (plain, taught, bounded):
        reader.close()


def test_a_vast_books_words_are_not_learnt(monkeypatch):
    from book_agent_adapters.text import passage_terms

    monkeypatch.setattr(passage_terms, "MAX_LEARNT", 2)
    reader = FtsPassageTerms()
    reader.learn({"dogs": "dog", "running": "run", "runs": "run"})
    assert reader._terms.terms == []  # nothing learnt: the vocabulary is untouched
    reader.learn({"dogs": "dog"})
    assert reader._terms.terms == ["dog"]
    reader.close()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("abcdefgxyz0129_'-.éüßİ") + ["ﬁ", "高", "血", "²", "\u0301", "ᦰ"]),
                        min_size=1, max_size=12), max_size=40))
def test_stemming_plain_words_in_one_row_is_stemming_each_alone(words: list[str]):
    """ᦰ (New Tai Lue): a letter to Python that FTS5's unicode61 splits a word on; such a word
    must keep a row of its own."""
    from book_agent_adapters.book.lexical.book_impact import tokenizer, tokens_of

    terms, reference = FtsTerms(), tokenizer()  # the reference: the impact file's tokenizer, a row per word
    try:
        words = list(dict.fromkeys(w.lower() for w in words))
        assert terms._stem(words) == tokens_of(reference, words)
    finally:
        terms.close()
        reference.close()


def test_a_warm_up_reads_a_small_books_passages_ahead(tmp_path: Path, monkeypatch):
    """Issue 29: a warmed small book's first searches read no passage afresh; a book above the
    bound is read as its searches come."""
    from book_agent.services import open_book

    read: list[int] = []
    real_text_ids = FtsTerms.text_ids

    def counted(self: FtsTerms, texts):
        texts = list(texts)
        read.append(len(texts))
        return real_text_ids(self, texts)

    vector = [float(x) for x in unit(SCATTERED)]
    for bound, expected_ahead in ((100, 8), (5, 0)):  # the book has 8 records
        monkeypatch.setattr(open_book, "READ_AHEAD_RECORDS", bound)
        data = tmp_path / f"data-{bound}"
        with BookAgent(data) as agent:
            agent.init(book(tmp_path / f"books-{bound}", "b", "Chapter 1"))
            monkeypatch.setattr(FtsTerms, "text_ids", counted)
            read.clear()
            agent.warm_up("b", encoder=False, segmenter=False)
            assert sum(read) >= expected_ahead
            read.clear()
            result = agent.search("b", QUERY, top_k=5, query_vector=vector)
            assert result["fusion"]["passage_reading"]["passages_read"] > 1
            assert (sum(read) == 0) == (expected_ahead > 0)  # read ahead: nothing left to read
            monkeypatch.setattr(FtsTerms, "text_ids", real_text_ids)


def test_a_library_members_words_are_taught_without_loading_its_impact_postings(tmp_path: Path):
    """A library member's warm-up (OpenBook.warm_up_as_member) teaches the passage reader the
    book's words from its impact file's words alone: the file's postings stay unread (the library
    searches its own index), and a book of more words than the reader learns teaches nothing."""
    from book_agent_adapters.book.lexical import book_impact_words
    from tests.support import REPO_ROOT

    with BookAgent(tmp_path / "data") as agent:
        book_id = agent.init(REPO_ROOT / "examples" / "art-of-war-package")["book_id"]
        agent.warm_up(book_id, encoder=False, segmenter=False)  # a warm process builds the impact file
        agent.close()
        book = agent.books.open(book_id)
        told: list[dict[str, str]] = []
        lexical, _ = book.lexical_index()
        lexical._impact.on_words = told.append
        assert lexical.teach_words() is True
        assert lexical._impact.state == "unread" and len(told) == 1 and told[0].get("enemy") == "enemi"
        assert book_impact_words.impact_words(
            tmp_path / "nowhere.npz", [0, 0, 0], 0.4, 100) is None  # no file: nothing, no error
        told.clear()
        path = Path(lexical.path).with_name("lexical.impact.npz")
        assert book_impact_words.impact_words(path, lexical._identity, 0.4, max_words=10) is None  # too many
        assert book_impact_words.impact_words(path, [1, 2, 3], 0.4, max_words=10**6) is None  # another sidecar
