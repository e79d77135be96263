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
