"""Who said it, and standing instructions (search/intent.py), through the service with the real local
embedding model: in a technical thread the assistant restates the user's facts at length, and a rule
the user set long ago belongs beside the question it covers."""

from __future__ import annotations

import pytest

from mcp_memory.search import intent
from mcp_memory.search.query import SearchQuery
from mcp_memory.service.memory_service import MemoryService

pytestmark = pytest.mark.anyio

USER = "tester"
THREAD = "budget-app"

REPLY = (
    "Great, a sprint that ends on March 29 gives you two weeks for the first sprint. Here is how I would "
    "split the first sprint so it ends on time: week one covers the Flask routes for registration and "
    "login, with password hashing through werkzeug.security and a sessions table in SQLite; week two "
    "covers transactions (add income, add expense, list) and a first chart. Keep the sprint review on "
    "March 29 short: demo the login and the transaction list, then plan sprint two. "
) * 3

TURNS = [
    ("user", "Always include unit tests with pytest when I ask about parsing files."),
    ("assistant", "Understood: every parsing answer will come with pytest tests."),
    ("user", "Heads up: sprint one wraps up on March 29, review that afternoon."),
    ("assistant", REPLY),
    ("user", "How should I lay out the Flask blueprints for auth and transactions?"),
    ("assistant", "Use one blueprint per area: auth for login and registration, tx for transactions. " * 4),
    ("user", "I need to parse the bank's CSV export into transactions."),
    ("assistant", "Read the CSV export with csv.DictReader and map each row to a Transaction. " * 6),
    ("user", "The CSV parser breaks on quoted commas in the description column."),
    ("assistant", "Quoted commas are handled by the csv module if you pass the file object directly. " * 6),
]


@pytest.fixture
async def thread(model_service: MemoryService) -> tuple[MemoryService, list[str]]:
    ids = []
    for role, text in TURNS:
        ids.append((await model_service.add_turn(USER, THREAD, role, text, None, 100_000)).turn.id)
    if model_service.vectors is not None:  # ranked once embedded: a search waits at most vector_wait_ms
        await model_service.vectors.settled(USER)
    return model_service, ids


async def _ranked(service: MemoryService, query: str) -> list[str]:
    return [
        hit.id
        for hit in (
            await service.search(
                SearchQuery.of(USER, query, thread_id=THREAD, limit=5, settings=service.settings)
            )
        ).results
    ]


async def test_a_first_person_question_finds_the_users_words_before_the_reply_restating_them(
    thread: tuple[MemoryService, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    service, ids = thread
    assert (await _ranked(service, "When does my first sprint end?"))[0] == ids[2]
    # What the rule changes: weighed alike, the long reply that says "sprint" most ranks first.
    monkeypatch.setattr(intent, "ASSISTANT_WEIGHT", 1.0)
    assert (await _ranked(service, "When does my first sprint end?"))[0] == ids[3]


async def test_asking_what_the_assistant_said_finds_the_reply(
    thread: tuple[MemoryService, list[str]],
) -> None:
    service, ids = thread
    assert (await _ranked(service, "How did you suggest splitting the first sprint?"))[0] == ids[3]


async def test_a_standing_instruction_comes_up_beside_the_question_it_covers(
    thread: tuple[MemoryService, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    service, ids = thread
    query = "How is a CSV file parsed?"
    assert ids[0] in (await _ranked(service, query))[:3]
    monkeypatch.setattr(intent, "RULE_WEIGHT", 1.0)
    assert ids[0] not in (await _ranked(service, query))[:3]
