"""Retrieval ideas measured against the product's ranking on LoCoMo, outside the service: what issue 19's
round two tried, kept and left out, reproducible.

    .venv/bin/python bench/retrieval_lab.py ../shared/data/locomo/locomo_dev.json

A re-implementation of the default hybrid ranking over one conversation's turns with the product's own
pieces (search/text_index.py BM25, search/terms.py keywords, the local MiniLM encoder, score fusion as
search/fusion.py does it), one variant per row. Tuning was done on split A (conv-26, conv-41, conv-43)
and each setting below is the one chosen there; split B (conv-47, conv-49) is the held-out check.
Recall@k = share of a question's evidence turns in the top k (categories 1-4), as bench/locomo.py.
The service's own figure for the default is bench/locomo.py's (it also filters by times a question names).
Nothing is asserted; the data is read from the path given, never copied.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mcp_memory.config import EmbeddingSettings
from mcp_memory.llm.onnx_minilm import LocalMiniLMEmbedder
from mcp_memory.search.rows import RowFilter
from mcp_memory.search.terms import date_words, keywords, query_terms, terms
from mcp_memory.search.text_index import Document, TextIndex

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import cli
from bench.harness.data.locomo import samples as locomo_samples
from bench.harness.data.locomo import session_time

SPLIT_A = {"conv-26", "conv-41", "conv-43"}
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
POOL = 80  # bench/locomo.py asks for 20: the store's candidate pool is max(4 * limit, 50)
CONTEXT_WEIGHT = 0.4


def minmax(values: np.ndarray) -> np.ndarray:
    """Scaled to 0..1 (all zeros when flat): search/fusion.py's score fusion did this to cosines until
    search/ranking.py took over the ranking (f98604f); kept here so the lab's rows still compute as before."""
    low, high = float(values.min()), float(values.max())
    return (values - low) / (high - low) if high > low else np.zeros_like(values)


@dataclass
class Conversation:
    sample_id: str
    turns: list[dict[str, Any]]
    questions: list[dict[str, Any]]
    speakers: tuple[str, str]
    own: np.ndarray  # the turns' vectors (their own text)
    with_before: np.ndarray  # vectors of the two turns before and the turn, as one text
    queries: np.ndarray
    sessions: np.ndarray
    text: dict[int, TextIndex]  # context turns after (0 or 2) -> the BM25 index


def window(turns: list[dict[str, Any]], i: int, before: int, after: int) -> list[str]:
    same = [t for t in turns[max(0, i - before) : i + 1 + after] if t["session"] == turns[i]["session"]]
    return [t["text"] for t in same if t is not turns[i]]


def load(path: str, embedder: LocalMiniLMEmbedder) -> list[Conversation]:
    out = []
    for sample in locomo_samples(path):
        c = sample["conversation"]
        turns: list[dict[str, Any]] = []
        n = 1
        while f"session_{n}" in c:
            when = session_time(c[f"session_{n}_date_time"])
            for t in c[f"session_{n}"]:
                turns.append(
                    dict(
                        dia=t["dia_id"],
                        speaker=t["speaker"],
                        text=f"{t['speaker']}: {t['text']}",
                        session=n,
                        when=when,
                    )
                )
            n += 1
        questions = [
            dict(q=qa["question"], evidence=qa["evidence"], category=qa["category"])
            for qa in sample["qa"]
            if qa.get("evidence") and qa["category"] in CATEGORIES
        ]
        text = {
            after: TextIndex.of(
                [
                    Document(
                        i,
                        t["text"],
                        " ".join([*window(turns, i, 2, after), date_words(t["when"])]),
                        f"s{t['session']}",
                        "turn",
                        t["when"].timestamp(),
                    )
                    for i, t in enumerate(turns)
                ]
            )
            for after in (0, 2)
        }
        own = embedder.embed_now([t["text"] for t in turns])
        with_before = embedder.embed_now(
            ["\n".join([*window(turns, i, 2, 0), t["text"]]) for i, t in enumerate(turns)]
        )
        out.append(
            Conversation(
                sample["sample_id"],
                turns,
                questions,
                (c["speaker_a"], c["speaker_b"]),
                own,
                with_before,
                embedder.embed_now([q["q"] for q in questions]),
                np.array([t["session"] for t in turns]),
                text,
            )
        )
        print(f"{sample['sample_id']}: {len(turns)} turns, {len(questions)} questions", file=sys.stderr)
    return out


def bm25(c: Conversation, words: list[str], after: int = 2) -> np.ndarray:
    """Dense BM25 over the turns: the best POOL hits keep their score, the rest 0 (as the store)."""
    scores = np.zeros(len(c.turns))
    wanted = query_terms(words)
    if wanted:
        for i, s in c.text[after].search(wanted, POOL, RowFilter(), context_weight=CONTEXT_WEIGHT):
            scores[i] = s
    return scores


def fused(text: np.ndarray, cosines: np.ndarray) -> np.ndarray:
    """score_fusion, dense: bm25 / best bm25 + minmax(cosine)."""
    top = text.max()
    return (text / top if top > 0 else text) + minmax(cosines.astype(np.float64))


Variant = Callable[[Conversation, int], np.ndarray]  # (conversation, question) -> a score per turn


def default(after: int = 2) -> Variant:
    def score(c: Conversation, k: int) -> np.ndarray:
        return fused(bm25(c, keywords(c.questions[k]["q"]), after), c.own @ c.queries[k])

    return score


def rm3(m: int = 5, expansion: int = 10, weight: float = 0.1) -> Variant:
    """BM25 pseudo-relevance feedback: the top m hits' best tf-idf words, searched again at `weight`."""

    def score(c: Conversation, k: int) -> np.ndarray:
        words = keywords(c.questions[k]["q"])
        first = default()(c, k)
        counts: dict[str, float] = {}
        for i in np.argsort(-first)[:m]:
            for t in terms(c.turns[i]["text"]):
                counts[t] = counts.get(t, 0) + 1
        n = len(c.turns)
        frequency = {t: sum(1 for x in c.turns if t in terms(x["text"])) for t in counts}
        seen = set(query_terms(words))
        ranked = sorted(
            (t for t in counts if t not in seen and len(t) > 2),
            key=lambda t: -counts[t] * np.log(n / frequency[t]),
        )[:expansion]
        extra = bm25(c, ranked)
        return first + weight * (extra / extra.max() if extra.max() > 0 else extra)

    return score


def rocchio(m: int = 3, beta: float = 0.3) -> Variant:
    """Vector pseudo-relevance feedback: the query moved toward its top m turns by meaning."""

    def score(c: Conversation, k: int) -> np.ndarray:
        q = c.queries[k]
        top = np.argsort(-(c.own @ q))[:m]
        moved = q + beta * c.own[top].mean(axis=0)
        moved /= np.linalg.norm(moved)
        return fused(bm25(c, keywords(c.questions[k]["q"])), c.own @ moved)

    return score


def contextual_vectors() -> Variant:
    """Cosine = mean of the turn's own and of the turn with the two before it (one more embedding a turn)."""

    def score(c: Conversation, k: int) -> np.ndarray:
        q = c.queries[k]
        return fused(bm25(c, keywords(c.questions[k]["q"])), (c.own @ q + c.with_before @ q) / 2)

    return score


def neighbours(alpha: float = 0.1) -> Variant:
    """Each turn gains alpha times the better fused score of the turns beside it in its session."""

    def score(c: Conversation, k: int) -> np.ndarray:
        f = default()(c, k)
        left = np.where(np.r_[False, c.sessions[1:] == c.sessions[:-1]], np.r_[0, f[:-1]], 0)
        right = np.where(np.r_[c.sessions[:-1] == c.sessions[1:], False], np.r_[f[1:], 0], 0)
        return f + alpha * np.maximum(left, right)

    return score


def session_best(weight: float = 0.5) -> Variant:
    """Each turn gains weight times its session's best fused score (min-max over sessions)."""

    def score(c: Conversation, k: int) -> np.ndarray:
        f = default()(c, k)
        ids = np.unique(c.sessions)
        best = np.array([f[c.sessions == s].max() for s in ids])
        return f + weight * minmax(best)[np.searchsorted(ids, c.sessions)]

    return score


def speaker_prior(bonus: float = 0.4) -> Variant:
    """LoCoMo's turns start with the speaker's name: when a question names exactly one speaker, their
    turns gain `bonus`. Depends on that format, which the product's turns do not have."""

    def score(c: Conversation, k: int) -> np.ndarray:
        f = default()(c, k)
        asked = set(query_terms(keywords(c.questions[k]["q"])))
        named = [s for s in c.speakers if set(terms(s)) & asked]
        if len(named) == 1:
            f = f + bonus * np.array([t["speaker"] == named[0] for t in c.turns])
        return f

    return score


VARIANTS: list[tuple[str, Variant]] = [
    ("context: the two turns before (the product until this round)", default(after=0)),
    ("context: the two turns before and the two after (the product now)", default(after=2)),
    ("+ BM25 feedback (RM3: top 5, 10 words, 0.1)", rm3()),
    ("+ vector feedback (Rocchio: top 3, 0.3)", rocchio()),
    ("+ vectors of each turn with the two before it, mean cosine", contextual_vectors()),
    ("+ neighbours' fused score (0.1 of the better)", neighbours()),
    ("+ its session's best fused score (0.5)", session_best()),
    ("+ speaker prior (0.4; LoCoMo's 'Name: text' format only)", speaker_prior()),
]


def recall(c: Conversation, k: int, scores: np.ndarray) -> dict[int, float]:
    ranked = [c.turns[i]["dia"] for i in np.argsort(-scores, kind="stable")[:10]]
    wanted = set(c.questions[k]["evidence"])
    return {n: len(wanted & set(ranked[:n])) / len(wanted) for n in (5, 10)}


Row = tuple[str, int, dict[int, float]]  # conversation, category, recall at 5 and 10


def mean(rows: list[Row], keep: Callable[[Row], bool], n: int) -> float:
    picked = [r[2][n] for r in rows if keep(r)]
    return sum(picked) / len(picked)


def main() -> None:
    parser = cli.parser(__doc__)
    parser.add_argument("data", help="path to locomo_dev.json (../shared/data/locomo/locomo_dev.json)")
    args = parser.parse_args()
    conversations = load(args.data, LocalMiniLMEmbedder.load(EmbeddingSettings()))
    print(
        "\n| variant | R@5 | R@10 | R@10 split A | R@10 split B | "
        + " | ".join(CATEGORIES.values())
        + " |\n|---|"
        + "---:|" * (4 + len(CATEGORIES))
    )
    for label, variant in VARIANTS:
        rows = [
            (c.sample_id, q["category"], recall(c, k, variant(c, k)))
            for c in conversations
            for k, q in enumerate(c.questions)
        ]
        cells = [
            mean(rows, lambda r: True, 5),
            mean(rows, lambda r: True, 10),
            mean(rows, lambda r: r[0] in SPLIT_A, 10),
            mean(rows, lambda r: r[0] not in SPLIT_A, 10),
        ]
        cells += [mean(rows, lambda r, c=c: r[1] == c, 10) for c in CATEGORIES]
        print(f"| {label} | " + " | ".join(f"{x:.3f}" for x in cells) + " |", flush=True)


if __name__ == "__main__":
    main()
