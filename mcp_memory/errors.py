"""One root for every error the server raises on purpose.

Tools let these propagate: the MCP layer turns them into `is_error` results whose text is the
message, so every message is written for the model that reads it and never carries a secret.
"""


class MemoryServerError(Exception):
    """Root of every error mcp-memory raises on purpose."""


class ConfigError(MemoryServerError):
    """The configuration cannot work (bad value, missing credential, unusable data file)."""


class InvalidInputError(MemoryServerError, ValueError):
    """A caller sent something the server refuses; the message names the argument."""


class NotFoundError(MemoryServerError, LookupError):
    """A memory, thread or revision that does not exist (for this user)."""


class BackendUnavailableError(MemoryServerError):
    """A storage or model backend cannot be reached right now; retrying later may work.

    `backend` names which (sqlite, redis, cosmos, llm, embedding, sampling), for the operator's metrics;
    the boundary that translates a driver's error sets it."""

    def __init__(self, message: str, *, backend: str = "") -> None:
        super().__init__(message)
        self.backend = backend


class EmbeddingMismatchError(ConfigError):
    """Stored vectors were made by another embedding model or dimension than the configured one."""


class PermissionDeniedError(MemoryServerError):
    """The caller is not allowed to do this."""


class LimitExceededError(PermissionDeniedError):
    """A per-user rate or quota is used up; the message says which and when it frees up."""

    limit = "stored_bytes"  # which limit, for the operator's metrics; subclasses name theirs


class ConflictError(MemoryServerError):
    """A concurrent writer changed the same record first (optimistic concurrency lost)."""


class MalformedAnswerError(MemoryServerError):
    """A model's answer is not the JSON (or text) its prompt asked for; nothing of it is stored."""


# ---- how an error shows what it was given -------------------------------------------------------------

MAX_ERROR_CHARS = 300  # no error a client reads is longer (tool results, JSON-RPC errors, HTTP bodies)
ECHO_CHARS = 40  # of a value the caller sent, an error repeats at most this many characters


def shown(value: object, chars: int = ECHO_CHARS) -> str:
    """A value the caller sent, as an error repeats it: in full when short (as Python writes it: quoted,
    control characters and lone surrogates escaped), else a prefix and its length, e.g.
    `'tttttttt…' (100,000 characters)`."""
    if isinstance(value, str):
        if len(value) <= chars:
            return repr(value)
        return f"{repr(value[:chars])[:-1]}…{repr(value)[0]} ({len(value):,} characters)"
    text = repr(value)
    if len(text) <= chars:
        return text
    size = f", {len(value):,} items" if isinstance(value, list | dict | tuple) else ""
    return f"{text[:chars]}… ({type(value).__name__}{size})"


def bounded(message: str, limit: int = MAX_ERROR_CHARS) -> str:
    """An error message cut to `limit` characters (the last boundary: whatever made it, it stays short)."""
    if len(message) <= limit:
        return message
    return message[: limit - 1].rstrip() + "…"
