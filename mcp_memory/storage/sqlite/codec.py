"""How datetimes and vectors are written in SQLite, in one place so every query agrees."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np


def ts(value: datetime) -> str:
    """A fixed-width UTC timestamp: sorts as text in time order (isoformat() drops zero microseconds)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def parse_ts(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def pack_vector(vector: list[float] | None) -> bytes | None:
    # Packed float32, as simonw/llm stores them: 4 bytes a dimension, read back with one frombuffer.
    return None if vector is None else np.asarray(vector, dtype=np.float32).tobytes()


def unpack_vector(blob: bytes | None) -> np.ndarray | None:
    return None if blob is None else np.frombuffer(blob, dtype=np.float32)


def pack_vectors(vectors: list[list[float]] | None) -> bytes | None:
    """A long memory's passage vectors: rows of float32, one after another."""
    return None if vectors is None else np.asarray(vectors, dtype=np.float32).tobytes()


def unpack_passages(embedding: bytes | None, passages: bytes | None) -> np.ndarray | None:
    """A memory's vectors as rows, one a passage: its passages' if it has several, else its one."""
    first = unpack_vector(embedding)
    if first is None:
        return None
    if passages is None:
        return first.reshape(1, -1)
    return np.frombuffer(passages, dtype=np.float32).reshape(-1, first.size)
