"""Memory in and out: export_memories writes an owner's memory as JSON lines (portability.py has the
format), import_memories reads them back, and import_conversations replays a ChatGPT or Claude export
(chat_exports.py) through add_turn.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

import anyio

from mcp_memory import safety
from mcp_memory.llm.embedder import embed_passages, memory_vectors
from mcp_memory.models import Memory, Scope, utcnow
from mcp_memory.search.context import thread_contexts
from mcp_memory.security.spaces import stored_bytes_quota
from mcp_memory.service import portability
from mcp_memory.service.chat_exports import ChatFormat, Conversation, parse_conversations
from mcp_memory.service.contexts import TurnContextKeeper
from mcp_memory.service.parts import ServiceParts
from mcp_memory.service.thread_requests import ThreadRequests
from mcp_memory.service.turns import TurnPath
from mcp_memory.storage.usage import refuse_without_room, revision_bytes
from mcp_memory.views import ConversationImport, ExportResult, ImportResult


@dataclass
class ImportExport:
    parts: ServiceParts
    contexts: TurnContextKeeper
    turns: TurnPath  # a conversation's messages are added as turns
    thread_requests: ThreadRequests  # and its title as the thread's data

    async def export_memories(self, user_id: str) -> ExportResult:
        # Observations leave inside the graph line (portability.py), with the entity they belong to.
        memories = [
            m for m in await self.parts.stores.long_term.memories_of(user_id) if m.type != "observation"
        ]
        graph = await self.parts.graph.read_graph(user_id) if self.parts.graph is not None else None
        revisions = await portability.revisions_of(self._revision_store(), user_id, memories)
        threads = []
        for info in await self.parts.stores.working.list_threads(user_id):
            memory = await self.parts.stores.working.get(user_id, info.thread_id)
            if memory is not None:
                threads.append(memory)
        lines = portability.export_lines(user_id, memories, revisions, threads, graph)
        counts = json.loads(lines[0])["counts"]
        return ExportResult(
            format=portability.EXPORT_FORMAT, lines=len(lines), counts=counts, jsonl="\n".join(lines) + "\n"
        )

    async def import_memories(self, user_id: str, jsonl: str, dry_run: bool = False) -> ImportResult:
        parsed = portability.parse(jsonl)
        if self.parts.settings.security.redact_secrets:  # before anything is stored: see redaction/
            parsed = await anyio.to_thread.run_sync(portability.redacted, parsed)
        # An observation comes with its entity in the graph line, under an id of the importer's own.
        memories = [
            m
            for m in portability.to_memories(user_id, parsed, self.parts.settings.max_content_chars)
            if m.type != "observation"
        ]
        result = ImportResult(
            dry_run=dry_run,
            memories=len(memories),
            by_type=dict(Counter(m.type for m in memories)),
            revisions=len(parsed.revisions),
            threads=len(parsed.threads),
            flagged=sum(1 for m in memories if safety.FLAGS_KEY in m.metadata),
            imported_at=utcnow(),
        )
        if not dry_run and parsed.graph is not None and self.parts.graph is not None:
            graph = parsed.graph.model_dump(by_alias=True)
            await self.parts.graph.create_entities(user_id, graph["entities"], limited=False)
            await self.parts.graph.create_relations(user_id, graph["relations"], limited=False)
        if dry_run or not memories:
            return result
        # Imported turns are found by the turns around them too, as turns added one by one are.
        turns = [m for m in memories if m.type == "turn" and m.thread_id is not None]
        contexts = thread_contexts(turns, **self.contexts.reach())
        for turn in turns:
            turn.index_context = contexts[turn.id]
        for start in range(0, len(memories), 64):
            batch = memories[start : start + 64]
            vectors = await embed_passages(self.parts.embedder, [m.content for m in batch])
            for memory, passage_vectors in zip(batch, vectors, strict=True):
                memory.embedding, memory.passage_embeddings = memory_vectors(passage_vectors)
                memory.token_count = self.parts.tokens.count(memory.content)
        async with self.parts.audit.change(user_id, "import", tool="import_memories") as record:
            record.seal((m.id for m in memories), result.by_type)
            await self._store_import(user_id, parsed, memories)
        for thread in parsed.threads:
            rebuilt = await self.parts.threads.from_long_term(
                user_id, thread.thread_id, thread.context_window
            )
            if rebuilt is not None:
                rebuilt.data = thread.data
                await self.parts.stores.working.restore(rebuilt)  # only when the thread is not live already
        await self.parts.changed(user_id, None)
        return result

    async def _store_import(
        self, user_id: str, parsed: portability.ParsedImport, memories: list[Memory]
    ) -> None:
        """History first, then one put of every memory: the put checks the whole import against the
        storage quota with the history already counted, so a refused import takes its history back and
        leaves nothing behind."""
        store: Any = self._revision_store()
        history = await portability.pending_revisions(store, user_id, parsed, memories)
        size = sum(revision_bytes(r.content, r.source_text) for r in history)
        limit = stored_bytes_quota(self.parts.settings.security)
        await refuse_without_room(self.parts.stores.long_term, user_id, size, limit)  # before any write
        for revision in history:
            await store.append(revision)
        try:
            await self.parts.stores.long_term.put(memories)
        except BaseException:
            with anyio.CancelScope(shield=True):
                for memory_id in dict.fromkeys(r.memory_id for r in history):  # they had none before
                    await store.forget(Scope(user_id=user_id, memory_id=memory_id))
            raise

    async def import_conversations(
        self, user_id: str, text: str, source: ChatFormat, *, dry_run: bool = False
    ) -> ConversationImport:
        """A ChatGPT or Claude export (service/chat_exports.py) as threads of turns at their original
        times, through add_turn (so threads are summarized and learned from as if they had happened
        here). A message imported before (its metadata.source_id is in the thread) is skipped, so a
        second import of the same export adds nothing and a later export adds only what is new."""
        conversations = parse_conversations(text, source)
        report = ConversationImport(format=source, conversations=len(conversations))
        if dry_run:
            report.messages = sum(len(c.messages) for c in conversations)
            return report
        # Many turns: one record of them all, written when the import ends (audit/log.py).
        async with self.parts.audit.change(user_id, "import", tool="import_conversations", at_end=True):
            await self._import_conversations(user_id, conversations, source, report)
        report.skipped = report.messages - report.imported
        return report

    async def _import_conversations(
        self, user_id: str, conversations: list[Conversation], source: ChatFormat, report: ConversationImport
    ) -> None:
        for conversation in conversations:
            report.messages += len(conversation.messages)
            if not conversation.messages:
                continue
            thread = conversation.thread_id
            known = await self.parts.stores.long_term.recent(user_id, thread, limit=1_000_000)
            done = {m.metadata.get("source_id") for m in known}
            floor = known[-1].created_at if known else None
            new = [m for m in conversation.messages if m.source_id not in done]
            for message in new:
                # Times never go back within a thread (add_turn's rule); a message without one takes
                # the one before it, or the conversation's.
                said_at = message.created_at or floor or conversation.created_at or utcnow()
                floor = max(said_at, floor) if floor is not None else said_at
                await self.turns.add_turn(
                    user_id,
                    thread,
                    message.role,
                    message.content,
                    {"source": source, "source_id": message.source_id},
                    created_at=floor,
                )
            if new:
                report.threads += 1
                report.imported += len(new)
                if conversation.title:  # redacted there, as each message is in add_turn
                    await self.thread_requests.set_thread_data(
                        user_id, thread, {"title": conversation.title, "source": source}
                    )

    def _revision_store(self) -> object | None:
        # Revisions live in learning's store when learning is on, else in the backend's own, if any.
        return getattr(self.parts.learning, "revisions", None) or getattr(
            self.parts.stores, "revisions", None
        )
