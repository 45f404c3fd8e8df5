#!/usr/bin/env python3
"""Rebuild the retrieval evaluation sets (BEIR layout) from their public sources.

Standard library only.  Usage:

    python3 convert.py --src SRC --out OUT [--sets name,name,...]
    python3 convert.py --verify OUT          # check already-built sets

SRC holds one checkout (or extracted snapshot) per source repository, each in a
folder named after the repository, with the repository's own paths below it:

    SRC/xquad/xquad.en.json, SRC/xquad/xquad.zh.json       (google-deepmind/xquad)
    SRC/DRCD/DRCD_dev.json, SRC/DRCD/DRCD_test.json         (DRCKnowledgeTeam/DRCD)
    SRC/FairytaleQAData/data-by-train-split/...             (uci-soe/FairytaleQAData)
    SRC/COVID-QA/data/question-answering/200423_covidQA.json (deepset-ai/COVID-QA)
    SRC/Stemming-Algorithm/cacm.all, query.text, qrels.text  (atcherepanov/Stemming-Algorithm)
    SRC/Chinese-medical-dialogue-data/样例_内科5000-6000.csv   (Toyhom/Chinese-medical-dialogue-data)
    SRC/information_retrieval/data/cf74.xml ... cf79.xml, cfquery.xml (heltondoria/information_retrieval)
    SRC/pubmedqa/data/ori_pqal.json, test_ground_truth.json  (pubmedqa/pubmedqa)
    SRC/belief-network-irs/med/med.tar.gz                    (lailaglez/belief-network-irs)
    SRC/IRT2-Tf-Idf/lisa.tar.gz                              (Kasrastar/IRT2-Tf-Idf)
    SRC/Information-Retrieval/npl/doc-text, query-text, rlv-ass (stefreschke/Information-Retrieval)

To get SRC, clone each repository into SRC/<name> and check out the commit listed
in COMMITS below (or extract that commit with `git archive`).

Each set is written to OUT/<name>/ as corpus.jsonl.gz ({"_id","title","text"}),
queries.jsonl.gz ({"_id","text"}), qrels/<split>.tsv (header
"query-id<TAB>corpus-id<TAB>score") and README.md.  Output is deterministic
(sorted where order is not given by the source, gzip mtime 0), so a rebuild
from the same sources gives byte-identical files.
"""
import argparse
import bisect
import csv
import glob
import gzip
import hashlib
import io
import json
import os
import random
import re
import sys
import tarfile
import xml.etree.ElementTree as ET

# Commit of each source repository that the published sets were built from.
COMMITS = {
    "google-deepmind/xquad": "7d30520c717524000f0d9d2f9c10a069acd9d285",
    "DRCKnowledgeTeam/DRCD": "b944790de5af02c5fbb7cd9cb1473d27d169eebf",
    "uci-soe/FairytaleQAData": "a24ddc17364666b7c13a425b9970c87368b03417",
    "deepset-ai/COVID-QA": "fb2eb5e249618457e5359806601086c635c8eb8f",
    "atcherepanov/Stemming-Algorithm": "a92ce141e3cba95b0213569a42cb1668201963f7",
    "Toyhom/Chinese-medical-dialogue-data": "26724a4357fcd142f0cab81188cacf1a2dd8a827",
    "heltondoria/information_retrieval": "65fb325ac7c0c69107e569060c328f989a4788b3",
    "pubmedqa/pubmedqa": "1cbae8e92f72f20c8d3747cbb3bf5bc53554d997",
    "lailaglez/belief-network-irs": "9094e4cde738bd93ed1747dc958b5acb0e0fa684",
    "Kasrastar/IRT2-Tf-Idf": "493b720d3704ae7d5b4dffe1e0e05434c886686e",
    # not the newest commit: a later one deleted 22 records from npl/doc-text
    "stefreschke/Information-Retrieval": "e42b633316d596f520a6ece6e6e19a3894795730",
}

# sha256 of every source file of the sets added later (cacm, cmdd-im, cfc, pubmedqa, medline, lisa, npl): a build from other
# bytes stops instead of writing a different set.
SOURCE_SHA256 = {
    "Stemming-Algorithm/cacm.all": "10b28e355d4bd65916698da9bbc91e78f116de204b9b42bce0ce4e8b39babe42",
    "Stemming-Algorithm/query.text": "07332cfcadad2570ce65146a701b4d93a91583c6f945fb32fad1a141b62dc0e4",
    "Stemming-Algorithm/qrels.text": "a027893039f4faf40b90a64a27322e85e1b0cc66f9634bb754a93ac4f81a75ca",
    "Chinese-medical-dialogue-data/样例_内科5000-6000.csv": "133e5f7e9a3255468375c258381d131b1dc0a4fff6d431cbe743884139b1eb25",
    "information_retrieval/data/cf74.xml": "69cdcac057a480c71a86e60ad793141a138c7dea3d0d093068a2ba718ce22234",
    "information_retrieval/data/cf75.xml": "872cacd4d5e8369b29b24b9151f1ff0942cb3b167713222d378c9907e3c02e89",
    "information_retrieval/data/cf76.xml": "7cfe855630f2e920339412fd32b25af40b5c26d61ef417999aab89b6ca2e612a",
    "information_retrieval/data/cf77.xml": "9f28b473405b7213fbae39bcc9944e167d0423329ad2426f04512310be541dbe",
    "information_retrieval/data/cf78.xml": "c26a683be4a0fc6bc90bac4e73312117c0ff822237ea8325b0da3d2707e7dfae",
    "information_retrieval/data/cf79.xml": "8d629bb9ea7799c6a9ea7cab28b9325b21a6d31d537382b71c0237745c71db4b",
    "information_retrieval/data/cfquery.xml": "c7d18aaad724b6670172bab3b5426abad6904dffe8c66ac60b1254a5030fbcf0",
    "pubmedqa/data/ori_pqal.json": "8b3276be8942ebbd77f3ddcda12c1749bf0e490045a736fd8438ee40cf37a41d",
    "pubmedqa/data/test_ground_truth.json": "939fe566f09017d13b1ca64d2ddfee0bc2374b366048152997669cccedc44d51",
    # the Glasgow distribution's archives, as they are
    "belief-network-irs/med/med.tar.gz": "07478afc5370ba3dfa66c8c1994ea56a2341cea8584af619a63eb51c31f26f1e",
    "IRT2-Tf-Idf/lisa.tar.gz": "40b04095fbaccad2d04d70e2c10df7aee22eed081995ef27aa8c27a1a1cd1292",
    "Information-Retrieval/npl/doc-text": "9a9a396da453eb0a6c659b1399ae6c551d11d04a68b6f0a4e21fc757e77c398f",
    "Information-Retrieval/npl/query-text": "0f5e9a179334183cc3b04fe24d9bdfc3f656b08330e6798d8df5dc621bf8e6d5",
    "Information-Retrieval/npl/rlv-ass": "1af78732abed49055218c1548c27cfa354c5d02a9b6c9cb854b9d0b74fcce24c",
}

# The seeded dev/test split of the sets whose source has no split of its own.
SPLIT_SEED = 28


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def squash_ws(s):
    return re.sub(r"\s+", " ", s).strip()


class EvalSet:
    def __init__(self, name):
        self.name = name
        self.docs = {}  # id -> (title, text), insertion order kept
        self.queries = {}  # id -> text
        self.qrels = {}  # split -> {(qid, did): score}

    def add_doc(self, did, title, text):
        if did in self.docs:
            raise ValueError(f"{self.name}: duplicate doc id {did}")
        self.docs[did] = (title, text)

    def add_query(self, qid, text):
        if qid in self.queries:
            raise ValueError(f"{self.name}: duplicate query id {qid}")
        self.queries[qid] = text

    def add_qrel(self, split, qid, did, score=1):
        rel = self.qrels.setdefault(split, {})
        rel[(qid, did)] = max(score, rel.get((qid, did), 0))


def gz_write_lines(path, lines):
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
            with io.TextIOWrapper(gz, encoding="utf-8", newline="\n") as fh:
                for line in lines:
                    fh.write(line + "\n")


def write_set(es, out_dir):
    d = os.path.join(out_dir, es.name)
    os.makedirs(os.path.join(d, "qrels"), exist_ok=True)
    gz_write_lines(
        os.path.join(d, "corpus.jsonl.gz"),
        (json.dumps({"_id": k, "title": t, "text": x}, ensure_ascii=False) for k, (t, x) in es.docs.items()),
    )
    gz_write_lines(
        os.path.join(d, "queries.jsonl.gz"),
        (json.dumps({"_id": k, "text": x}, ensure_ascii=False) for k, x in es.queries.items()),
    )
    for split, rel in es.qrels.items():
        with open(os.path.join(d, "qrels", f"{split}.tsv"), "w", encoding="utf-8", newline="\n") as fh:
            fh.write("query-id\tcorpus-id\tscore\n")
            for (q, did), s in rel.items():
                fh.write(f"{q}\t{did}\t{s}\n")


# ---------------------------------------------------------------- SQuAD-style


def squad_passage_set(name, files, title_fn):
    """corpus = paragraphs, queries = questions, qrel = the paragraph the question was asked on."""
    es = EvalSet(name)
    for split, path in files:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)["data"]
        for art in data:
            for pi, par in enumerate(art["paragraphs"]):
                did = par.get("id") or f"{art['title']}-{pi}"
                text = par["context"].strip()
                es.add_doc(did, title_fn(art["title"]), text)
                for qa in par["qas"]:
                    qid = str(qa["id"])
                    es.add_query(qid, squash_ws(qa["question"]))
                    es.add_qrel(split, qid, did, 1)
    return es


def build_xquad(src, lang):
    path = os.path.join(src, "xquad", f"xquad.{lang}.json")
    if lang == "en":
        title_fn = lambda t: t.replace("_", " ")
    else:
        # XQuAD keeps the English Wikipedia article names as titles; leave the
        # Chinese corpus without titles rather than mixing in English.
        title_fn = lambda t: ""
    es = squad_passage_set(f"xquad-{lang}", [("test", path)], title_fn)
    return es, [("google-deepmind/xquad", f"xquad.{lang}.json", path)]


def build_drcd(src):
    dev = os.path.join(src, "DRCD", "DRCD_dev.json")
    test = os.path.join(src, "DRCD", "DRCD_test.json")
    es = squad_passage_set("drcd", [("test", test), ("dev", dev)], lambda t: t.strip())
    return es, [("DRCKnowledgeTeam/DRCD", "DRCD_test.json", test), ("DRCKnowledgeTeam/DRCD", "DRCD_dev.json", dev)]


# ---------------------------------------------------------------- FairytaleQA


def _unwrap(text):
    """Gutenberg hard wraps -> one line per paragraph, paragraphs separated by a blank line."""
    paras = [squash_ws(p) for p in re.split(r"\n\s*\n", text.replace("\r\n", "\n"))]
    return "\n\n".join(p for p in paras if p)


def build_fairytaleqa(src):
    root = os.path.join(src, "FairytaleQAData", "data-by-train-split")
    es = EvalSet("fairytaleqa")
    es.stats = {}
    sources = []
    story_files = sorted(glob.glob(os.path.join(root, "section-stories", "all", "*-story.csv")))
    if not story_files:
        raise FileNotFoundError(f"no story files under {root}")
    sections = {}
    for path in story_files:
        story = os.path.basename(path)[: -len("-story.csv")]
        title = story.replace("-", " ").strip()
        title = title[:1].upper() + title[1:]
        sources.append(("uci-soe/FairytaleQAData", os.path.relpath(path, os.path.join(src, "FairytaleQAData")), path))
        with open(path, encoding="utf-8-sig", newline="") as fh:
            rows = list(csv.DictReader(fh))
        texts = {}
        for row in rows:
            # remarkable-rocket has two rows numbered 5: keep them as one section, in order
            texts.setdefault(int(row["section"]), []).append(_unwrap(row["text"]))
        for sec, parts in texts.items():
            if len(parts) > 1:
                es.stats["sections_merged_same_number"] = es.stats.get("sections_merged_same_number", 0) + 1
            es.add_doc(f"{story}__s{sec}", title, "\n\n".join(p for p in parts if p))
            sections.setdefault(story, set()).add(sec)
    for split, out_split in (("test", "test"), ("val", "dev"), ("train", "train")):
        for path in sorted(glob.glob(os.path.join(root, "questions", split, "*-questions.csv"))):
            story = os.path.basename(path)[: -len("-questions.csv")]
            if story not in sections:
                raise ValueError(f"questions for unknown story {story}")
            sources.append(("uci-soe/FairytaleQAData", os.path.relpath(path, os.path.join(src, "FairytaleQAData")), path))
            with open(path, encoding="utf-8-sig", newline="") as fh:
                seen = {}
                for row in csv.DictReader(fh):
                    # 9 training files repeat a question_id for a different question: the
                    # repeat gets "-2" appended
                    n = int(row["question_id"])
                    seen[n] = seen.get(n, 0) + 1
                    qid = f"{story}__q{n}" + (f"-{seen[n]}" if seen[n] > 1 else "")
                    if seen[n] > 1:
                        es.stats["repeated_question_ids_suffixed"] = es.stats.get("repeated_question_ids_suffixed", 0) + 1
                    secs = [int(s) for s in re.findall(r"\d+", row["cor_section"])]
                    if not secs or any(s not in sections[story] for s in secs):
                        raise ValueError(f"{qid}: bad cor_section {row['cor_section']!r}")
                    es.add_query(qid, squash_ws(row["question"]))
                    for s in secs:
                        es.add_qrel(out_split, qid, f"{story}__s{s}", 1)
    return es, sources


# ---------------------------------------------------------------- COVID-QA

MIN_PASSAGE = 400  # merge lines (headings, author lists) until a passage has this many chars
MAX_LINE = 2000  # split longer lines at sentence ends into pieces of about TARGET chars
TARGET = 1200


def _spans(context):
    """Character spans of passages in context: non-empty lines, long ones split, short ones merged."""
    pieces = []
    for m in re.finditer(r"[^\n]+", context):
        s, e = m.start(), m.end()
        if not context[s:e].strip():
            continue
        if e - s <= MAX_LINE:
            pieces.append((s, e))
            continue
        cuts = [s + b.end() for b in re.finditer(r"[.?!][)\]\"']?\s+(?=[A-Z0-9(\[])", context[s:e])]
        start = s
        for c in cuts:
            if c - start >= TARGET and e - c >= TARGET // 3:
                pieces.append((start, c))
                start = c
        pieces.append((start, e))
    spans = []
    cur = None
    for s, e in pieces:
        if cur is None:
            cur = [s, e]
        elif cur[1] - cur[0] < MIN_PASSAGE and (e - cur[0]) <= MAX_LINE + MIN_PASSAGE:
            cur[1] = e
        else:
            spans.append(tuple(cur))
            cur = [s, e]
    if cur is not None:
        if spans and cur[1] - cur[0] < MIN_PASSAGE // 2:
            spans[-1] = (spans[-1][0], cur[1])
        else:
            spans.append(tuple(cur))
    return spans


def _locate(context, start, answer):
    if context[start : start + len(answer)] == answer:
        return start
    hits = [m.start() for m in re.finditer(re.escape(answer), context)]
    if not hits:
        return None
    return min(hits, key=lambda h: abs(h - start))


def build_covidqa(src):
    path = os.path.join(src, "COVID-QA", "data", "question-answering", "200423_covidQA.json")
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)["data"]
    es = EvalSet("covid-qa")
    stats = {"articles_skipped_no_cc_by": 0, "answers_reanchored": 0, "answers_dropped": 0}
    for art in data:
        for par in art["paragraphs"]:
            ctx = par["context"]
            lic = re.search(r"^License:\s*(\S+)", ctx, re.M)
            if not lic or lic.group(1).lower() != "cc-by":
                stats["articles_skipped_no_cc_by"] += 1
                continue
            doc = str(par["document_id"])
            title = squash_ws(next(l for l in ctx.split("\n") if l.strip()))
            spans = _spans(ctx)
            starts = [s for s, _ in spans]
            for k, (s, e) in enumerate(spans):
                text = "\n".join(squash_ws(l) for l in ctx[s:e].split("\n") if l.strip())
                es.add_doc(f"{doc}-{k}", title, text)
            for qa in par["qas"]:
                qid = str(qa["id"])
                rel = set()
                for ans in qa["answers"]:
                    # 234 answer texts carry a stray leading/trailing space; their offsets
                    # point at the trimmed text.  Anything else is re-anchored to the nearest
                    # occurrence of the trimmed answer text.
                    a = ans["text"].strip()
                    start = ans["answer_start"]
                    lead = len(ans["text"]) - len(ans["text"].lstrip())
                    if ctx[start : start + len(a)] == a:
                        pos = start
                    elif ctx[start + lead : start + lead + len(a)] == a:
                        pos = start + lead
                    else:
                        pos = _locate(ctx, start, a)
                        if pos is None:
                            stats["answers_dropped"] += 1
                            continue
                        stats["answers_reanchored"] += 1
                    end = pos + len(a)
                    i = bisect.bisect_right(starts, pos) - 1
                    while i < len(spans) and spans[i][0] < end:
                        if spans[i][1] > pos:
                            rel.add(i)
                        i += 1
                if not rel:
                    continue
                es.add_query(qid, squash_ws(qa["question"]))
                for i in sorted(rel):
                    es.add_qrel("test", qid, f"{doc}-{i}", 1)
    es.stats = stats
    return es, [("deepset-ai/COVID-QA", "data/question-answering/200423_covidQA.json", path)]


# ---------------------------------------------------------------- sets added later


def checked_source(src, rel):
    """Path of a pinned source file; stops when its bytes are not the pinned ones."""
    path = os.path.join(src, *rel.split("/"))
    digest = sha256_file(path)
    if digest != SOURCE_SHA256[rel]:
        raise ValueError(f"{rel}: sha256 {digest}, expected {SOURCE_SHA256[rel]}")
    return path


def seeded_split(es, judged, seed=SPLIT_SEED):
    """judged: {qid: [doc ids]}. Shuffle the sorted query ids with a fixed seed; the first half
    (rounded down) becomes qrels/dev.tsv, the rest qrels/test.tsv."""
    qids = sorted(judged, key=_num_key)
    random.Random(seed).shuffle(qids)
    half = len(qids) // 2
    for i, qid in enumerate(qids):
        for did in judged[qid]:
            es.add_qrel("dev" if i < half else "test", qid, did, 1)
    # qrels rows in query-id order within each split
    for split, rel in es.qrels.items():
        es.qrels[split] = dict(sorted(rel.items(), key=lambda kv: (_num_key(kv[0][0]), _num_key(kv[0][1]))))


def _num_key(s):
    """Natural order of ids such as `7`, `a12`, `q305`: prefix, then number."""
    m = re.fullmatch(r"(\D*)(\d+)", s)
    return (m.group(1), int(m.group(2))) if m else (s, -1)


def _smart_records(path=None, text=None):
    """Records of a SMART-format file (`.I n` then `.X` fields): [(n, {field letter: text})]."""
    if text is None:
        with open(path, encoding="ascii") as fh:
            text = fh.read()
    records = []
    for chunk in re.split(r"^\.I ", text, flags=re.M)[1:]:
        head, _, body = chunk.partition("\n")
        fields = dict(re.findall(r"^\.([A-Z])\n(.*?)(?=^\.[A-Z]\n|\Z)", body, flags=re.M | re.S))
        records.append((int(head.strip()), fields))
    return records


def build_cacm(src):
    paths = {f: checked_source(src, f"Stemming-Algorithm/{f}") for f in ("cacm.all", "query.text", "qrels.text")}
    es = EvalSet("cacm")
    stats = {"documents_without_abstract": 0, "queries_without_judgements_dropped": 0}
    for n, f in _smart_records(paths["cacm.all"]):
        title, abstract = squash_ws(f.get("T", "")), squash_ws(f.get("W", ""))
        if not abstract:
            stats["documents_without_abstract"] += 1
        # a record without an abstract is its title alone (as text, not repeated as title)
        es.add_doc(str(n), title if abstract else "", abstract or title)
    judged = {}
    with open(paths["qrels.text"], encoding="ascii") as fh:
        for line in fh:
            q, d = line.split()[:2]
            judged.setdefault(str(int(q)), [])
            if str(int(d)) not in judged[str(int(q))]:
                judged[str(int(q))].append(str(int(d)))
    for n, f in _smart_records(paths["query.text"]):
        text = squash_ws(f.get("W", ""))
        if n == 0 and not f:
            continue  # this copy of query.text ends with an empty `.I 0` record
        if str(n) not in judged or not text:
            stats["queries_without_judgements_dropped"] += 1
            continue
        es.add_query(str(n), text)
    if set(judged) - set(es.queries):
        raise ValueError(f"cacm: judged queries without text {sorted(set(judged) - set(es.queries))}")
    seeded_split(es, {q: sorted(ds, key=int) for q, ds in judged.items()})
    es.stats = stats
    return es, [("atcherepanov/Stemming-Algorithm", f, p) for f, p in paths.items()]


CMDD_FILE = "样例_内科5000-6000.csv"
CMDD_QUERIES = 400  # questions kept (seeded sample), half dev, half test
CMDD_DOCS = 2000  # answers kept: every answer of a kept question, then seeded distractors


def _cmdd_rows(path):
    """Rows of the sample CSV (GB18030) with whitespace-squashed fields; row number = 1-based data row."""
    with open(path, "rb") as fh:
        text = fh.read().decode("gb18030")
    rows = []
    for i, row in enumerate(csv.DictReader(io.StringIO(text, newline="")), 1):
        rows.append((i, {k: squash_ws(v) for k, v in row.items()}))
    return rows


def build_cmdd(src):
    path = checked_source(src, f"Chinese-medical-dialogue-data/{CMDD_FILE}")
    rows = _cmdd_rows(path)
    # one document per distinct answer text, one question per distinct question text
    answer_id, question_id, answers_of = {}, {}, {}
    for i, row in rows:
        if not row["answer"]:
            continue
        did = answer_id.setdefault(row["answer"], f"a{i}")
        # a question is the patient's `ask`; a near-empty one ("无") falls back to the title
        question = row["ask"] if len(row["ask"]) >= 8 else row["title"]
        qid = question_id.setdefault(question, f"q{i}")
        if did not in answers_of.setdefault(qid, []):
            answers_of[qid].append(did)
    text_of_q = {q: t for t, q in question_id.items()}
    text_of_d = {d: t for t, d in answer_id.items()}
    rng = random.Random(SPLIT_SEED)
    kept_q = sorted(rng.sample(sorted(answers_of, key=_num_key), CMDD_QUERIES), key=_num_key)
    kept_d = {d for q in kept_q for d in answers_of[q]}
    others = sorted(set(text_of_d) - kept_d, key=_num_key)
    kept_d |= set(rng.sample(others, CMDD_DOCS - len(kept_d)))
    es = EvalSet("cmdd-im")
    for did in sorted(kept_d, key=_num_key):
        es.add_doc(did, "", text_of_d[did])
    for qid in kept_q:
        es.add_query(qid, text_of_q[qid])
    seeded_split(es, {q: answers_of[q] for q in kept_q})
    es.stats = {
        "source_rows": len(rows),
        "distinct_answers": len(text_of_d),
        "distinct_questions": len(text_of_q),
        "questions_with_several_answers": sum(len(v) > 1 for v in answers_of.values()),
    }
    return es, [("Toyhom/Chinese-medical-dialogue-data", CMDD_FILE, path)]


CFC_FILES = [f"cf7{y}.xml" for y in range(4, 10)]


def build_cfc(src):
    paths = {f: checked_source(src, f"information_retrieval/data/{f}") for f in CFC_FILES + ["cfquery.xml"]}
    es = EvalSet("cfc")
    stats = {"documents_with_extract_not_abstract": 0, "documents_with_title_only": 0}
    for f in CFC_FILES:
        for rec in ET.parse(paths[f]).getroot().findall("RECORD"):
            title = squash_ws(rec.findtext("TITLE") or "")
            abstract = squash_ws(rec.findtext("ABSTRACT") or "")
            if not abstract and squash_ws(rec.findtext("EXTRACT") or ""):
                abstract = squash_ws(rec.findtext("EXTRACT"))
                stats["documents_with_extract_not_abstract"] += 1
            if not abstract:
                stats["documents_with_title_only"] += 1
            es.add_doc(str(int(rec.findtext("RECORDNUM"))), title if abstract else "", abstract or title)
    judged = {}
    for query in ET.parse(paths["cfquery.xml"]).getroot().findall("QUERY"):
        qid = str(int(query.findtext("QueryNumber")))
        es.add_query(qid, squash_ws(query.findtext("QueryText")))
        # every listed record was scored above 0 by at least one of the four judges
        judged[qid] = [str(int(item.text)) for item in query.find("Records").findall("Item")]
    seeded_split(es, judged)
    es.stats = stats
    return es, [("heltondoria/information_retrieval", f"data/{f}", p) for f, p in paths.items()]


def _tar_texts(path, names):
    """{member name: text} of the named members of a (gzipped) tar archive; ASCII, CRLF -> LF."""
    out = {}
    with tarfile.open(path) as tf:
        for name in names:
            out[name] = tf.extractfile(name).read().decode("ascii").replace("\r\n", "\n")
    return out


def _tar_sources(repo, rel, path, names):
    """README source rows: the archive, then each member used (its bytes as extracted, CRLF kept)."""
    rows = [(repo, rel, path)]
    with tarfile.open(path) as tf:
        for name in names:
            rows.append((repo, f"{rel} : {name}", tf.extractfile(name).read()))
    return rows


def _check_count(name, what, got, want):
    if got != want:
        raise ValueError(f"{name}: {got} {what}, expected {want}")


MED_TAR = "belief-network-irs/med/med.tar.gz"


def build_medline(src):
    """The Glasgow MEDLINE collection: 1,033 abstracts, 30 requests, MED.REL (the 2000 judgements)."""
    path = checked_source(src, MED_TAR)
    texts = _tar_texts(path, ("MED.ALL", "MED.QRY", "MED.REL"))
    es = EvalSet("medline")
    for n, f in _smart_records(text=texts["MED.ALL"]):
        # no title field: the record's first sentence is its title, kept in the text
        es.add_doc(str(n), "", squash_ws(f.get("W", "")))
    _check_count("medline", "documents", len(es.docs), 1033)
    judged = {}
    for line in texts["MED.REL"].splitlines():
        q, _, d, score = line.split()
        if int(score) > 0:
            judged.setdefault(str(int(q)), set()).add(str(int(d)))
    for n, f in _smart_records(text=texts["MED.QRY"]):
        es.add_query(str(n), squash_ws(f.get("W", "")))
    _check_count("medline", "queries", len(es.queries), 30)
    if set(judged) != set(es.queries):
        raise ValueError("medline: judged and given queries differ")
    if any(d not in es.docs for ds in judged.values() for d in ds):
        raise ValueError("medline: a judgement names an unknown document")
    seeded_split(es, {q: sorted(ds, key=int) for q, ds in judged.items()})
    es.stats = {"judgements": sum(len(ds) for ds in judged.values())}
    return es, _tar_sources("lailaglez/belief-network-irs", "med/med.tar.gz", path, texts)


LISA_TAR = "IRT2-Tf-Idf/lisa.tar.gz"
# the document files, in order (to be concatenated, as the distribution's README says)
LISA_FILES = [f"LISA{k}.{s}" for k in range(6) for s in ("001", "501")] + ["LISA5.627", "LISA5.850"]


def _lisa_rel(text):
    """The well-formed blocks of LISA.REL ("Query n", "k Relevant Refs:", k ids, -1): {n: [ids]}."""
    out = {}
    for block in re.split(r"\n\s*\n", text.strip()):
        m = re.fullmatch(r"Query\s+(\d+)\s*\n\s*(\d+) Relevant Refs:\s*\n([\d\s]+?)\s-1\s*", block)
        if m and len(m.group(3).split()) == int(m.group(2)):
            out[str(int(m.group(1)))] = m.group(3).split()
    return out


def build_lisa(src):
    """LISA (Sheffield): 6,004 LISA abstracts of 1982, 35 requests by MSc students, LISARJ.NUM."""
    path = checked_source(src, LISA_TAR)
    texts = _tar_texts(path, LISA_FILES + ["LISA.QUE", "LISARJ.NUM", "LISA.REL"])
    es = EvalSet("lisa")
    stats = {"headerless_fragments_skipped": 0, "repeated_records_skipped": 0}
    corpus = "".join(texts[f] for f in LISA_FILES)
    for rec in re.split(r"^\*{20,}\s*$", corpus, flags=re.M):
        if not rec.strip():
            continue
        m = re.match(r"\s*Document\s+(\d+)\s*\n", rec)
        if not m:
            # LISA1.501 holds a cut abstract tail between two copies of records 1998-2001
            stats["headerless_fragments_skipped"] += 1
            continue
        # the title runs to the first blank (or all-space) line, the abstract after it
        parts = re.split(r"\n[ \t]*\n", rec[m.end() :].strip("\n"), maxsplit=1)
        did, title, abstract = str(int(m.group(1))), squash_ws(parts[0]), squash_ws(parts[1] if len(parts) > 1 else "")
        if did in es.docs:
            if es.docs[did] != (title if abstract else "", abstract or title):
                raise ValueError(f"lisa: record {did} repeated with another text")
            stats["repeated_records_skipped"] += 1
            continue
        es.add_doc(did, title if abstract else "", abstract or title)
    # records 1993-1997 are lost in the distribution (LISA1.501 jumps from a cut 1992 to 1998)
    missing = sorted(set(range(1, 6005)) - {int(d) for d in es.docs})
    if missing != [1993, 1994, 1995, 1996, 1997] or len(es.docs) != 5999:
        raise ValueError(f"lisa: {len(es.docs)} documents, missing {missing[:10]}")
    stats["lost_records"] = "1993-1997"
    for m in re.finditer(r"^\s*(\d+)\s*\n(.*?)#", texts["LISA.QUE"], flags=re.M | re.S):
        es.add_query(str(int(m.group(1))), squash_ws(m.group(2)))
    _check_count("lisa", "queries", len(es.queries), 35)
    # LISARJ.NUM: per query its number, the count k, then k document numbers
    nums = [int(t) for t in texts["LISARJ.NUM"].split()]
    judged, i = {}, 0
    while i < len(nums):
        q, k = str(nums[i]), nums[i + 1]
        if q in judged or i + 2 + k > len(nums):
            raise ValueError(f"lisa: bad LISARJ.NUM entry for query {q}")
        judged[q] = [str(d) for d in nums[i + 2 : i + 2 + k]]
        i += 2 + k
    if set(judged) != set(es.queries):
        raise ValueError("lisa: judged and given queries differ")
    if any(d not in es.docs for ds in judged.values() for d in ds):
        raise ValueError("lisa: a judgement names an unknown document")
    # LISA.REL, the other form of the judgements, is cut inside query 21 and lacks 22 and 23;
    # every block of it that is whole must agree with LISARJ.NUM
    rel = _lisa_rel(texts["LISA.REL"])
    if any(judged[q] != ds for q, ds in rel.items()) or len(rel) != 32:
        raise ValueError("lisa: LISA.REL and LISARJ.NUM disagree")
    seeded_split(es, {q: sorted(set(ds), key=int) for q, ds in judged.items()})
    stats["judgements"] = sum(len(set(ds)) for ds in judged.values())
    es.stats = stats
    return es, _tar_sources("Kasrastar/IRT2-Tf-Idf", "lisa.tar.gz", path, LISA_FILES + ["LISA.QUE", "LISARJ.NUM", "LISA.REL"])


def _npl_records(text):
    """Records of an NPL file: a number on its own line, the body, then a line holding `/`."""
    out = []
    for chunk in re.split(r"^\s*/\s*$", text, flags=re.M):
        if not chunk.strip():
            continue
        m = re.fullmatch(r"\s*(\d+)\s*\n(.*)", chunk, flags=re.S)
        if not m:
            raise ValueError(f"npl: record without a number: {chunk[:60]!r}")
        out.append((str(int(m.group(1))), m.group(2)))
    return out


def build_npl(src):
    """The NPL collection (Vaswani and Cameron): 11,429 electronics/physics abstracts, 93 requests."""
    paths = {f: checked_source(src, f"Information-Retrieval/npl/{f}") for f in ("doc-text", "query-text", "rlv-ass")}
    text = {}
    for f, p in paths.items():
        with open(p, encoding="ascii") as fh:
            text[f] = fh.read()
    es = EvalSet("npl")
    for did, body in _npl_records(text["doc-text"]):
        es.add_doc(did, "", squash_ws(body))
    _check_count("npl", "documents", len(es.docs), 11429)
    for qid, body in _npl_records(text["query-text"]):
        es.add_query(qid, squash_ws(body))
    _check_count("npl", "queries", len(es.queries), 93)
    judged = {qid: body.split() for qid, body in _npl_records(text["rlv-ass"])}
    stats = {"queries_without_judgements_dropped": 0}
    for qid in [q for q in es.queries if not judged.get(q)]:
        del es.queries[qid]
        stats["queries_without_judgements_dropped"] += 1
    if set(judged) - set(es.queries):
        raise ValueError("npl: judged queries without text")
    if any(d not in es.docs for ds in judged.values() for d in ds):
        raise ValueError("npl: a judgement names an unknown document")
    seeded_split(es, {q: sorted({str(int(d)) for d in ds}, key=int) for q, ds in judged.items() if ds})
    stats["judgements"] = sum(len(set(ds)) for ds in judged.values())
    es.stats = stats
    return es, [("stefreschke/Information-Retrieval", f"npl/{f}", p) for f, p in paths.items()]



# ---------------------------------------------------------------- verify + README


def build_pubmedqa(src):
    """PubMedQA's expert-labelled part (PQA-L): 1,000 questions, each a PubMed article's title
    rephrased as a question, over the 1,000 abstracts. Its own split: the 500 PMIDs of
    test_ground_truth.json are the test split, the other 500 the dev split."""
    paths = {f: checked_source(src, f"pubmedqa/data/{f}") for f in ("ori_pqal.json", "test_ground_truth.json")}
    with open(paths["ori_pqal.json"], encoding="utf-8") as fh:
        items = json.load(fh)
    with open(paths["test_ground_truth.json"], encoding="utf-8") as fh:
        test = set(json.load(fh))
    if not test <= set(items):
        raise ValueError("pubmedqa: test PMIDs missing from ori_pqal.json")
    es = EvalSet("pubmedqa")
    for pmid in sorted(items, key=int):
        item = items[pmid]
        # the whole abstract: its sections, then the conclusion (PubMedQA's long answer)
        parts = [squash_ws(c) for c in item["CONTEXTS"]] + [squash_ws(item["LONG_ANSWER"])]
        es.add_doc(pmid, "", "\n\n".join(p for p in parts if p))
        es.add_query(pmid, squash_ws(item["QUESTION"]))
        es.add_qrel("test" if pmid in test else "dev", pmid, pmid, 1)
    return es, [("pubmedqa/pubmedqa", f"data/{f}", p) for f, p in paths.items()]


def verify(set_dir):
    """Check a written set; return counts.  Raises AssertionError on any problem."""
    name = os.path.basename(os.path.normpath(set_dir))
    docs, queries = {}, {}
    with gzip.open(os.path.join(set_dir, "corpus.jsonl.gz"), "rt", encoding="utf-8") as fh:
        for line in fh:
            o = json.loads(line)
            assert set(o) == {"_id", "title", "text"}, (name, o.keys())
            assert o["_id"] and o["_id"] not in docs, (name, "dup/empty doc id", o["_id"])
            assert isinstance(o["title"], str) and o["text"].strip(), (name, "empty text", o["_id"])
            assert "\t" not in o["_id"] and "\n" not in o["_id"]
            docs[o["_id"]] = len(o["text"])
    with gzip.open(os.path.join(set_dir, "queries.jsonl.gz"), "rt", encoding="utf-8") as fh:
        for line in fh:
            o = json.loads(line)
            assert set(o) == {"_id", "text"}, (name, o.keys())
            assert o["_id"] and o["_id"] not in queries, (name, "dup/empty query id", o["_id"])
            assert o["text"].strip(), (name, "empty query", o["_id"])
            assert "\t" not in o["_id"] and "\n" not in o["_id"]
            queries[o["_id"]] = o["text"]
    splits = {}
    judged = set()
    for path in sorted(glob.glob(os.path.join(set_dir, "qrels", "*.tsv"))):
        split = os.path.basename(path)[:-4]
        with open(path, encoding="utf-8") as fh:
            header = fh.readline().rstrip("\n")
            assert header == "query-id\tcorpus-id\tscore", (name, split, header)
            n, qs = 0, set()
            for line in fh:
                q, d, s = line.rstrip("\n").split("\t")
                assert q in queries, (name, split, "unknown query", q)
                assert d in docs, (name, split, "unknown doc", d)
                assert int(s) > 0
                n += 1
                qs.add(q)
        splits[split] = {"queries": len(qs), "qrels": n}
        judged |= qs
    assert splits, (name, "no qrels")
    assert judged == set(queries), (name, "queries without qrels", len(set(queries) - judged))
    sizes = {f: os.path.getsize(os.path.join(set_dir, f)) for f in ("corpus.jsonl.gz", "queries.jsonl.gz")}
    return {
        "name": name,
        "docs": len(docs),
        "queries": len(queries),
        "splits": splits,
        "avg_doc_chars": round(sum(docs.values()) / len(docs)),
        "bytes": sum(sizes.values()),
    }


INFO = {
    "pubmedqa": {
        "language": "English",
        "licence": "MIT License (Copyright (c) 2019 pubmedqa), as the source repository states; the abstracts "
        "are PubMed/MEDLINE abstracts, distributed by the dataset for research",
        "what": "PubMedQA, expert-labelled part (PQA-L; Jin et al., 2019): 1,000 PubMed articles whose titles "
        "are questions (\"Do mitochondria play a role in remodelling lace plant leaves during programmed "
        "cell death?\"), each asked of the 1,000 abstracts. Biomedical long-form text, question -> the "
        "article's abstract; a lexical-strong English set (the question shares the abstract's technical "
        "terms) with a dev split of its own.",
        "how": "corpus = one document per article (`_id` = PMID, no title; text = the abstract's sections "
        "(`CONTEXTS`) and then its conclusion (`LONG_ANSWER`), separated by blank lines); queries = each "
        "article's `QUESTION` (`_id` = PMID); qrel = the article's own abstract, score 1. qrels/test.tsv = "
        "the 500 PMIDs of PubMedQA's `test_ground_truth.json` (its test split), qrels/dev.tsv = the other "
        "500. The yes/no/maybe labels are not used.",
    },
    "xquad-en": {
        "language": "English",
        "licence": "CC BY-SA 4.0 (XQuAD; text from Wikipedia via SQuAD v1.1)",
        "what": "XQuAD English: the 240 paragraphs / 1,190 questions of the SQuAD v1.1 development set "
        "that XQuAD had professionally translated. Parallel to `xquad-zh` (same ids).",
        "how": "corpus = each paragraph (`_id` = `<article>-<paragraph index>`, title = Wikipedia article "
        "name with underscores as spaces); queries = the questions (`_id` = SQuAD question id); "
        "qrels/test.tsv = the paragraph each question was written on, score 1.",
    },
    "xquad-zh": {
        "language": "Chinese (Simplified)",
        "licence": "CC BY-SA 4.0 (XQuAD; professional translation of SQuAD v1.1 / Wikipedia text)",
        "what": "XQuAD Chinese: professional Chinese translation of the same 240 paragraphs / 1,190 questions "
        "as `xquad-en`; ids are identical, so the two sets are parallel.",
        "how": "corpus = each paragraph (`_id` = `<article>-<paragraph index>`, the same ids as `xquad-en`); "
        "titles are left empty because the source keeps the English Wikipedia article names; queries = "
        "the questions (`_id` = SQuAD question id); qrels/test.tsv = the paragraph each question was "
        "written on, score 1.",
    },
    "drcd": {
        "language": "Chinese (Traditional)",
        "licence": "CC BY-SA 3.0 (DRCD, compiled from Chinese Wikipedia)",
        "what": "Delta Reading Comprehension Dataset, development and test splits (the training split, "
        "DRCD_training.json, is not included). Paragraphs of zh-TW Wikipedia articles with crowd-written questions.",
        "how": "corpus = every paragraph of DRCD_dev.json and DRCD_test.json (`_id` = DRCD paragraph id, "
        "title = article title); queries = every question (`_id` = DRCD question id); qrel = the "
        "paragraph holding the answer, score 1. qrels/test.tsv from DRCD_test.json, qrels/dev.tsv "
        "from DRCD_dev.json; both share one corpus (2,000 paragraphs).",
    },
    "fairytaleqa": {
        "language": "English",
        "licence": "Apache-2.0 (FairytaleQA annotations); story texts from Project Gutenberg (public domain)",
        "what": "FairytaleQA: 278 children's stories / fairy-tale books from Project Gutenberg, split into "
        "human-defined sections, with 10,580 questions written by education experts. The most "
        "book-like set: questions over sections (chapters) of public-domain books.",
        "how": "corpus = every section of every story (`_id` = `<story>__s<section>`, title = story name, "
        "text = section with Gutenberg hard wraps joined, paragraphs separated by a blank line; the "
        "two rows numbered 5 in `remarkable-rocket` are one document); "
        "queries = every question (`_id` = `<story>__q<question_id>`, with `-2` appended where a "
        "story file repeats a question_id for a different question); qrels = the section(s) in "
        "`cor_section`, score 1 (summary questions may have several). qrels/test.tsv, dev.tsv, "
        "train.tsv follow FairytaleQA's story-level test/val/train split. Questions are written "
        "for one story (\"Why did the king ...\"), so for within-book search restrict the candidates "
        "to documents whose id starts with the query's `<story>__` prefix; over the whole corpus many "
        "questions are ambiguous.",
    },
    "covid-qa": {
        "language": "English",
        "licence": "Apache-2.0 (COVID-QA annotations); article texts CC BY (only articles marked `License:cc-by` kept)",
        "what": "COVID-QA (deepset), snapshot of 2020-04-23 (`200423_covidQA.json`, the last version small "
        "enough to fetch; the final COVID-QA.json is larger). Questions by biomedical experts over "
        "full-text scientific articles (long-form text, ~23k characters each).",
        "how": "each cc-by article is split into passages: non-empty lines, lines over 2,000 characters split "
        "at sentence ends into ~1,200-character pieces, and pieces under 400 characters merged with "
        "the next (`_id` = `<document_id>-<k>`, title = article title). queries = the questions; "
        "qrels/test.tsv = every passage that overlaps the answer span, score 1 (answer texts are "
        "trimmed of stray spaces; the given offsets all match the trimmed text). Six articles "
        "without a `License:cc-by` line (JAMA, CDC, EID, JACR, Imperial College report) are left "
        "out with their questions.",
    },
    "cacm": {
        "language": "English",
        "licence": "none stated: the CACM collection is distributed by the University of Glasgow IR group "
        "(ir.dcs.gla.ac.uk/resources/test_collections/cacm/) as one of the test collections it makes publicly "
        "available for research; no licence is given there or in the copy used",
        "what": "CACM: titles and abstracts of the 3,204 articles of Communications of the ACM, 1958-1979, "
        "with the 64 natural-language information requests of the SMART test collection (52 judged), written "
        "by computer scientists about their own needs; many are paragraph-length (\"I'm interested in "
        "mechanisms for communicating between disjoint processes, possibly, but not exclusively, ...\"). "
        "Vocabulary mismatch between request and abstract, several relevant documents per request.",
        "how": "corpus = every record of `cacm.all` (`_id` = the `.I` number, title = `.T`, text = the "
        "abstract `.W`; the 1,617 records without an abstract have their title as text and an empty title; authors, dates and "
        "citations are left out); queries = the `.W` text of every request of `query.text` that "
        "`qrels.text` judges (52 of 64; `_id` = the `.I` number; the `.A` author lists of some requests "
        "are left out; the copy's empty trailing `.I 0` record is skipped); qrels = every (request, document) pair of `qrels.text`, score 1. The judged requests, "
        "sorted by id and shuffled with `random.Random(28)`, are split in two: the first 26 are "
        "qrels/dev.tsv, the other 26 qrels/test.tsv. The copy is the GitHub repository named below; its "
        "three files are the Glasgow distribution's `cacm.all`, `query.text`, `qrels.text`.",
    },
    "cmdd-im": {
        "language": "Chinese (Simplified)",
        "licence": "MIT License (Copyright (c) 2019 Toyhom), as the source repository states",
        "what": "Chinese medical dialogue data (Toyhom), internal-medicine sample: patients' questions from an "
        "online medical consultation site and a doctor's answer to each (hepatology, gastroenterology, "
        "neurology, cardiology, endocrinology ...). Question -> answer retrieval: the patient describes "
        "symptoms in lay words, the doctor answers in clinical ones; not Wikipedia, not written looking at "
        "the answer. A seeded subsample: 400 questions and 2,000 answers.",
        "how": "source = `样例_内科5000-6000.csv` (GB18030; columns department, title, ask, answer; 7,644 rows). "
        "One document per distinct answer text (`_id` = `a<first data row>`, no title); one question per "
        "distinct question text, the `ask` column, or the `title` where the ask has fewer than 8 characters "
        "(`_id` = `q<first data row>`); a question is judged relevant to every distinct answer given to it. "
        "Kept: 400 questions drawn with `random.Random(28)` from all distinct questions, every answer "
        "of those, and distractor answers drawn with the same generator from the rest up to 2,000 documents. "
        "The 400 questions, sorted by id and shuffled with the same seed again, are split in two: the "
        "first 200 are qrels/dev.tsv, the other 200 qrels/test.tsv. Some answers were machine-reworded "
        "at the source (odd synonyms such as 救治 for 治疗); they are kept as they are.",
    },
    "cfc": {
        "language": "English",
        "licence": "none stated: the Cystic Fibrosis collection (Shaw, Wood, Wood and Tibbo, 1991) is distributed "
        "publicly for research with the book Modern Information Retrieval (Baeza-Yates and Ribeiro-Neto); no "
        "licence is given there or in the copy used",
        "what": "CF (Cystic Fibrosis) reference collection: the 1,239 MEDLINE records on cystic fibrosis "
        "published 1974-1979 (title and abstract) and 99 natural-language questions by domain experts, each "
        "with the records that four judges scored relevant (49 on average). Scientific abstracts, "
        "one-sentence technical questions (median 13 words), vocabulary mismatch; enough questions for a "
        "dev/test split.",
        "how": "corpus = every `RECORD` of `cf74.xml` ... `cf79.xml` (`_id` = `RECORDNUM` without leading "
        "zeros, title = `TITLE`, text = `ABSTRACT`, else the `EXTRACT` that stands in for it, else the title "
        "alone with an empty title; authors, MeSH subjects, references and citations are left out); queries "
        "= every `QUERY` of `cfquery.xml` (`_id` = `QueryNumber` without leading zeros; query 93 of the "
        "original 100 is not in this copy); qrels = every `Item` of a query, score 1 (each was scored above "
        "0 by at least one judge; the four judges' grades are not kept). The 99 queries, sorted by id and "
        "shuffled with `random.Random(28)`, are split in two: the first 49 are qrels/dev.tsv, the other 50 "
        "qrels/test.tsv.",
    },
    "medline": {
        "language": "English",
        "licence": "none stated: the MEDLINE collection is distributed by the University of Glasgow IR group "
        "(ir.dcs.gla.ac.uk/resources/test_collections/medl/) as one of the test collections it makes publicly "
        "available for research; no licence is given there or in the copy used (the archive holds the four data "
        "files only)",
        "what": "MEDLINE (the SMART MED collection): 1,033 MEDLINE abstracts on biomedicine and 30 natural-language "
        "requests (\"the relationship of blood and cerebrospinal fluid oxygen concentrations or partial pressures. "
        "a method of interest is polarography.\"), each with 9 to 39 relevant abstracts (23 on average). "
        "Topical retrieval, many right answers per request, a small and dense corpus.",
        "how": "source = `med/med.tar.gz`, the Glasgow distribution archive (its `MED.ALL`, `MED.QRY` are the "
        "repository's loose files byte for byte; the loose `MED.REL` was reformatted by the repository's owner, "
        "so the archive's is used; `MED.REL.OLD`, the earlier judgements, is not). corpus = every `.I` record "
        "of `MED.ALL` (`_id` = the `.I` number, no title: the records have only `.W`, whose first sentence "
        "is the article title; text = `.W`, lower case and tokenised as in the source); queries = the `.W` "
        "text of every request of `MED.QRY` (`_id` = the `.I` number; all 30 are judged); qrels = every "
        "(request, document) pair of `MED.REL` (`query 0 document 1`), score 1. The 30 requests, sorted by id "
        "and shuffled with `random.Random(28)`, are split in two: the first 15 are qrels/dev.tsv, the other 15 "
        "qrels/test.tsv.",
    },
    "lisa": {
        "language": "English",
        "licence": "none stated as a licence; the distribution's README says: the files \"are NOT TO BE SOLD but "
        "are being provided to support research investigations\", and \"The Library and Information Science "
        "Abstracts database is Copyright (c) 1982 Library Association\"; distributed by the University of "
        "Glasgow IR group (ir.dcs.gla.ac.uk/resources/test_collections/lisa/) for research",
        "what": "LISA (Sheffield, Peter Willett): titles and abstracts of 1982 Library and Information Science "
        "Abstracts (6,004 records; 5,999 in this distribution) and 35 paragraph-length requests written by "
        "MSc students in 1983 (\"I would be interested to receive information on non-users of libraries, "
        "including any studies of who are non-users and why they are non-users. ...\"), each ending in a "
        "list of the student's own keywords. 1 to 53 relevant records per request (11 on average), found by "
        "weeks of manual and online searching. Upper case throughout, as in the source.",
        "how": "source = `lisa.tar.gz`, the Glasgow distribution archive (with its README). corpus = the records "
        "of `LISA0.001` ... `LISA5.850` concatenated in order, split at the `*****` lines (`_id` = the "
        "`Document` number, title = the lines up to the first blank line, text = the abstract after it). "
        "`LISA1.501` is damaged at its end: the abstract of record 1992 is cut and runs on into the tail of "
        "a lost record's abstract (kept as it is), records 1993-1997 are missing, and records 1998-2001 come "
        "twice around a headerless copy of that tail (repeats, identical, and the fragment are skipped): 5,999 "
        "documents, none of the missing ones judged. queries = the 35 requests of `LISA.QUE` (`_id` = the "
        "number before the text; text up to the closing `#`, keywords kept); qrels = `LISARJ.NUM` (query, "
        "count, document numbers), score 1. `LISA.REL`, the same judgements in another form, is damaged "
        "(cut inside query 21, queries 22 and 23 lost); its 32 whole blocks are checked against `LISARJ.NUM` "
        "and agree. The 35 requests, sorted by id and shuffled with `random.Random(28)`, are split in two: "
        "the first 17 are qrels/dev.tsv, the other 18 qrels/test.tsv.",
    },
    "npl": {
        "language": "English",
        "licence": "none stated: the NPL collection (Vaswani and Cameron, National Physical Laboratory) is "
        "distributed by the University of Glasgow IR group (ir.dcs.gla.ac.uk/resources/test_collections/npl/) "
        "as one of the test collections it makes publicly available for research; no licence is given there or "
        "in the copy used",
        "what": "NPL: 11,429 short abstracts of electronics, computing and physics papers (1950s-60s; lower case, "
        "numbers and most punctuation stripped in the source) and 93 requests, most of them one line in upper "
        "case (\"MEASUREMENT OF DIELECTRIC CONSTANT OF LIQUIDS BY THE USE OF MICROWAVE TECHNIQUES\"; median 11 "
        "words), with 22 relevant abstracts each on average (1 to 84). The largest of the classic collections "
        "here: topical retrieval with many right answers in a corpus of similar, terse records.",
        "how": "corpus = every record of `npl/doc-text` (a number line, the text, a `/` line; `_id` = the number, "
        "no title, text = the body); queries = every record of `npl/query-text` (`_id` = its number; all 93 "
        "are judged); qrels = the document numbers of each record of `npl/rlv-ass`, score 1. The copy is the "
        "repository's first commit of these files; a later commit of it deleted 22 records from `doc-text`. "
        "The 93 requests, sorted by id and shuffled with `random.Random(28)`, are split in two: the first 46 "
        "are qrels/dev.tsv, the other 47 qrels/test.tsv.",
    },
}


def write_readme(set_dir, info, sources, counts, stats=None):
    name = counts["name"]
    lines = [f"# {name}", "", info["what"], ""]
    lines += ["| | |", "| --- | --- |"]
    lines += [f"| language | {info['language']} |", f"| licence | {info['licence']} |"]
    lines += [f"| documents | {counts['docs']:,} (mean {counts['avg_doc_chars']:,} characters) |"]
    lines += [f"| queries | {counts['queries']:,} |"]
    for split, c in sorted(counts["splits"].items()):
        lines += [f"| qrels/{split}.tsv | {c['queries']:,} queries, {c['qrels']:,} judgements (binary, score 1) |"]
    lines += ["", "## Origin", ""]
    repos = sorted({r for r, _, _ in sources})
    for r in repos:
        lines += [f"- GitHub repository `{r}`, commit `{COMMITS[r]}`"]
    lines += [""]
    if name != "fairytaleqa":  # its hundreds of CSV files get one manifest digest instead
        lines += ["| source file (path in repository) | sha256 |", "| --- | --- |"]
        for r, p, full in sources:
            # full: a file, or the bytes of an archive member
            digest = hashlib.sha256(full).hexdigest() if isinstance(full, bytes) else sha256_file(full)
            lines += [f"| `{p}` | `{digest}` |"]
    else:
        man = hashlib.sha256()
        for r, p, full in sorted(sources, key=lambda x: x[1]):
            man.update(f"{sha256_file(full)}  {p}\n".encode())
        lines += [
            f"{len(sources)} CSV files under `data-by-train-split/` (`section-stories/all/*-story.csv` and "
            "`questions/{train,val,test}/*-questions.csv`). sha256 of the manifest "
            "(the lines `<sha256 of file>  <path in repository>` for every file, sorted by path, "
            f"each ending in a newline): `{man.hexdigest()}`"
        ]
    lines += ["", "## Conversion", "", info["how"], ""]
    if stats:
        lines += ["Conversion counts: " + ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in stats.items()) + ".", ""]
    lines += [
        "Built by `../convert.py` (standard library only); see `../README.md`. "
        "Texts are whitespace-trimmed; questions have runs of whitespace collapsed.",
        "",
    ]
    with open(os.path.join(set_dir, "README.md"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines))


BUILDERS = {
    "xquad-en": lambda src: build_xquad(src, "en"),
    "xquad-zh": lambda src: build_xquad(src, "zh"),
    "drcd": build_drcd,
    "fairytaleqa": build_fairytaleqa,
    "covid-qa": build_covidqa,
    "cacm": build_cacm,
    "cmdd-im": build_cmdd,
    "cfc": build_cfc,
    "pubmedqa": build_pubmedqa,
    "medline": build_medline,
    "lisa": build_lisa,
    "npl": build_npl,
}


def print_counts(c):
    sp = ", ".join(f"{k}: {v['queries']} q / {v['qrels']} qrels" for k, v in sorted(c["splits"].items()))
    print(f"{c['name']:12s} docs={c['docs']:6d} queries={c['queries']:6d} [{sp}] gz={c['bytes'] / 1e6:.2f} MB")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", help="folder holding one checkout per source repository")
    ap.add_argument("--out", help="folder to write the sets into")
    ap.add_argument("--sets", default=",".join(BUILDERS), help="comma-separated subset of: " + ", ".join(BUILDERS))
    ap.add_argument("--verify", metavar="DIR", help="only verify the sets already under DIR")
    a = ap.parse_args(argv)
    if a.verify:
        total = 0
        for d in sorted(glob.glob(os.path.join(a.verify, "*", "corpus.jsonl.gz"))):
            c = verify(os.path.dirname(d))
            print_counts(c)
            total += c["bytes"]
        print(f"total compressed: {total / 1e6:.2f} MB")
        return 0
    if not (a.src and a.out):
        ap.error("--src and --out are required (or --verify DIR)")
    for name in [s.strip() for s in a.sets.split(",") if s.strip()]:
        if name not in BUILDERS:
            ap.error(f"unknown set {name}")
        es, sources = BUILDERS[name](a.src)
        write_set(es, a.out)
        counts = verify(os.path.join(a.out, name))
        write_readme(os.path.join(a.out, name), INFO[name], sources, counts, getattr(es, "stats", None))
        print_counts(counts)
        if getattr(es, "stats", None):
            print("   ", es.stats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
