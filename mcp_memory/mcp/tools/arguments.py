"""Argument types several tool families share (their descriptions are part of the tool schemas)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

ThreadId = Annotated[str, Field(description="Conversation id (letters, digits, . _ : -; up to 128).")]
WriteSpace = Annotated[
    str | None,
    Field(description="A shared space to write in (writer role); omit for your own memory."),
]
ReadSpace = Annotated[
    str | None,
    Field(description="Only this shared space; omit for yours plus every space you are in."),
]
ThreadSpace = Annotated[
    str | None,
    Field(description="The shared space the thread is in; omit for your own."),
]
MemoryTypes = Annotated[
    list[str] | None,
    Field(description="Only these types: turn, summary, fact, user_summary, observation."),
]
