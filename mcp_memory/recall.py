"""How recalled memories are shown to a model: as delimited, attributed data, never as instructions."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .views import SearchHit

_CLOSING_TAG = re.compile(r"<\s*/\s*(memory|recalled_memories)\b[^>]*>", re.IGNORECASE)


def render_memories(hits: Sequence[SearchHit]) -> str:
    if not hits:
        return "(no relevant memories found)"
    blocks = []
    for hit in hits:
        speaker = hit.role or hit.type
        where = f"thread {hit.thread_id}" if hit.thread_id else "all threads"
        # Escape anything that could close our delimiters early (any case or spacing).
        text = _CLOSING_TAG.sub(lambda m: m.group(0).replace("<", "&lt;"), hit.content)
        # Flagged text looked like instructions when written or read: say so next to it.
        flagged = f' flags="{",".join(hit.flags)}"' if hit.flags else ""
        blocks.append(
            f'<memory id="{hit.id}" type="{hit.type}" from="{speaker}" {_attr("where", where)} '
            f'when="{hit.created_at.isoformat()}"{flagged}>\n{text}\n</memory>'
        )
    return "\n".join(blocks)


def _attr(name: str, value: str) -> str:
    return f'{name}="{value.replace(chr(34), "&quot;")}"'
