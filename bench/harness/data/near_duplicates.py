"""A near-duplicate corpus for bench/scale.py: a million memories that repeat a few thousand real turns
with small changes (repeated phrasing, logs, many similar turns), and real questions to search it with.

Bases: real turn texts (every LoCoMo turn, "speaker: text", and BEAM messages), embedded with the local
model (all-MiniLM-L6-v2, int8 ONNX). Each memory is one base vector moved by a perturbation whose size
is calibrated on real text variants: a sample of the base texts is edited (a word dropped, two words
swapped, a number changed, a typo, a sentence of another turn appended), embedded, and each memory's
cosine to its base is drawn from the measured cosine(base, variant) values. Its direction is a random
mix of a few measured (variant - base) differences, orthogonal to its base: the model's own directions
of change, not isotropic noise. Each base has its own few (DIRECTIONS): the variants of one text differ
from it in the same few ways (which word, which number), so they spread over a few directions, not
over every direction at once; copies spread over every direction would all be equally far apart,
which real variants of one text are not. Bases are picked with Zipf-like weights: a few repeated thousands of times
(a log line), most a few hundred. Queries are held-out real questions (LoCoMo questions, BEAM probing
questions), embedded with the same model; none is stored.

The data stays where it is (../shared/data/): read from the paths given, never copied. Embeddings can
be cached in a scratch folder (`cache`), outside the repository.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.harness.data.beam import conversation_folders, load_conversation
from bench.harness.data.corpus import locomo
from mcp_memory.config import EmbeddingSettings
from mcp_memory.llm.onnx_minilm import LocalMiniLMEmbedder

BEAM_MESSAGE_CHARS = 1200  # the model reads 256 tokens: a long message's head is what it embeds
# A memory's text: its base's first characters, as long as a LoCoMo turn or two (the synthetic corpus's),
# so that the text index of a million holds what the synthetic one does (whole BEAM messages, each with
# two more as context, made it 24 GB and the bench was killed).
CONTENT_CHARS = 280
CALIBRATION_TEXTS = 400  # base texts edited, each in every way below
EDITS = ("word dropped", "words swapped", "number changed", "typo", "sentence appended")
DIRECTIONS = 8  # measured differences a base's variants move along, mixed at random
QUERIES_EACH = 100  # LoCoMo questions and BEAM probing questions


def edited(text: str, kind: str, other: str, rng: random.Random) -> str:
    """One real-looking variant of `text` (`other`: another turn, for an appended sentence)."""
    words = text.split()
    if kind == "word dropped" and len(words) > 2:
        del words[rng.randrange(1, len(words))]
    elif kind == "words swapped" and len(words) > 3:
        i = rng.randrange(1, len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
    elif kind == "number changed":
        numbers = [i for i, w in enumerate(words) if re.search(r"\d", w)]
        if numbers:
            i = rng.choice(numbers)
            words[i] = re.sub(r"\d+", lambda m: str(int(m.group()) + rng.randint(1, 9)), words[i])
        else:  # no number to change: one said (a count, a time, a version)
            words.insert(rng.randrange(1, len(words) + 1), str(rng.randint(2, 60)))
    elif kind == "typo":
        long = [i for i, w in enumerate(words) if len(w) > 3] or [0]
        i = rng.choice(long)
        w = words[i]
        j = rng.randrange(0, max(1, len(w) - 1))
        words[i] = w[:j] + w[j + 1 : j + 2] + w[j] + w[j + 2 :] if len(w) > 1 else w + w
    elif kind == "sentence appended":
        sentence = re.split(r"(?<=[.!?])\s", other.split(": ", 1)[-1])[0]
        words += sentence.split()[:25]
    return " ".join(words)


@dataclass
class Calibration:
    cosines: dict[str, np.ndarray]  # cosine(base, variant) per kind of edit

    def summary(self) -> dict[str, dict[str, float]]:
        def stats(values: np.ndarray) -> dict[str, float]:
            q = np.quantile(values, [0.05, 0.5, 0.95])
            return {
                "mean": round(float(values.mean()), 4),
                "p05": round(float(q[0]), 4),
                "p50": round(float(q[1]), 4),
                "p95": round(float(q[2]), 4),
            }

        out = {kind: stats(values) for kind, values in self.cosines.items()}
        out["all"] = stats(np.concatenate(list(self.cosines.values())))
        return out


class NearDuplicates:
    """Near-duplicates of real turns (see the module's docstring)."""

    def __init__(self, locomo_path: str, beam_root: str, *, cache: Path | None = None, seed: int = 3) -> None:
        turns, locomo_questions = locomo(locomo_path)
        beam_texts, beam_questions = [], []
        for folder in conversation_folders(Path(beam_root)):
            conversation = load_conversation(folder)
            beam_texts += [
                f"{m.role}: {m.content[:BEAM_MESSAGE_CHARS]}"
                for m in conversation.messages
                if m.content.strip()
            ]
            beam_questions += [q.text for q in conversation.questions]
        self.texts = list(dict.fromkeys(t for t in turns + beam_texts if len(t.split()) > 2))
        self.contents = [
            t if len(t) <= CONTENT_CHARS else t[:CONTENT_CHARS].rsplit(" ", 1)[0] for t in self.texts
        ]
        rng = random.Random(seed)
        self.questions = rng.sample(locomo_questions, QUERIES_EACH) + rng.sample(beam_questions, QUERIES_EACH)
        self._embedder: LocalMiniLMEmbedder | None = None
        self._cache = cache
        self.bases = self._embed(self.texts)
        self.query_vectors = self._embed(self.questions)
        # Calibration: real variants of a sample of the bases.
        sample = rng.sample(range(len(self.texts)), CALIBRATION_TEXTS)
        variants, of = [], []
        for i in sample:
            for kind in EDITS:
                other = self.texts[rng.randrange(len(self.texts))]
                variants.append(edited(self.texts[i], kind, other, rng))
                of.append(i)
        moved = self._embed(variants)
        base = self.bases[of]
        cosines = (moved * base).sum(axis=1)
        kinds = np.array([k for _ in sample for k in EDITS])
        self.calibration = Calibration({k: cosines[kinds == k] for k in EDITS})
        self._cosines = np.clip(cosines, -1.0, 0.9999)
        differences = moved - base * cosines[:, None]  # each variant's change, orthogonal to its base
        norms = np.linalg.norm(differences, axis=1, keepdims=True)
        self._directions = (differences / np.maximum(norms, 1e-9))[norms[:, 0] > 1e-6].astype(np.float32)
        weights = 1.0 / np.arange(1, len(self.texts) + 1) ** 0.8
        self._weights = weights / weights.sum()
        numbers = np.random.default_rng(seed)
        self._order = numbers.permutation(len(self.texts))  # which texts are common
        self._own = numbers.integers(0, len(self._directions), (len(self.texts), DIRECTIONS))

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        key = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
        cached = self._cache / f"near-duplicates-{key}.npy" if self._cache else None
        if cached is not None and cached.is_file():
            return np.asarray(np.load(cached), dtype=np.float32)
        if self._embedder is None:
            self._embedder = LocalMiniLMEmbedder.load(EmbeddingSettings(threads=2))
        vectors = self._embedder.embed_now(list(texts))
        if cached is not None:
            cached.parent.mkdir(parents=True, exist_ok=True)
            np.save(cached, vectors)
        return vectors

    def draw(self, count: int, rng: np.random.Generator) -> tuple[np.ndarray, list[str]]:
        """`count` near-duplicates: their unit vectors and their contents (their bases' heads)."""
        picked = self._order[rng.choice(len(self.texts), size=count, p=self._weights)]
        base = self.bases[picked]
        mix = self._directions[self._own[picked]]
        direction = (mix * rng.standard_normal((count, DIRECTIONS, 1)).astype(np.float32)).sum(axis=1)
        direction -= base * (direction * base).sum(axis=1, keepdims=True)
        direction /= np.maximum(np.linalg.norm(direction, axis=1, keepdims=True), 1e-9)
        cosine = self._cosines[rng.integers(0, len(self._cosines), count)][:, None].astype(np.float32)
        vectors = cosine * base + np.sqrt(1.0 - cosine**2) * direction
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors.astype(np.float32), [self.contents[i] for i in picked]
