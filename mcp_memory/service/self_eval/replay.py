"""The user's sessions replayed into a throw-away store, asked at each first prompt as the hook asks.

In a temporary data directory (removed after), on the embedded backends and the local embedder with no
chat model (nothing is sent anywhere, the user's own data directory is never opened), everything the
sessions hold is stored in time order, with the ids and times the hooks give it (service/capture.py).
At a session's first prompt, before anything of the session is stored and once the store has settled
(every turn embedded, every summary written, as a person asking later would find it), the recall is asked
for as the resident server asks it (mcp/hook_routes.py): HookRecall.session_start, then HookRecall.prompt,
with the client's own cap; what the hook injects is both answers.

Scored without labels (identifiers.py says what an identifier is): the identifiers the session's work
needed from earlier sessions are those of its replies and tool calls (its final replies, the commands it
ran, the files it wrote, its subagents' results, as captured) that an earlier session of the same project
mentions (as stored before this prompt) and that none of the session's own prompts mentions (what the person
typed came from them, not from memory). Found: those the injected text mentions. A session is asked only
when its project has an earlier session in the store.
"""

from __future__ import annotations

import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from mcp_memory.audit import Actor, acting
from mcp_memory.config import (
    EmbeddingSettings,
    LLMSettings,
    LongTermSettings,
    ObservabilitySettings,
    Settings,
    WorkingSettings,
)
from mcp_memory.hooks.clients import CAP_CHARS
from mcp_memory.hooks.gemini import without_injected
from mcp_memory.hooks.transcripts import Captured
from mcp_memory.service.assembly import open_service
from mcp_memory.service.capture import HookCapture
from mcp_memory.service.hook_recall import HookRecall
from mcp_memory.service.memory_service import MemoryService
from mcp_memory.service.self_eval.history import RecordedSession, moment
from mcp_memory.service.self_eval.identifiers import identifiers, mentions

WORK_KINDS = frozenset({"reply", "observation", "subagent"})  # what the agent did, as captured
Progress = Callable[[int, int], None]  # (steps done, steps in all)


@dataclass(frozen=True)
class Answer:
    """What the hook would have injected at one session's first prompt, within one budget."""

    budget: int
    injected: str
    tokens: int
    ms: float  # wall time of the two recall calls together
    found: tuple[str, ...]


@dataclass(frozen=True)
class Scored:
    session: RecordedSession
    needed: tuple[str, ...]
    answers: tuple[Answer, ...]  # one per budget, in the order asked


def replay_settings(settings: Settings, data_dir: Path) -> Settings:
    """The user's settings, on a throw-away embedded store with the local embedder and no chat model:
    nothing leaves the machine, whatever backends and providers the user configured."""
    return settings.model_copy(
        update={
            "data_dir": data_dir,
            "working": WorkingSettings(backend="sqlite"),
            "long_term": LongTermSettings(backend="sqlite"),
            "embedding": EmbeddingSettings(
                provider="local", threads=settings.embedding.threads, parallel=settings.embedding.parallel
            ),
            "llm": LLMSettings(),
            "observability": ObservabilitySettings(),
            # Spaces are the user's real shared spaces: in the replay every session is the user's own.
            "hooks": settings.hooks.model_copy(update={"spaces": {}}),
        }
    )


async def replay(
    settings: Settings,
    sessions: Sequence[RecordedSession],
    budgets: Sequence[int],
    progress: Progress | None = None,
) -> list[Scored]:
    """Replay `sessions` (any order) and score each one asked, at every budget."""
    with tempfile.TemporaryDirectory(prefix="mcp-memory-eval-") as directory:
        replayed = replay_settings(settings, Path(directory))
        async with open_service(replayed) as service:
            return await _Replay(service, replayed.user_id, budgets).run(sessions, progress)


@dataclass
class _Step:
    at: datetime
    session: int
    items: list[Captured]  # what to store; none: ask at the session's first prompt


class _Replay:
    def __init__(self, service: MemoryService, user_id: str, budgets: Sequence[int]) -> None:
        self.service = service
        self.user_id = user_id
        self.budgets = list(budgets)
        self.recall = HookRecall(service, user_id)
        self.capture = HookCapture(service, user_id, on_thread=self.recall.thread_added)
        self.stored: dict[str, dict[str, set[str]]] = defaultdict(dict)  # project key -> session -> mentions
        self.unsettled: set[str] = set()  # threads stored since the store last settled

    async def run(self, sessions: Sequence[RecordedSession], progress: Progress | None) -> list[Scored]:
        steps = _steps(sessions)
        scored = []
        for done, step in enumerate(steps, 1):
            session = sessions[step.session]
            if step.items:
                await self._store(session, step.items)
            elif self.stored[session.project.key].keys() - {session.session_id}:
                scored.append(await self._ask(session))
            if progress is not None:
                progress(done, len(steps))
        return scored

    async def _store(self, session: RecordedSession, items: list[Captured]) -> None:
        entry = {
            "client": session.client,
            "kind": "session_end",
            "session_id": session.session_id,
            "project": {"id": session.project.id, "key": session.project.key},
            "cwd": session.cwd,
        }
        with acting(Actor(self.user_id, client=f"hooks:{session.client}")):
            await self.capture.store_items(entry, items)
        self.unsettled.add(session.project.thread_id(session.session_id))
        said = self.stored[session.project.key].setdefault(session.session_id, set())
        said |= mentions(item.content for item in items)

    async def _settled(self) -> None:
        if self.service.vectors is not None:
            await self.service.vectors.caught_up()
        for thread_id in sorted(self.unsettled):
            await self.service.summary_settled(self.user_id, thread_id)
        self.unsettled.clear()

    async def _ask(self, session: RecordedSession) -> Scored:
        await self._settled()
        prompt = session.first_prompt
        assert prompt is not None  # only sessions with a typed prompt have an ask step
        earlier: set[str] = set()
        for other, said in self.stored[session.project.key].items():
            if other != session.session_id:
                earlier |= said
        typed = mentions(item.content for item in session.items if item.kind == "prompt")
        work = set().union(*(identifiers(i.content) for i in session.items if i.kind in WORK_KINDS))
        needed = tuple(sorted(x for x in work if x in earlier and x not in typed))
        text = without_injected(prompt.content)
        cap = CAP_CHARS.get(session.client, 10_000)
        answers = []
        for budget in self.budgets:
            with acting(Actor(self.user_id, client=f"hooks:{session.client}")):
                began = time.perf_counter()
                # Each budget asks as a new session would: a session's first prompt gets the brief once.
                recall = replace(self.recall, _briefed={})
                brief = await recall.session_start(session.project, session.session_id, budget, cap)
                answer = await recall.prompt(session.project, session.session_id, text, budget, cap)
                ms = (time.perf_counter() - began) * 1000
            injected = "\n\n".join(part for part in (brief, answer) if part)
            shown = mentions([injected])
            answers.append(
                Answer(
                    budget=budget,
                    injected=injected,
                    tokens=self.service.tokens.count(injected) if injected else 0,
                    ms=ms,
                    found=tuple(x for x in needed if x in shown),
                )
            )
        return Scored(session, needed, tuple(answers))


def _steps(sessions: Sequence[RecordedSession]) -> list[_Step]:
    """Every session's items in time order, a run of one session's items stored at once; each first
    prompt asked before anything stored at its time or after."""
    timed: list[tuple[datetime, int, int, Captured | None]] = []
    for n, session in enumerate(sessions):
        at = session.started
        first = session.first_prompt
        for item in session.items:
            at = moment(item.time) or at
            timed.append((at, 1, n, item))
            if item is first:
                timed.append((at, 0, n, None))
    timed.sort(key=lambda step: step[:3])
    steps: list[_Step] = []
    for at, _, n, stored in timed:
        if stored is None:
            steps.append(_Step(at, n, []))
        elif steps and steps[-1].session == n and steps[-1].items:
            steps[-1].items.append(stored)
        else:
            steps.append(_Step(at, n, [stored]))
    return steps
