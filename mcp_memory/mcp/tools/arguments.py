"""Argument types several tool families share (their descriptions are part of the tool schemas)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

ThreadId = Annotated[str, Field(description="Conversation id (letters, digits, . _ : -; up to 128).")]
ThreadRef = Annotated[
    str, Field(description="Conversation id.")
]  # a thread that exists: its alphabet is known
WriteSpace = Annotated[
    str | None,
    Field(description="Shared space (writer role); omit for yours."),
]
ReadSpace = Annotated[
    str | None,
    Field(description="Only this shared space; omit: yours and all your spaces."),
]
ThreadSpace = Annotated[
    str | None,
    Field(description="The thread's shared space; omit for yours."),
]
MemoryTypes = Annotated[
    list[str] | None,
    Field(description="Only these: turn, summary, fact, user_summary, observation."),
]
