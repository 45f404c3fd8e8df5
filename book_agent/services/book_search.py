"""Search and evaluate one registered book (the facade's `search` and `evaluate`).

The ranking itself is book_agent/services/search/hybrid.py (HybridSearch); here the book is opened, the
visual-fallback advice is added to a search, and an eval's question file is read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from book_agent.domain.book.book_refs import BookRef, parse_book_ref
from book_agent.domain.errors import BookAgentError
from book_agent.domain.search.reports import render_hits, render_search
from book_agent.domain.search.search_results import Hints, SearchResult
from book_agent.domain.search.visual_fallback import VisualFallbackPolicy
from book_agent.input_files import MAX_QUESTIONS_BYTES, InputTooLarge, read_limited
from book_agent.services.books import OpenBooks
from book_agent.services.page_profiles import hit_pages

if TYPE_CHECKING:  # a library and an eval import theirs when used: a one-book search needs neither
    from book_agent.domain.search.eval_results import EvalReport, Question
    from book_agent.services.library.search import Library
    from book_agent.services.search.hybrid import HybridSearch


class BookSearch:
    def __init__(self, books: OpenBooks, library: Callable[[], Library]) -> None:
        """`library`: the agent's library, built by the first search of several books."""
        self._books = books
        self._library = library

    def search(self, book_ref: str | BookRef, query: str, top_k: int = 6, strict: bool = False,
               query_vector: Sequence[float] | None = None, hints: Hints | None = None) -> SearchResult:
        """One book (`id`), or a library (`a,b` or `@all`): then every hit says its book."""
        ref = book_ref if isinstance(book_ref, BookRef) else parse_book_ref(book_ref)
        book = self._books.open(ref.text) if ref.single else None
        if book is not None:
            report = book.searcher().search(query, top_k=top_k, strict=strict, query_vector=query_vector, hints=hints)
        else:
            report = self._library().search(ref, query, top_k, strict, query_vector, hints)
        policy = VisualFallbackPolicy()
        hits = render_hits(report)  # what the advice is judged on: the hits as shown
        pages = hit_pages(self._books, ref, book)  # the book searched, not opened (checked) again
        per_hit = policy.evaluate_hits(query, hits, hints=hints, pages=pages)  # each on its own hit
        return render_search(report.advised(per_hit, policy.evaluate(query, hits, hints=hints, per_hit=per_hit)), hits)

    def warm_up(self, book_ref: str, encoder: bool = True, segmenter: bool = True,
                dry_search: bool = True) -> dict[str, bool]:
        """Load the search parts now: one book's, or a library's (its indexes, loaded by a dry
        library search, and what it uses of each book: book_agent/services/library/warm_up.py); the local
        encoder too unless `encoder` is False (it then loads with the first text query), a
        Chinese book's word segmenter unless `segmenter` is False (OpenBook.warm_up)."""
        ref = parse_book_ref(book_ref)
        if ref.single:
            return self._books.open(book_ref).warm_up(encoder, segmenter, dry_search)
        from book_agent.services.library.warm_up import warm_up_library
        from book_agent.services.open_book import DRY_QUERY

        library = self._library()
        skipped = {b["book_id"] for b in library.prepare(ref)["skipped"]}  # builds the library index
        books = [self._books.open(b) for b in library.book_ids(ref) if b not in skipped]
        warmed = [book.warm_up_as_member(encoder) for book in books]  # not each book's own indexes
        chinese = [q for q in (book.dry_query() for book in books) if q != DRY_QUERY]  # their segmenter loads
        query = chinese[0] if segmenter and chinese else DRY_QUERY
        lexical = warm_up_library(library, ref, query, dry_search)
        return {"lexical": lexical, "vectors": any(w["vectors"] for w in warmed),
                "encoder": any(w["encoder"] for w in warmed), "library": True}

    def evaluate(self, book_ref: str, questions_path: str | Path, k: int = 10) -> EvalReport:
        """recall@k, MRR@10 and nDCG@10 for lexical only, vector only, plain RRF and hybrid."""
        from book_agent.services.search.evaluation import evaluate, parse_questions

        questions = parse_questions(_question_lines(questions_path))
        ref = parse_book_ref(book_ref)
        if ref.single:
            searcher = self._books.open(book_ref).searcher()
        else:
            searcher, _ = self._library().searcher(ref)
            questions = [_qualified(q, searcher) for q in questions]
        result = evaluate(searcher, questions, k=k)
        result["book_id"] = book_ref
        return result


def _question_lines(questions_path: str | Path) -> list[str]:
    try:
        return read_limited(questions_path, MAX_QUESTIONS_BYTES).decode("utf-8").splitlines()
    except InputTooLarge as exc:
        raise BookAgentError("eval.questions_too_large", f"{questions_path} is larger than {exc.limit} bytes",
                             details={"limit_bytes": exc.limit},
                             remediation="split the questions into several files") from exc
    except (OSError, ValueError) as exc:
        raise BookAgentError("eval.bad_questions", f"cannot read {questions_path}: {exc}",
                             remediation="pass a UTF-8 JSON Lines file of questions") from exc


def _qualified(question: Question, searcher: HybridSearch) -> Question:
    """A library is ranked by evidence id: a relevant record id given alone means that
    record in whichever searched book holds it."""
    from book_agent.services.library.channels import LibraryRecords

    relevant = question["relevant"]
    grades = relevant if isinstance(relevant, dict) else {rid: 1 for rid in relevant}
    records = searcher.channels.records
    assert isinstance(records, LibraryRecords)
    qualified: dict[str, float] = {}
    for rid, grade in grades.items():
        if "#" in str(rid):
            qualified[str(rid)] = grade
            continue
        for book_id, book in records.books.items():
            if str(rid) in book.records.fetch([str(rid)]):
                qualified[f"{book_id}#{rid}"] = grade
    return cast("Question", {**question, "relevant": qualified or grades})
