"""bench/hooks.py's subjects and questions: the BEAM conversations or LoCoMo samples replayed (one project
each), each question asked through the hooks, and what add_turn would cost an instructed model instead."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._hook_replay import (
    NAMESPACE,
    RUNS,
    Hooks,
    clean_env,
    found,
    hook_command,
    normalized,
)
from bench.harness import server
from bench.harness.data.beam import Message, Question, conversation_folders, load_conversation
from bench.harness.data.locomo import sample_of
from mcp_memory.llm.tokens import TokenCounter

BEFORE_EXCHANGES = 40
SIDES = ("both", "start", "prompt")  # SessionStart + UserPromptSubmit, and each alone


@dataclass
class Subject:
    """One conversation to replay and question: one project."""

    name: str  # the project is conv-<name>
    sessions: list[list[Message]]
    questions: list[Question]
    texts: dict[int, str]  # message id -> the text the found rule looks for
    labels: dict[int, Any]  # message id -> the evidence as the data names it
    repo: Path = Path()
    replayed: dict[str, Any] = field(default_factory=dict)


def beam_subjects(root: Path, count: int | None) -> list[Subject]:
    """BEAM's conversations: chat.json's batches -> sessions -> messages."""
    subjects = []
    for folder in conversation_folders(root)[:count]:
        conversation = load_conversation(folder)
        by_id = {m.id: m for m in conversation.messages}
        chat = json.loads((folder / "chat.json").read_text())
        sessions = [
            [by_id[int(m["id"])] for m in session] for batch in chat for session in batch["turns"] if session
        ]
        texts = {m.id: m.content for m in conversation.messages}
        subjects.append(
            Subject(conversation.name, sessions, conversation.questions, texts, {i: i for i in texts})
        )
    return subjects


def locomo_subjects(path: Path, count: int | None) -> list[Subject]:
    samples = [sample_of(raw) for raw in json.loads(path.read_text())[:count]]
    return [Subject(s.name, s.sessions, s.questions, s.texts, s.dia_ids) for s in samples]


def subjects_of(dataset: str, data: Path, count: int | None) -> list[Subject]:
    if dataset == "beam":
        if not (data.is_dir() and conversation_folders(data)):
            raise SystemExit(f"{data}: not BEAM's 100K folder (folders holding chat.json)")
        return beam_subjects(data, count)
    if not data.is_file():
        raise SystemExit(f"{data}: not LoCoMo's locomo_dev.json")
    try:
        return locomo_subjects(data, count)
    except (ValueError, KeyError, TypeError) as error:
        raise SystemExit(f"{data}: not LoCoMo's format ({error!r})") from error


def ask(hooks: Hooks, subject: Subject, tokens: TokenCounter, budget: str) -> list[dict[str, Any]]:
    """Each question as a new session's first prompt; its evidence found in what was injected, by each
    rule, from SessionStart and UserPromptSubmit together and each alone."""
    rows = []
    for number, question in enumerate(subject.questions):
        session_id = str(uuid.uuid5(NAMESPACE, f"conv-{subject.name}/question-{number}/{budget}"))
        base = {
            "session_id": session_id,
            "transcript_path": str(subject.repo.parent / f"{session_id}.jsonl"),
            "cwd": str(subject.repo),
            "permission_mode": "default",
        }
        start = hooks.fire("SessionStart", base | {"source": "startup"}, "question")
        prompt = hooks.fire("UserPromptSubmit", base | {"prompt": question.text}, "question")
        texts = {"start": normalized(start), "prompt": normalized(prompt)}
        texts["both"] = texts["start"] + "\n" + texts["prompt"]
        row: dict[str, Any] = {
            "conversation": subject.name,
            "ability": question.ability,
            "question": question.text,
            "evidence": [subject.labels[i] for i in question.evidence],
        }
        for run in RUNS:
            for side in SIDES:
                hits = [i for i in question.evidence if found(subject.texts[i], texts[side], run)]
                row[f"found{run}_{side}"] = len(hits) / len(question.evidence)
        row |= {"tokens_start": tokens.count(start), "tokens_prompt": tokens.count(prompt)}
        row["tokens_both"] = row["tokens_start"] + row["tokens_prompt"]
        rows.append(row)
    return rows


async def add_turn_cost(messages: list[Message], tokens: TokenCounter, work: Path) -> list[dict[str, Any]]:
    """Each message added with add_turn on the real server over stdio, as an instructed model would."""
    command = [hook_command(), "serve", "--in-process"]
    calls = []
    env = clean_env(work / "data", {})
    async with server.stdio(command, env, work, read_timeout=120, stderr_name="serve.stderr") as client:
        for m in messages:
            arguments = {"thread_id": "conversation", "role": m.role, "content": m.content}
            result = await client.call_tool("add_turn", arguments)
            read_back = "".join(getattr(part, "text", "") for part in result.content)
            calls.append(
                {
                    "role": m.role,
                    "message": tokens.count(m.content),
                    "output": tokens.count(json.dumps(arguments)),
                    "input": tokens.count(read_back),
                }
            )
    return calls
