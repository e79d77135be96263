"""Argument types several tool families share (their descriptions are part of the tool schemas)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

ThreadId = Annotated[
    str, Field(description="Conversation id: 1-128 characters of letters, digits and . _ : -")
]
WriteSpace = Annotated[
    str | None,
    Field(
        description="A shared space to write in (you need the writer role there); omit for your own memory."
    ),
]
ReadSpace = Annotated[
    str | None,
    Field(
        description="Only this shared space; omit for your own memory plus every space you are a member of."
    ),
]
ThreadSpace = Annotated[
    str | None,
    Field(description="The shared space the thread is in; omit for a thread of your own memory."),
]
MemoryTypes = Annotated[
    list[str] | None,
    Field(description="Only these memory types: turn, summary, fact, user_summary, observation."),
]
