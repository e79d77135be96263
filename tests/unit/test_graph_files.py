"""memory.jsonl as JavaScript's JSON.stringify writes it, the offline entity extractor, the name matcher
and the conversation-export parsers, without a server."""

from __future__ import annotations

import json
import subprocess

import pytest

from mcp_memory.errors import InvalidInputError
from mcp_memory.learning.entities import EntityMatcher, mentions
from mcp_memory.service.chat_exports import parse_conversations
from mcp_memory.service.graph.files import parse_memory_jsonl, render_memory_jsonl
from mcp_memory.views import EntityView, GraphResult, RelationView
from tests.services.node_service import node

TRICKY = [
    'quotes " and \\ backslashes',
    "new\nline, tab\t, cr\r, bell \x07, nul \x00, del \x7f",
    "unicode: Zoë 日本語 🙂 \u2028 \u2029",
    "lone surrogate \ud800 here",
]


def graph_with(*observations: str) -> GraphResult:
    return GraphResult(
        entities=[EntityView(name="E", entityType="t", observations=list(observations))],
        relations=[RelationView(source="E", to="F", relationType="r")],
    )


def test_lines_are_the_bytes_json_stringify_writes() -> None:
    """Node itself writes the reference: the same objects, the same text."""
    ours = render_memory_jsonl(graph_with(*TRICKY))
    script = (
        "const o = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "process.stdout.write([JSON.stringify({type: 'entity', name: 'E', entityType: 't', observations: o}),"
        "JSON.stringify({type: 'relation', from: 'E', to: 'F', relationType: 'r'})].join('\\n'))"
    )
    payload = json.dumps(TRICKY)  # ASCII escapes: the lone surrogate travels as \\ud800
    theirs = subprocess.run(
        [node("comparing with JSON.stringify"), "-e", script],
        input=payload.encode(),
        capture_output=True,
        check=True,
    ).stdout
    assert ours.encode("utf-8", "surrogatepass") == theirs or ours.encode() == theirs


def test_a_file_reads_back_to_what_wrote_it() -> None:
    text = render_memory_jsonl(graph_with(*TRICKY))
    parsed = parse_memory_jsonl(text)
    assert parsed.entities == [{"name": "E", "entityType": "t", "observations": TRICKY}]
    assert parsed.relations == [{"from": "E", "to": "F", "relationType": "r"}]


def test_lines_of_other_types_are_skipped_and_bad_lines_named() -> None:
    text = '{"type":"entity","name":"A","entityType":"t","observations":[],"extra":1}\n\n{"type":"note"}\n'
    assert parse_memory_jsonl(text).entities == [{"name": "A", "entityType": "t", "observations": []}]
    with pytest.raises(InvalidInputError, match="line 2 is not JSON"):
        parse_memory_jsonl('{"type":"entity","name":"A","entityType":"t","observations":[]}\n{oops')
    with pytest.raises(InvalidInputError, match="line 1: an entity needs"):
        parse_memory_jsonl('{"type":"entity","name":"A","observations":"not a list"}')
    with pytest.raises(InvalidInputError, match="line 1: a relation needs"):
        parse_memory_jsonl('{"type":"relation","from":"A","to":5,"relationType":"r"}')


def test_the_extractor_finds_names_places_and_titles() -> None:
    found = mentions(
        'Ann: Thanks, Melanie! I loved "Charlotte\'s Web". We flew to New York City and met John Smith '
        "at the Museum of Modern Art. I'm so happy. Yesterday was fun."
    )
    assert [(m.name, m.kind) for m in found] == [
        ("Charlotte's Web", "title"),
        ("Ann", "name"),
        ("Melanie", "name"),
        ("New York City", "place"),
        ("John Smith", "name"),
        ("Museum of Modern Art", "name"),
    ]
    assert mentions("The weather is nice. It was a good day, I think.") == []
    assert mentions("Woohoo Melanie! Besides Italy I saw R&R on TV last Fri.")[0].name == "Melanie"


def test_the_matcher_finds_graph_names_in_any_case_on_word_boundaries() -> None:
    matcher = EntityMatcher(["Ada Lovelace", "Go", "C++ Primer", "Zoë"])
    assert matcher.find("ada lovelace wrote; zoë too; let's go!") == ["Ada Lovelace", "Zoë", "Go"]
    assert matcher.find("Adam Lovelacey and google") == []


def test_conversation_exports_that_are_not_the_expected_shape_are_named() -> None:
    with pytest.raises(InvalidInputError, match="not JSON"):
        parse_conversations("{", "chatgpt")
    with pytest.raises(InvalidInputError, match="conversation 1 of the chatgpt export"):
        parse_conversations('[{"title": "no mapping"}]', "chatgpt")
    with pytest.raises(InvalidInputError, match="conversation 2 of the claude export is not an object"):
        parse_conversations('[{"uuid": "u", "chat_messages": []}, 5]', "claude")
