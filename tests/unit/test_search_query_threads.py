"""SearchQuery.threads: a search limited to a set of threads (a project's coding sessions), for the
service's own use. Checked by SearchQuery.of; never a search_memory argument (the tool's arguments are a
public contract). The stores' filtering is in the contract suite (tests/contract/test_long_term_contract.py)."""

from __future__ import annotations

import pytest
from mcp import Client

from mcp_memory.config import Settings
from mcp_memory.errors import InvalidInputError
from mcp_memory.search.hybrid import row_filter
from mcp_memory.search.query import MAX_THREADS, SearchQuery

pytestmark = pytest.mark.anyio


def test_threads_are_checked_kept_in_order_once_and_read_in_the_first_owner_s_memory(
    settings: Settings,
) -> None:
    query = SearchQuery.of(["alice", "@team"], "deploy", threads=["p.b", "p.a", "p.b"], settings=settings)

    assert query.threads == ("p.b", "p.a")
    assert query.owners == ("alice",)  # a thread is one owner's, as with thread_id
    assert row_filter(query).threads == ("p.b", "p.a")
    assert SearchQuery.of("alice", "deploy", threads=[], settings=settings).threads == ()
    unrestricted = SearchQuery.of(["alice", "@team"], "deploy", settings=settings)
    assert unrestricted.threads is None and unrestricted.owners == ("alice", "@team")
    assert row_filter(unrestricted).threads is None


@pytest.mark.parametrize(
    ("threads", "message"),
    [
        (["p.a", "no spaces"], "threads 'no spaces' is not valid"),
        ("p.a", "not one string"),
        ([f"p.{i}" for i in range(MAX_THREADS + 1)], f"at most {MAX_THREADS}"),
    ],
)
def test_bad_threads_are_refused_by_name(settings: Settings, threads: object, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        SearchQuery.of("alice", "deploy", threads=threads, settings=settings)  # type: ignore[arg-type]


def test_the_most_threads_are_accepted(settings: Settings) -> None:
    threads = [f"p.{i}" for i in range(MAX_THREADS)]
    assert SearchQuery.of("alice", "deploy", threads=threads, settings=settings).threads == tuple(threads)


async def test_search_memory_takes_no_threads_argument(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert "threads" not in tools["search_memory"].input_schema["properties"]
