"""Three `mcp-memory serve` processes over stdio on one data file, as Claude Desktop, an IDE agent and a
CLI agent of the same user run them: each keeps its own in-memory search indexes, and each must find
what the others wrote, and stop finding what they forgot or corrected, on its very next search.

Every write carries a made-up token of its own (letters and digits the Porter stemmer leaves alone)
among ordinary words, so exactly one memory's content says it, plus a marker token all of them share,
so a search for the marker must return exactly the live memories. A seeded random interleaving of
writes and searches, each on a randomly chosen process, is checked against a model of what must be
findable; the seed is in every failure message (SHARED_FILE_SEED=<seed> replays another one). No
thread is ever summarized (huge context window, few turns a thread), so assertions stay by memory id.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from itertools import permutations
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from mcp import Client

from mcp_memory.search.terms import terms
from tests.services.mcp_client import call
from tests.services.server_process import StdioServer, server_env

pytestmark = pytest.mark.anyio

SEED = int(os.environ.get("SHARED_FILE_SEED", "7340021"))
PROCESSES = 3
OPERATIONS = 240
LOOPS = 20
TURNS_PER_THREAD = 4
CONTEXT_WINDOW = 1_000_000  # far from any threshold: a summary would repeat the turns' tokens
LIMIT = 20  # a turn's token also finds the two turns after it (their indexed context): a few hits at most
WORDS_PER_TEXT = 6
HISTORY_SHOWN = 12
TYPES = ["turn", "fact"]
MAX_LIMIT = 100  # search_memory's largest limit
QUOTED_SHARE = 0.2  # of the interleaving's searches: the token as a "quoted phrase"

# Ordinary words, none a stopword, a month or a weekday (a turn's indexed context holds its date).
WORDS = """
    anchor apple arrow badge bakery balloon bamboo banner barrel basket beacon bicycle blanket
    bottle bracket bridge bucket cabin cactus camera candle canyon carpet castle cellar chimney
    circus cliff clock cobalt compass copper cottage crayon desert diamond dolphin drawer engine
    falcon feather fence ferry fiddle forest fossil fountain garden garlic glacier granite guitar
    hammer harbor helmet hollow island jacket jungle kettle kitten ladder lantern lemon library
    lizard magnet marble meadow mirror mountain napkin needle orchard oyster paddle pancake parrot
    pebble pencil pepper piano pillow pocket pottery puzzle quarry rabbit radish ribbon river
    rocket saddle salmon sandal scarf shovel signal silver sketch sledge spider sponge stable
    statue tablet teapot thimble ticket timber tomato tractor trumpet tunnel turnip umbrella
    velvet violin wagon walnut whistle window wizard yogurt zipper
""".split()

Process = int


@dataclass
class Written:
    """A memory the test wrote, and the token of its own its content carries."""

    id: str
    kind: Literal["turn", "fact"]
    token: str
    content: str
    thread_id: str | None


@dataclass(frozen=True)
class Gone:
    """A token that must find nothing any more: `id` no longer says it (forgotten or corrected)."""

    id: str
    token: str
    why: str


class Texts:
    """Unique tokens and texts around them, from the seeded generator. Every text also carries one
    marker token, shared by all of them: a search for it must return exactly the live memories."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()
        self.marker = self.token()

    def token(self) -> str:
        while True:
            token = "zq" + "".join(self.rng.choice("0123456789abcdef") for _ in range(10))
            if token not in self.used and terms(token) == [token]:  # the stemmer leaves it alone
                self.used.add(token)
                return token

    def text(self, token: str) -> str:
        words = self.rng.sample(WORDS, WORDS_PER_TEXT)
        for made_up in (token, self.marker):  # never first: they stay lower case
            words.insert(self.rng.randrange(1, len(words) + 1), made_up)
        return " ".join(words).capitalize() + "."


async def search(
    client: Client, token: str, *, quoted: bool = False, limit: int = LIMIT
) -> list[dict[str, Any]]:
    """A text search for the token (as a "quoted phrase": only memories whose own content says it).
    Not in the user profile (user_summary): a background job rebuilds it from the facts after a
    forget, so it may or may not hold a fact's words at any given moment."""
    query = f'"{token}"' if quoted else token
    found = await call(client, "search_memory", query=query, mode="text", types=TYPES, limit=limit)
    assert found["mode"] == "text"
    hits: list[dict[str, Any]] = found["results"]
    return hits


@asynccontextmanager
async def processes(server: StdioServer, count: int) -> AsyncIterator[list[Client]]:
    """`count` client connections held open together: `count` server processes on one data dir.

    Each connection lives in a task of its own, so the processes start (seconds of imports each) and
    stop side by side: all at once on a new file, as clients launched together do."""
    clients: dict[int, Client] = {}
    connected = [anyio.Event() for _ in range(count)]
    finished = anyio.Event()

    async def hold(number: int) -> None:
        async with server.connect() as client:
            clients[number] = client
            connected[number].set()
            await finished.wait()

    async with anyio.create_task_group() as group:
        for number in range(count):
            group.start_soon(hold, number)
        for event in connected:
            await event.wait()
        try:
            yield [clients[number] for number in range(count)]
        finally:
            finished.set()


@pytest.fixture
def shared_stdio(tmp_path: Path) -> Iterator[StdioServer]:
    """The stdio command on this test's private data dir; every connect() is one more process on it, in
    process (not relayed to one resident server: several processes on one file is what is tested).
    (A fixture, so a failing test's report carries the processes' stderr.)"""
    server = StdioServer(tmp_path / "work", server_env(tmp_path / "data"), in_process=True)
    try:
        yield server
    finally:
        server.close()


class SharedFile:
    """The connected processes, the model of what each token must find, and the checks against it."""

    def __init__(self, clients: list[Client], seed: int) -> None:
        self.clients = clients
        self.seed = seed
        self.rng = random.Random(seed)
        self.texts = Texts(self.rng)
        self.live: dict[str, Written] = {}  # by id
        self.gone: list[Gone] = []
        self.threads: dict[str, int] = {}  # live thread -> turns added to it
        self.history: list[str] = []
        self.searches = 0

    # ---- failure messages ----------------------------------------------------------------------

    def where(self) -> str:
        shown = "\n  ".join(self.history[-HISTORY_SHOWN:])
        return f"seed {self.seed} (SHARED_FILE_SEED={self.seed} replays it); the last operations:\n  {shown}"

    def note(self, process: Process, what: str) -> None:
        self.history.append(f"#{len(self.history)} process {process}: {what}")

    # ---- checks --------------------------------------------------------------------------------

    def quoted(self, quoting: bool | None) -> bool:
        return self.rng.random() < QUOTED_SHARE if quoting is None else quoting

    async def expect_found(self, process: Process, memory: Written, quoting: bool | None = None) -> None:
        quoted = self.quoted(quoting)
        hits = await search(self.clients[process], memory.token, quoted=quoted)
        self.searches += 1
        ids = [hit["id"] for hit in hits]
        assert memory.id in ids, (
            f"process {process} does not find {memory.kind} {memory.id} by its token {memory.token} "
            f"({'quoted, ' if quoted else ''}found {ids}); {self.where()}"
        )
        hit = next(hit for hit in hits if hit["id"] == memory.id)
        assert hit["content"] == memory.content, (
            f"process {process} returns {memory.id} with content {hit['content']!r}, "
            f"not {memory.content!r}; {self.where()}"
        )
        strays = [hit["id"] for hit in hits if memory.token in hit["content"] and hit["id"] != memory.id]
        assert not strays, (
            f"process {process} returns {strays} carrying {memory.token}, which only {memory.id} says; "
            f"{self.where()}"
        )

    async def expect_gone(self, process: Process, gone: Gone, quoting: bool | None = None) -> None:
        quoted = self.quoted(quoting)
        hits = await search(self.clients[process], gone.token, quoted=quoted)
        self.searches += 1
        ids = [hit["id"] for hit in hits]
        assert gone.id not in ids, (
            f"process {process} still finds {gone.id} by {gone.token}{' (quoted)' if quoted else ''} "
            f"after it was {gone.why}; {self.where()}"
        )
        stale = [hit["id"] for hit in hits if gone.token in hit["content"]]
        assert not stale, (
            f"process {process} returns {stale} with the content {gone.why} ({gone.token}); {self.where()}"
        )

    async def expect_exactly_live(self, process: Process) -> None:
        """The marker, with the number of live memories as the limit, returns every one of them.

        A forgotten row an index still holds takes one of those places (the rows are read from the
        file only after ranking) and leaves one live memory out."""
        if not self.live or len(self.live) > MAX_LIMIT:
            return
        hits = await search(self.clients[process], self.texts.marker, limit=len(self.live))
        self.searches += 1
        found = {hit["id"]: hit["content"] for hit in hits}
        missing = sorted(set(self.live) - set(found))
        extra = sorted(set(found) - set(self.live))
        assert not missing and not extra, (
            f"process {process}: the marker {self.texts.marker} (limit {len(self.live)}) misses {missing} "
            f"and returns {extra}, which is not live; {self.where()}"
        )
        changed = [m for m, content in found.items() if content != self.live[m].content]
        assert not changed, f"process {process} returns {changed} with old content; {self.where()}"

    def verifiers(self, writer: Process) -> list[Process]:
        """Another process than the writer; sometimes all of them."""
        if self.rng.random() < 0.25:
            return list(range(len(self.clients)))
        return [self.rng.choice([p for p in range(len(self.clients)) if p != writer])]

    # ---- writes --------------------------------------------------------------------------------

    async def add_turn(
        self, process: Process, thread_id: str | None = None, token: str | None = None
    ) -> Written:
        if thread_id is None:
            open_threads = [t for t, turns in self.threads.items() if turns < TURNS_PER_THREAD]
            if open_threads and self.rng.random() < 0.7:
                thread_id = self.rng.choice(sorted(open_threads))
            else:
                thread_id = f"shared-{len(self.history):03d}-{self.rng.getrandbits(32):08x}"
        token = token or self.texts.token()
        role = self.rng.choice(["user", "assistant"])
        content = self.texts.text(token)
        added = await call(
            self.clients[process],
            "add_turn",
            thread_id=thread_id,
            role=role,
            content=content,
            context_window=CONTEXT_WINDOW,
        )
        assert not added["summarized"], f"nothing may be summarized here; {self.where()}"
        self.threads[thread_id] = self.threads.get(thread_id, 0) + 1
        # add_turn answers the id, not the text: the searches check the content stored is the one sent.
        written = Written(added["id"], "turn", token, content, thread_id)
        self.live[written.id] = written
        self.note(process, f"add_turn {written.id} ({token}) to {thread_id}")
        return written

    async def remember(
        self, process: Process, thread_id: str | None = None, token: str | None = None
    ) -> Written:
        token = token or self.texts.token()
        content = self.texts.text(token)
        arguments: dict[str, Any] = {"content": content}
        if thread_id is not None:
            arguments["thread_id"] = thread_id
        fact = await call(self.clients[process], "remember", **arguments)
        # Distinct words: neither the exact nor the near-duplicate dedup may fold it into another fact.
        assert fact["action"] == "created" and fact["type"] == "fact", f"{fact}; {self.where()}"
        assert fact["id"] not in self.live and fact.get("thread_id") == thread_id, f"{fact}; {self.where()}"
        # remember answers without the text sent: the searches check the content stored is this one.
        written = Written(fact["id"], "fact", token, content, thread_id)
        self.live[written.id] = written
        self.note(process, f"remember {written.id} ({token}) in thread {thread_id}")
        return written

    async def update(self, process: Process, fact: Written) -> tuple[Written, Gone]:
        token = self.texts.token()
        content = self.texts.text(token)
        view = await call(self.clients[process], "update_memory", memory_id=fact.id, content=content)
        assert view["id"] == fact.id, f"{view}; {self.where()}"
        read = await self.clients[process].read_resource(f"memory://memories/{fact.id}")
        stored = json.loads(read.contents[0].text)  # type: ignore[union-attr]
        assert stored["content"] == content and fact.token not in stored["content"], self.where()
        old = Gone(fact.id, fact.token, f"corrected by update_memory on process {process}")
        fact.token, fact.content = token, content
        self.gone.append(old)
        self.note(process, f"update_memory {fact.id}: {old.token} -> {token}")
        return fact, old

    async def forget_memory(self, process: Process, memory: Written) -> Gone:
        forgotten = await call(self.clients[process], "forget", memory_id=memory.id)
        assert forgotten["scope"] == "memory" and not forgotten["dry_run"]
        assert forgotten["long_term"]["memories"] == 1, f"{forgotten}; {self.where()}"
        del self.live[memory.id]
        old = Gone(memory.id, memory.token, f"forgotten (memory_id) on process {process}")
        self.gone.append(old)
        self.note(process, f"forget memory_id={memory.id} ({memory.token})")
        return old

    async def forget_thread(self, process: Process, thread_id: str) -> list[Gone]:
        members = [m for m in self.live.values() if m.thread_id == thread_id]
        forgotten = await call(self.clients[process], "forget", thread_id=thread_id)
        assert forgotten["scope"] == "thread" and not forgotten["dry_run"]
        assert forgotten["long_term"]["memories"] == len(members), (
            f"forget(thread_id={thread_id}) deleted {forgotten['long_term']}, the model holds "
            f"{[m.id for m in members]}; {self.where()}"
        )
        self.threads.pop(thread_id, None)
        olds = []
        for member in members:
            del self.live[member.id]
            olds.append(
                Gone(member.id, member.token, f"forgotten with thread {thread_id} on process {process}")
            )
        self.gone.extend(olds)
        self.note(process, f"forget thread_id={thread_id} ({len(members)} memories)")
        return olds

    # ---- the random interleaving ---------------------------------------------------------------

    async def step(self) -> None:
        process = self.rng.randrange(len(self.clients))
        facts = sorted((m for m in self.live.values() if m.kind == "fact"), key=lambda m: m.id)
        memories = sorted(self.live.values(), key=lambda m: m.id)
        threads = sorted({m.thread_id for m in memories if m.thread_id is not None})
        roll = self.rng.random()
        if roll < 0.34 or not memories:
            written = await self.add_turn(process)
            for verifier in self.verifiers(process):
                await self.expect_found(verifier, written)
        elif roll < 0.60:
            thread = self.rng.choice(threads) if threads and self.rng.random() < 0.4 else None
            written = await self.remember(process, thread)
            for verifier in self.verifiers(process):
                await self.expect_found(verifier, written)
        elif roll < 0.72 and facts:
            written, old = await self.update(process, self.rng.choice(facts))
            for verifier in self.verifiers(process):
                await self.expect_gone(verifier, old)
                await self.expect_found(verifier, written)
        elif roll < 0.82:
            old = await self.forget_memory(process, self.rng.choice(memories))
            for verifier in self.verifiers(process):
                await self.expect_gone(verifier, old)
        elif roll < 0.86 and threads:
            olds = await self.forget_thread(process, self.rng.choice(threads))
            for verifier in self.verifiers(process):
                for old in olds:
                    await self.expect_gone(verifier, old)
        else:  # a search on its own: a live token, one that must find nothing any more, or the marker
            if self.rng.random() < 0.25:
                self.note(process, f"search_memory {self.texts.marker} (the marker: every live memory)")
                await self.expect_exactly_live(process)
            elif self.gone and self.rng.random() < 0.3:
                gone = self.rng.choice(self.gone)
                self.note(process, f"search_memory {gone.token} (gone: {gone.id})")
                await self.expect_gone(process, gone)
            else:
                memory = self.rng.choice(memories)
                self.note(process, f"search_memory {memory.token} (live: {memory.id})")
                await self.expect_found(process, memory)

    async def check_everything(self) -> None:
        """Every live token on every process finds its memory; every gone one finds nothing."""
        self.note(-1, "final check of every token on every process")
        for process in range(len(self.clients)):
            await self.expect_exactly_live(process)
            for memory in sorted(self.live.values(), key=lambda m: m.id):
                await self.expect_found(process, memory, quoting=False)
            for gone in self.gone:
                await self.expect_gone(process, gone, quoting=False)


async def test_random_writes_on_three_processes_are_found_by_the_others(shared_stdio: StdioServer) -> None:
    async with processes(shared_stdio, PROCESSES) as clients:
        shared = SharedFile(clients, SEED)
        for _ in range(OPERATIONS):
            await shared.step()
        await shared.check_everything()
    kinds = {kind: sum(m.kind == kind for m in shared.live.values()) for kind in ("turn", "fact")}
    # Not vacuous: every kind of write happened, and the file still holds memories of both kinds.
    done = " ".join(shared.history)
    for operation in ("add_turn", "remember", "update_memory", "forget memory_id", "forget thread_id"):
        assert operation in done, f"the interleaving never ran {operation}; seed {SEED}"
    assert kinds["turn"] and kinds["fact"] and shared.gone, f"{kinds}, {len(shared.gone)} gone; seed {SEED}"
    assert shared_stdio.stderr().count("memory service ready") == PROCESSES
    assert "Traceback" not in shared_stdio.stderr()


async def test_a_process_that_just_searched_sees_the_next_write_of_another(
    shared_stdio: StdioServer,
) -> None:
    """Reader searches (its index is current), writer writes, reader searches again at once: a turn, a
    fact, a correction of that fact, then a forget (every other time of the newest row: the next
    write may reuse its rowid)."""
    pairs = list(permutations(range(PROCESSES), 2))  # every (reader, writer), roles alternating
    async with processes(shared_stdio, PROCESSES) as clients:
        shared = SharedFile(clients, SEED)
        turns: list[Written] = []
        facts: list[Written] = []
        for loop in range(LOOPS):
            reader, writer = pairs[loop % len(pairs)]
            match loop % 4:
                case 0 | 1 as kind:
                    # The reader looks for the token first: nothing yet, and its index is current.
                    token = shared.texts.token()
                    shared.note(reader, f"search_memory {token} (not written yet)")
                    assert await search(clients[reader], token) == [], shared.where()
                    if kind == 0:
                        written = await shared.add_turn(writer, f"loop-{loop:02d}", token)
                        turns.append(written)
                    else:
                        written = await shared.remember(writer, token=token)
                        facts.append(written)
                    await shared.expect_found(reader, written)
                    if shared.gone:  # what the last forget or correction removed stays removed
                        await shared.expect_gone(reader, shared.gone[-1])
                case 2:
                    fact = facts[-1]
                    await shared.expect_found(reader, fact)
                    fact, old = await shared.update(writer, fact)
                    await shared.expect_gone(reader, old)
                    await shared.expect_found(reader, fact)
                case _:
                    victim = facts.pop() if loop // 4 % 2 == 0 else turns.pop(0)
                    await shared.expect_found(reader, victim)
                    old = await shared.forget_memory(writer, victim)
                    await shared.expect_gone(reader, old)
                    await shared.expect_exactly_live(reader)
        await shared.check_everything()
    assert "Traceback" not in shared_stdio.stderr()
