"""Forgetting: one memory, a thread, or everything of an owner, with a receipt of what went from each
store; and forget_user, a person's memory and what they wrote in every space. Who may forget what in a
space is decided here (docs/security.md).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TypeGuard

from mcp_memory import validation as check
from mcp_memory.audit import COMMAND_ACTOR, Draft
from mcp_memory.errors import InvalidInputError, NotFoundError, PermissionDeniedError, shown
from mcp_memory.models import Memory, Owner, Scope, space_key, space_of, utcnow
from mcp_memory.security.spaces import SPACES_FILE
from mcp_memory.service.contexts import TurnContextKeeper
from mcp_memory.service.parts import ServiceParts
from mcp_memory.views import ForgetResult, LongTermForgetView, WorkingForgetView


@dataclass
class Forgetting:
    parts: ServiceParts
    contexts: TurnContextKeeper

    async def forget(
        self,
        user_id: str,
        memory_id: str | None = None,
        thread_id: str | None = None,
        everything: bool = False,
        dry_run: bool = False,
    ) -> ForgetResult:
        """The forget tool's: the scope deleted, erased from the disk before it answers (or said to be
        pending), and said in words (`note`), nothing matched included."""
        result = await self._forget(user_id, memory_id, thread_id, everything, dry_run)
        return await self._finished(result, thread_id)

    async def _forget(
        self,
        user_id: str,
        memory_id: str | None = None,
        thread_id: str | None = None,
        everything: bool = False,
        dry_run: bool = False,
    ) -> ForgetResult:
        named = [n for n, v in (("memory_id", memory_id), ("thread_id", thread_id)) if v is not None]
        if everything:
            named.append("everything")
        if len(named) != 1:
            raise InvalidInputError(
                "forget takes exactly one scope: memory_id, thread_id or everything=true"
                + (f" (got {' and '.join(named)})" if named else "")
            )
        memory: Memory | None = None
        if memory_id is not None:
            memory = await self.parts.stores.long_term.get(user_id, check.memory_id(memory_id))
            _may_forget(user_id, memory)
            scope = Scope(user_id=user_id, memory_id=memory.id, thread_id=memory.thread_id)
            kind = "memory"
        elif _a_writer_in_a_space(user_id):  # a thread or everything: their own part of it
            thread = None if thread_id is None else check.thread_id(thread_id)
            return await self._forget_own_part(user_id, thread, dry_run)
        elif thread_id is not None:
            scope = Scope(user_id=user_id, thread_id=check.thread_id(thread_id))
            kind = "thread"
        else:
            scope = Scope(user_id=user_id, everything=True)
            kind = "everything"

        if scope.thread_id is not None and not dry_run:
            await self.parts.summary_settled(user_id, scope.thread_id)  # not written after the forget
        if dry_run:
            return await self._forget_scope(scope, kind, memory, dry_run=True)
        async with self.parts.audit.change(
            user_id, "forget", thread_id=scope.thread_id, tool="forget"
        ) as record:
            result = await self._forget_scope(scope, kind, memory, dry_run=False)
            record.note([scope.memory_id] if scope.memory_id else (), result.long_term.by_type)
        if kind == "everything" and space_of(user_id) is None:
            # Nothing of them stays: their personal trail keeps its shape under their pseudonym.
            await self.parts.audit.pseudonymize(user_id, own_trail_only=True)
        return result

    async def _forget_scope(
        self, scope: Scope, kind: str, memory: Memory | None, *, dry_run: bool
    ) -> ForgetResult:
        """Removes (or, with dry_run, counts) what the scope names (`memory`: the one memory it names)."""
        user_id = scope.user_id
        summary_memory = memory if memory is not None and memory.type == "summary" else None
        one_turn = memory is not None and memory.type == "turn" and memory.thread_id is not None
        async with self.contexts.lock(user_id, scope.thread_id) if one_turn else contextlib.nullcontext():
            around = (
                await self.contexts.turns_around(memory)
                if memory is not None and one_turn and not dry_run
                else []
            )
            working = await self.parts.stores.working.forget(scope, dry_run=dry_run)
            long_term = await self.parts.stores.long_term.forget(scope, dry_run=dry_run)
            if around and memory is not None:  # the turns whose context held the forgotten turn's words
                await self.contexts.rewrite(user_id, self.contexts.without(around, memory))
        if self.parts.learning is not None:
            await self.parts.learning.forgotten(scope, dry_run=dry_run)  # revisions go too
        graph = (
            await self.parts.graph.forgotten(scope, dry_run=dry_run) if self.parts.graph is not None else 0
        )
        if summary_memory is not None and summary_memory.thread_id and not dry_run:
            await self.parts.threads.clear_summary(user_id, summary_memory.thread_id)
        if not dry_run:
            await self.parts.changed(user_id, scope.thread_id if kind != "everything" else None)
            if kind != "memory":
                await self.parts.changed(user_id, None)
        return ForgetResult(
            scope=kind,
            dry_run=dry_run,
            working_memory=WorkingForgetView(threads=working.threads, messages=working.messages),
            long_term=LongTermForgetView(memories=sum(long_term.values()), by_type=long_term),
            stores={
                f"working memory ({self.parts.settings.working.resolved_backend})": working.messages,
                f"long term ({self.parts.settings.long_term.resolved_backend})": sum(long_term.values()),
                f"knowledge graph ({self.parts.settings.long_term.resolved_backend})": graph,
            },
            forgotten_at=utcnow(),
        )

    async def forget_user(self, user_id: str, *, dry_run: bool = False) -> ForgetResult:
        """forget_user: everything of the user's personal memory and, in every configured space, what
        they wrote (their turns, the facts they remembered), each thread's summary that their turns went
        into (rebuilt from the turns that remain at its next summarization) and the working memory of
        those threads; what others wrote, and what the server learned in a space, stay (docs/security.md).
        One receipt for all of it. The spaces are the ones every request sees (the cached reader of
        security/spaces.py: a broken edit of the spaces file keeps the last good one)."""
        async with self._audited(user_id, "forget_user", dry_run) as record:
            result = await self._forget(user_id, everything=True, dry_run=dry_run)
            record.note(counts=result.long_term.by_type)
        for space in SPACES_FILE.spaces(self.parts.settings.security):
            written = await self._written_by(space_key(space.name), user_id)
            if not written:
                continue
            async with self._audited(space_key(space.name), "forget_user", dry_run) as record:
                record.seal((m.id for m in written), dict(Counter(m.type for m in written)))
                for memory in written:
                    with contextlib.suppress(NotFoundError):  # forgotten meanwhile, or with its summary
                        _merge(result, await self._forget(space_key(space.name), memory.id, dry_run=dry_run))
        if not dry_run:
            await self.parts.audit.pseudonymize(user_id)  # the trail keeps its shape; the chain verifies
        return await self._finished(result, None)

    async def _finished(self, result: ForgetResult, thread_id: str | None) -> ForgetResult:
        """Erase what was deleted from the SQLite file's disk pages and log (storage/sqlite/erasure.py),
        then say in the receipt what happened."""
        local_file = self.parts.stores.local_file
        if not result.nothing_matched and not result.dry_run and local_file is not None:
            result.pending = not await local_file.erase_forgotten()
        result.note = _note(result, thread_id, erased=local_file is not None)
        return result

    def _audited(self, ledger: str, action: str, dry_run: bool) -> AbstractAsyncContextManager[Draft]:
        """The change's audit record; a dry run changes nothing and records nothing."""
        if dry_run:
            return contextlib.nullcontext(Draft(ledger=ledger, actor=COMMAND_ACTOR, action=action))
        return self.parts.audit.change(ledger, action)

    async def _written_by(self, key: str, user_id: str) -> list[Memory]:
        """What the user wrote in the space under `key`, and the summaries of the threads they spoke in."""
        return _part_of(await self.parts.stores.long_term.memories_of(key), user_id)

    async def _forget_own_part(self, writer: Owner, thread_id: str | None, dry_run: bool) -> ForgetResult:
        """A writer's forget of a thread (or of everything) in a space: what they wrote there (turns,
        facts, observations) and the summaries their turns went into, rebuilt from the turns that remain
        at the thread's next summarization, as forget_user does. What others wrote stays, counted in the
        receipt; an owner's forget removes everything instead."""
        memories = await self.parts.stores.long_term.memories_of(writer)
        in_scope = [m for m in memories if thread_id is None or m.thread_id == thread_id]
        theirs = _part_of(in_scope, writer.author)
        receipt = _receipt("thread" if thread_id is not None else "everything", dry_run)
        async with self._audited(writer, "forget", dry_run) as record:
            record.thread_id = thread_id
            record.seal((m.id for m in theirs), dict(Counter(m.type for m in theirs)))
            for memory in theirs:
                with contextlib.suppress(NotFoundError):  # forgotten meanwhile, or with its summary
                    _merge(receipt, await self._forget(str(writer), memory.id, dry_run=dry_run))
        gone = {m.id for m in theirs}
        receipt.left_by_others = dict(Counter(m.type for m in in_scope if m.id not in gone))
        return receipt


def _may_forget(key: str, memory: Memory) -> None:
    """In a space, a writer forgets one memory only if they wrote it; anyone's needs the owner role. (A
    thread or everything by a writer is their own part of it: _forget_own_part. A reader never gets
    here: writing needs the writer role.)"""
    if not _a_writer_in_a_space(key) or memory.author == key.author:
        return
    raise PermissionDeniedError(
        f"forgetting memory {shown(memory.id)}, which {_by(memory)} in space {shown(key.space)} needs the owner "
        f"role; you are a {key.role} there and may forget only what you wrote"
    )


def _by(memory: Memory) -> str:
    if memory.author is None:
        return "the server wrote"
    return f"{memory.author} wrote"


def _merge(receipt: ForgetResult, more: ForgetResult) -> None:
    receipt.working_memory.threads += more.working_memory.threads
    receipt.working_memory.messages += more.working_memory.messages
    receipt.long_term.memories += more.long_term.memories
    for kind, count in more.long_term.by_type.items():
        receipt.long_term.by_type[kind] = receipt.long_term.by_type.get(kind, 0) + count
    for store, count in more.stores.items():
        receipt.stores[store] = receipt.stores.get(store, 0) + count


def _note(result: ForgetResult, thread_id: str | None, *, erased: bool) -> str:
    """The receipt in words: what was (or, in a dry run, would be) deleted, or that nothing matched."""
    what = {"thread": f"thread {thread_id!r}", "everything": "everything"}.get(result.scope, "the memory")
    if result.nothing_matched:
        where = {"thread": f"no thread {thread_id!r} here", "everything": "nothing is stored here"}
        return f"Nothing matched: {where.get(result.scope, 'no such memory')}; nothing was deleted."
    counted = (
        f"{_plural(result.long_term.memories, 'memory', 'memories')} and "
        f"{_plural(result.working_memory.messages, 'working-memory message', 'working-memory messages')}"
    )
    others = sum((result.left_by_others or {}).values())
    kept = f"; {_plural(others, 'memory', 'memories')} written by others stay" if others else ""
    if result.dry_run:
        return f"Dry run: forgetting {what} would delete {counted}{kept}; nothing was changed."
    if result.pending:
        disk = (
            " It is still on disk while another process reads the data file: erased in the background as "
            "soon as that stops (logged)."
        )
    else:
        disk = " Nothing of it is left on disk." if erased else ""
    return f"Forgot {what}: deleted {counted}{kept}.{disk}"


def _plural(n: int, one: str, many: str) -> str:
    return f"1 {one}" if n == 1 else f"{n:,} {many}"


def _receipt(scope: str, dry_run: bool) -> ForgetResult:
    """A receipt with nothing in it yet, for forgets made of several."""
    return ForgetResult(
        scope=scope,
        dry_run=dry_run,
        working_memory=WorkingForgetView(threads=0, messages=0),
        long_term=LongTermForgetView(memories=0, by_type={}),
        forgotten_at=utcnow(),
    )


def _part_of(memories: list[Memory], author: str) -> list[Memory]:
    """What `author` wrote among `memories`, and the summaries of the threads their turns are in."""
    written = [m for m in memories if m.author == author]
    threads = {m.thread_id for m in written if m.type == "turn" and m.thread_id}
    return written + [m for m in memories if m.type == "summary" and m.thread_id in threads]


def _a_writer_in_a_space(key: str) -> TypeGuard[Owner]:
    return isinstance(key, Owner) and key.space is not None and not key.may("owner")
