"""Turns get their vectors after they are acknowledged, not before.

Embedding a turn is most of what add_turn costs with the local model (bench/latency.py), and nothing a
client is told depends on the vector. So with an in-process embedder and a store that accepts vectors
late (storage.base.LateVectors, the SQLite store), add_turn stores the turn without one and hands it
here; a background task embeds the waiting turns in batches and writes their vectors.

What a client can rely on (read-your-writes):
- by text at once: the turn is in the store, and so in the BM25 index, when add_turn returns;
- by meaning as soon as its vector exists: a search that ranks by vector first waits for the user's
  turns still being embedded in this process (`settled`), so a search right after add_turn finds the
  turn by meaning too. Another process finds it by meaning once the vector is written (a few ms).
Closing drains the queue before the store closes; turns left without a vector by a crash are embedded
again when the service next opens.

A long turn (search/passages.py) is embedded in two steps: its first passage with the turns queued beside
it, which is what a search waits for, then its other passages in the background, a few at a time and
only while no turn waits for its first vector, so a search's query never waits long behind a pasted file.
Until then the turn is found by its first passage's meaning and by all of its words. Closing does not
wait for those later passages; a turn left without them is embedded whole again at the next start.

The queue is bounded (BACKLOG turns): past it, add_turn waits for room. Turns acknowledged faster than
they can be embedded would otherwise pile up, in memory and in the wait of every search by meaning
(a single user adding 190 turns/s over HTTP made a search wait 14 s for the backlog).
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import anyio

from mcp_memory.llm.embedder import BackgroundEmbedder, Embedder
from mcp_memory.models import Memory
from mcp_memory.observability.metrics import Metrics
from mcp_memory.search.passages import passages
from mcp_memory.storage.base import LateVectors

log = logging.getLogger(__name__)

BATCH = 16  # turns embedded and written together when they queue up faster than one at a time
# Turns waiting for a vector before add_turn waits too: a burst of a few hundred (a conversation replayed)
# is acknowledged at once, and a search by meaning waits at most for this many (1-2 s of the local model).
BACKLOG = 256
RECOVERED_AT_START = 10_000  # turns left without a vector by a crash, embedded again at start
LATER_CALL = 4  # a long turn's later passages embedded per call: what a query may wait behind


class VectorWriter:
    def __init__(
        self, embedder: Embedder, store: LateVectors, backlog: int = BACKLOG, metrics: Metrics | None = None
    ) -> None:
        self._embedder = embedder
        self._store = store
        self._metrics = metrics
        # Each turn with when it was queued (time.monotonic), for the metrics' embedding wait.
        self._send, self._receive = anyio.create_memory_object_stream[tuple[Memory, float]](
            max_buffer_size=math.inf
        )
        self._pending: Counter[str] = Counter()  # user id -> turns queued or being embedded
        self._settled: dict[str, anyio.Event] = {}
        self._backlog = backlog
        self._room = anyio.Event()  # set when the queue falls below the backlog again
        # Long turns whose first passage has its vector, waiting for the others: (turn, first vector).
        self._later: list[tuple[Memory, list[float]]] = []
        self._more_later = anyio.Event()
        self._quiet = anyio.Event()  # set while no turn waits for its first vector
        self._quiet.set()
        self.later_done = 0  # long memories whose later passages were written, since start
        self._later_busy = False  # a long turn's later passages taken off _later, not yet written
        self._caught_up = anyio.Event()  # set, then replaced, whenever a batch or a long turn is done

    @classmethod
    @asynccontextmanager
    async def running(
        cls, embedder: Embedder, store: LateVectors, *, backlog: int = BACKLOG, metrics: Metrics | None = None
    ) -> AsyncIterator[VectorWriter]:
        writer = cls(embedder, store, backlog, metrics)
        for turn in await store.unembedded_turns(RECOVERED_AT_START):
            writer._enqueue(turn)  # before the writer runs: the backlog does not hold them back
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(writer._run)
            later = anyio.CancelScope()
            tasks.start_soon(writer._run_later, later)
            try:
                yield writer
            finally:
                writer._send.close()  # _run writes what is queued, then ends
                later.cancel()  # later passages are not waited for: the next start embeds them

    @property
    def waiting(self) -> int:
        """Turns queued or being embedded, of every user."""
        return self._pending.total()

    @property
    def backlog(self) -> int:
        """How many may wait before add_turn waits too."""
        return self._backlog

    async def add(self, turn: Memory) -> None:
        """Embed this stored turn and write its vector, soon; first wait while the backlog is full."""
        while self._pending.total() >= self._backlog:
            if self._room.is_set():
                self._room = anyio.Event()
            await self._room.wait()
        self._enqueue(turn)

    def _enqueue(self, turn: Memory) -> None:
        self._pending[turn.user_id] += 1
        self._quiet = anyio.Event() if self._quiet.is_set() else self._quiet
        self._send.send_nowait((turn, time.monotonic()))

    def pending(self, user_id: str) -> int:
        """This user's turns queued or being embedded."""
        return self._pending[user_id]

    async def settled(self, user_id: str) -> None:
        """Return once none of this user's turns waits for its vector."""
        while self._pending[user_id] > 0:
            event = self._settled.setdefault(user_id, anyio.Event())
            await event.wait()

    async def caught_up(self) -> None:
        """Return once no turn waits for its vector and no long turn for its later passages: what a
        replay (`mcp-memory eval`) waits for before it asks, as a person asking later would find it."""
        while self._pending.total() or self._later or self._later_busy:
            await self._caught_up.wait()

    def _done_some(self) -> None:
        self._caught_up.set()
        self._caught_up = anyio.Event()

    async def _run(self) -> None:
        async with self._receive:
            async for first in self._receive:
                batch = [first]
                while len(batch) < BATCH:
                    try:
                        batch.append(self._receive.receive_nowait())
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                with anyio.CancelScope(shield=True):  # a batch taken off the queue is written whole
                    await self._write(batch)

    async def _write(self, queued: Sequence[tuple[Memory, float]]) -> None:
        batch = [turn for turn, _ in queued]
        try:
            cuts = [passages(turn.content) for turn in batch]
            # A turn of one passage is embedded whole (its vector as before passages); a long one, its first.
            firsts = [
                turn.content[cut[0].start : cut[0].end] if len(cut) > 1 else turn.content
                for turn, cut in zip(batch, cuts, strict=True)
            ]
            vectors = await self._embedder.embed(firsts)
            by_user: dict[str, dict[str, list[list[float]]]] = defaultdict(dict)
            for turn, cut, vector in zip(batch, cuts, vectors, strict=True):
                by_user[turn.user_id][turn.id] = [vector.tolist()]
                if len(cut) > 1:
                    self._later.append((turn, vector.tolist()))
                    self._more_later.set()
            for user_id, found in by_user.items():
                await self._store.set_embeddings(user_id, found)
            if self._metrics is not None:
                written = time.monotonic()
                for _, queued_at in queued:
                    self._metrics.embedded_after(written - queued_at)
        except Exception:
            # Top boundary of a background task: the turns stay stored and found by their words, and
            # are embedded again at the next start (unembedded_turns).
            log.exception(
                "could not write the vectors of %d turns; they are retried at the next start", len(batch)
            )
        finally:
            for turn in batch:
                self._pending[turn.user_id] -= 1
                if self._pending[turn.user_id] <= 0:
                    del self._pending[turn.user_id]
                    event = self._settled.pop(turn.user_id, None)
                    if event is not None:
                        event.set()
            if self._pending.total() < self._backlog:
                self._room.set()
            if self._pending.total() == 0:
                self._quiet.set()
            self._done_some()

    async def _run_later(self, scope: anyio.CancelScope) -> None:
        """Embed long turns' later passages, a few at a time, while no turn waits for its first vector."""
        with scope:
            while True:
                if not self._later:
                    self._more_later = anyio.Event()
                    await self._more_later.wait()
                    continue
                turn, first = self._later.pop(0)
                self._later_busy = True
                try:
                    rest = await self._later_vectors(turn)
                    with anyio.CancelScope(shield=True):  # written whole once computed
                        await self._store.set_embeddings(turn.user_id, {turn.id: [first, *rest]})
                    self.later_done += 1
                    if not self._later:  # what operators (and bench/beam.py) read to know it caught up
                        log.info(
                            "later passages embedded: %d long memories in all, none waiting", self.later_done
                        )
                except anyio.get_cancelled_exc_class():
                    raise
                except Exception:
                    log.exception(
                        "could not write the later passages of %s; retried at the next start", turn.id
                    )
                finally:
                    self._later_busy = False
                    self._done_some()

    async def _later_vectors(self, turn: Memory) -> list[list[float]]:
        pieces = [turn.content[cut.start : cut.end] for cut in passages(turn.content)[1:]]
        rest: list[list[float]] = []
        for at in range(0, len(pieces), LATER_CALL):
            await self._quiet.wait()  # turns waiting for their first vector go first
            embed = (
                self._embedder.embed_background
                if isinstance(self._embedder, BackgroundEmbedder)
                else self._embedder.embed
            )
            rest += (await embed(pieces[at : at + LATER_CALL])).tolist()
        return rest
