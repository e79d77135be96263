"""Tolerant reading of a model's JSON answers: fences, prose around the object, loose field names.

Tolerant about form, strict about substance: an answer whose shape cannot be recognised raises
MalformedAnswerError (the caller skips the whole batch and stores nothing); a single unusable item in an
otherwise good answer is dropped with a log line.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any, Literal

from pydantic import BaseModel

from mcp_memory.errors import MalformedAnswerError

log = logging.getLogger(__name__)

FactKind = Literal["semantic", "preference", "procedural", "episodic"]
FACT_KINDS: tuple[FactKind, ...] = ("semantic", "preference", "procedural", "episodic")
_KIND_ALIASES: dict[str, FactKind] = {
    "fact": "semantic",
    "semantic_fact": "semantic",
    "knowledge": "semantic",
    "preferences": "preference",
    "like": "preference",
    "dislike": "preference",
    "procedure": "procedural",
    "how-to": "procedural",
    "howto": "procedural",
    "instruction": "procedural",
    "event": "episodic",
    "episode": "episodic",
    "plan": "episodic",
}
_FENCE = re.compile(r"```[\w-]*\s*\n?(.*?)```", re.DOTALL)
_MAX_FACT_CHARS = 1000


class ExtractedFact(BaseModel):
    text: str
    kind: FactKind
    confidence: float
    source_turns: list[int]  # 0-based positions in the batch's turns


class ExtractedEntity(BaseModel):
    name: str
    type: str


class ExtractedRelation(BaseModel):
    source: str
    target: str
    type: str


class ReconcileGroup(BaseModel):
    kind: Literal["duplicate", "contradiction"]
    ids: list[str]
    merged: str | None = None


def json_object(answer: str) -> dict[str, Any]:
    """The one JSON object in an answer: bare, fenced, or surrounded by prose."""
    candidates = [answer.strip(), *(m.strip() for m in _FENCE.findall(answer))]
    start, end = answer.find("{"), answer.rfind("}")
    if 0 <= start < end:
        candidates.append(answer[start : end + 1])
    for text in candidates:
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
        if isinstance(value, list):  # a bare list of items: the object's only field
            return {"items": value}
    raise MalformedAnswerError(f"no JSON object in the answer (starts {answer[:80]!r})")


def _items(document: dict[str, Any], *names: str) -> list[Any]:
    for name in (*names, "items"):
        value = document.get(name)
        if isinstance(value, list):
            return value
    raise MalformedAnswerError(
        f"the JSON object has no list named {names[0]!r} (keys: {sorted(document)[:8]})"
    )


def parse_facts(answer: str, turn_ids: list[str]) -> list[ExtractedFact]:
    """The facts of an extraction answer. turn_ids are the labels shown to the model (T1, T2, ...)."""
    facts = []
    for item in _items(json_object(answer), "facts", "memories"):
        fact = _fact(item, turn_ids)
        if fact is None:
            log.info("extraction answer item skipped (unusable): %.120r", item)
        else:
            facts.append(fact)
    return facts


_GRAPH_NAME_CHARS = 200


def parse_graph(answer: str) -> tuple[list[ExtractedEntity], list[ExtractedRelation]]:
    """The entities and relations an extraction answer names beside its facts (both optional: an answer
    without them has none). An unusable item is skipped, as an unusable fact is."""
    document = json_object(answer)
    entities = []
    for item in document.get("entities") or []:
        name, kind = _graph_text(item, "name"), _graph_text(item, "type", "entityType")
        if name and kind:
            entities.append(ExtractedEntity(name=name, type=kind))
    relations = []
    for item in document.get("relations") or []:
        source, target = _graph_text(item, "from", "source"), _graph_text(item, "to", "target")
        kind = _graph_text(item, "type", "relationType")
        if source and target and kind:
            relations.append(ExtractedRelation(source=source, target=target, type=kind))
    return entities, relations


def _graph_text(item: Any, *names: str) -> str | None:
    """A one-line name from the item, or None when it has none usable."""
    if not isinstance(item, dict):
        return None
    for name in names:
        value = item.get(name)
        if isinstance(value, str):
            text = " ".join(value.split())
            if text and len(text) <= _GRAPH_NAME_CHARS:
                return text
    return None


def _fact(item: Any, turn_ids: list[str]) -> ExtractedFact | None:
    if isinstance(item, str):
        item = {"text": item}
    if not isinstance(item, dict):
        return None
    text = next((item[k] for k in ("text", "fact", "memory", "content") if isinstance(item.get(k), str)), "")
    text = " ".join(text.split())
    if not text or len(text) > _MAX_FACT_CHARS:
        return None
    raw_kind = str(item.get("type", item.get("kind", "semantic"))).strip().lower()
    kind = raw_kind if raw_kind in FACT_KINDS else _KIND_ALIASES.get(raw_kind, "semantic")
    return ExtractedFact(
        text=text,
        kind=kind,
        confidence=_confidence(item.get("confidence", 0.7)),
        source_turns=_sources(item.get("source", item.get("sources", item.get("turns", []))), turn_ids),
    )


def _confidence(value: Any) -> float:
    if isinstance(value, str):
        value = {"high": 0.9, "medium": 0.6, "low": 0.3}.get(value.strip().lower(), value.strip().rstrip("%"))
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.5
    if number > 1.0:  # a percentage
        number /= 100.0
    return min(1.0, max(0.0, number))


def _sources(value: Any, turn_ids: list[str]) -> list[int]:
    values = value if isinstance(value, list) else [value]
    found: list[int] = []
    for v in values:
        label = str(v).strip().upper()
        if label in turn_ids:
            index = turn_ids.index(label)
        elif label.isdigit() and 1 <= int(label) <= len(turn_ids):
            index = int(label) - 1
        else:
            continue
        if index not in found:
            found.append(index)
    return found


def parse_groups(answer: str, fact_ids: list[str]) -> list[ReconcileGroup]:
    """The duplicate/contradiction groups of a reconcile answer; ids the model made up are dropped."""
    groups = []
    claimed: set[str] = set()
    for item in _items(json_object(answer), "groups", "decisions"):
        if not isinstance(item, dict):
            continue
        kind = str(item.get("kind", item.get("type", ""))).strip().lower()
        kind = {"duplicates": "duplicate", "merge": "duplicate", "contradict": "contradiction",
                "contradictions": "contradiction", "conflict": "contradiction"}.get(kind, kind)  # fmt: skip
        ids = [str(i).strip().upper() for i in item.get("ids", []) if isinstance(i, str | int)]
        # A memory belongs to one group at most: the first claim wins.
        ids = [i for i in dict.fromkeys(ids) if i in fact_ids and i not in claimed]
        if kind not in ("duplicate", "contradiction") or len(ids) < 2:
            log.info("reconcile answer group skipped (unusable): %.120r", item)
            continue
        merged = item.get("merged")
        merged_text = " ".join(merged.split()) if isinstance(merged, str) and merged.strip() else None
        groups.append(ReconcileGroup(kind=kind, ids=ids, merged=merged_text))
        claimed.update(ids)
    return groups
