"""Conversations replayed as Claude Code sessions through the installed hooks (BEAM's development
conversations, or LoCoMo's): what the hooks store, what they inject, how long each event takes, and what
memory costs the model.

    .venv/bin/python bench/hooks.py ../shared/data/beam/100K                  # the ten dev conversations
    .venv/bin/python bench/hooks.py ../shared/data/locomo/locomo_dev.json --dataset locomo
    .venv/bin/python bench/hooks.py ../shared/data/beam/100K --conversations 3 --budget 1000,500,1500
    .venv/bin/python bench/hooks.py ../shared/data/beam/100K --work ../bench-data/beam10    # keep the store

Run times on 2 shared cores, both budgets, two runs side by side: BEAM's first conversation 333 s in all
(its replay 223 s; 18 questions), LoCoMo's first 503 s (its replay 239 s; 150 questions). The whole BEAM
split's replay, ~4,400 hook events, took about an hour when the bench was written. Asking a kept store
again (`--work`) skips the replay: BEAM's first conversation 79 s, the same figures.

Each conversation (the first N with `--conversations N`) is one project: a temporary git repository
whose remote is https://github.com/bench/conv-<name>.git. Each of its sessions is one Claude Code session,
its transcript written as Claude Code writes it (a user entry and an assistant text entry per message,
chained by uuid, timestamped with the message's date), and the installed command `mcp-memory hook
claude-code --event <Event>` run as Claude Code runs it, a new process per event with the JSON payload on
stdin: SessionStart (source startup) at the session's start; per exchange UserPromptSubmit with the
prompt (before the prompt is in the transcript), then the user and assistant entries appended, then Stop
(last_assistant_message, stop_hook_active false); SessionEnd at its end. One private data dir for the
whole run (MCP_MEMORY_DATA_DIR, user `bench`, the default local ONNX embedder): projects must stay apart
in one store, as for one person. Before the replay a SessionStart in a scratch directory starts the
resident server (its time is reported alone).

BEAM (`--dataset beam`, the default; the 100K folder): its sessions as chat.json holds them, each
message dated by its time anchor plus a minute per message; the questions: every probing question that
names its evidence (every ability but abstention). LoCoMo (`--dataset locomo`; locomo_dev.json, five
conversations): bench/harness/data/locomo.py. Speaker A is the user and speaker B the assistant; each turn one
message "Name: text" (the questions name the people), dated by its session's time plus a minute per turn.
No session has two turns of one speaker in a row, so each of A's turns is a prompt and B's next turn its
reply; a session B opens starts with B's turn as a reply with no prompt (its Stop fires without a
UserPromptSubmit; the capture stores it as a reply). The questions: categories 1-4 with evidence dia_ids
(the few misspelt ones read, the one naming no turn of the conversation dropped).

Then, once the spool is empty and the server has embedded every passage, each question is asked as a new
session's first prompt in its project: SessionStart, then UserPromptSubmit with the question; the
injected context is what both print as hookSpecificOutput.additionalContext. Small talk ("hi", "thanks!",
"ok") is sent as a prompt in each project. Each budget (`--budget`, default 1500,800): the resident server
is stopped and restarted with MCP_MEMORY_HOOKS__BUDGET_TOKENS set to it and every question asked again;
the replay runs at the first.

An evidence message counts as found when a run of it is in the injected text, both lowercased and their
whitespace collapsed, by two rules reported side by side: 30 consecutive words of the message (a passage
the model can use) and 8 (a mention); a message no longer than the run counts when all of it is there
(for LoCoMo, the turn's text without the name). A question's evidence found = the share of its evidence
messages found; reported per ability and overall, for SessionStart + UserPromptSubmit and for each alone.
Injected tokens: tiktoken o200k_base, p50 / p95 over the questions. Hook wall time: each subprocess,
process start included, per event, without the events that (re)start the resident server.

The model's tokens spent on memory per exchange, before the hooks: a model that follows the server's
instructions calls add_turn for the prompt and for its reply; it writes the call's JSON arguments
(output tokens) and reads the result back (input tokens: the result's text content). Measured on the
real `mcp-memory serve` over stdio (the MCP SDK's Client, a fresh data dir) for the first 40 exchanges
of the first conversation. With the hooks: 0 output tokens; input = what UserPromptSubmit injected for
those same exchanges during the replay (SessionStart's injection once per session, reported beside).

Also checked: every prompt and reply replayed is stored once (turns per session thread in the store),
and every turn keeps its transcript's time (turns dated otherwise: `capture_time`). `--flush-race` fires
each Stop before its exchange's replies are in the transcript and appends them right after, as Claude Code
can (its Stop hook may run before the transcript is written); `--capture-only` stops after that check:

    .venv/bin/python bench/hooks.py ../shared/data/beam/100K --conversations 1 --capture-only --flush-race

`--work DIR` keeps the replay: DIR/data (the store), DIR/projects/conv-<name>, DIR/replayed.json (what
the replay injected and stored); a later run with the same DIR skips the replay and asks the store again,
and `--hook-command` asks it with another checkout's mcp-memory (a base to compare with).

Prints markdown tables; `--json` writes everything (default bench/results/hooks.json). Cite BEAM when
reporting: Tavakoli et al., "Beyond a Million Tokens: Benchmarking and Enhancing Long-Term Memory in
LLMs", arXiv 2510.27246; LoCoMo: Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM
Agents", ACL 2024, arXiv 2402.17753. The data is read from the path given, never copied.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import _hook_replay as replaying
from bench._hook_replay import (
    EVENTS,
    NAMESPACE,
    RUNS,
    SMALL_TALK,
    Fired,
    Hooks,
    capture_check,
    clean_env,
    exchanges,
    found,
    hook_command,
    normalized,
    project_repo,
    replay,
    small_talk,
)
from bench.harness.data.beam import Message, Question, conversation_folders, load_conversation
from bench.harness.data.locomo import sample_of
from bench.harness.timing import percentile
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


# ---- the questions -------------------------------------------------------------------------------------


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


# ---- the model's tokens before the hooks ----------------------------------------------------------------


async def add_turn_cost(messages: list[Message], tokens: TokenCounter, work: Path) -> list[dict[str, Any]]:
    """Each message added with add_turn on the real server over stdio, as an instructed model would."""
    params = StdioServerParameters(
        command=hook_command(), args=["serve", "--in-process"], env=clean_env(work / "data", {}), cwd=work
    )
    calls = []
    with (work / "serve.stderr").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120) as client:
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


# ---- the report ----------------------------------------------------------------------------------------


def found_table(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The mean share of evidence found, by each rule and side (found30_both, found8_start, ...), overall
    and per ability."""
    by_ability: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_ability[row["ability"]].append(row)

    def means(group: list[dict[str, Any]]) -> dict[str, float]:
        keys = [f"found{run}_{side}" for run in RUNS for side in SIDES]
        return {key: statistics.fmean(r[key] for r in group) for key in keys} | {"n": len(group)}

    return {"overall": means(rows), "by_ability": {a: means(g) for a, g in sorted(by_ability.items())}}


def tokens_row(rows: list[dict[str, Any]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for side in SIDES:
        values = [r[f"tokens_{side}"] for r in rows]
        out |= {f"{side}_p50": percentile(values, 0.5), f"{side}_p95": percentile(values, 0.95)}
    return out


def rules(row: dict[str, Any], side: str) -> str:
    """'0.316 / 0.540': the 30-word rule's share, then the 8-word rule's."""
    return " / ".join(f"{row[f'found{run}_{side}']:.3f}" for run in RUNS)


def report(results: dict[str, Any]) -> None:
    words = " / ".join(str(run) for run in RUNS)
    print(f"\n{results['setup']}\n\nEvidence found: runs of {words} words.\n")
    print(
        "| budget | found, SessionStart + prompt | SessionStart alone | UserPromptSubmit alone "
        "| injected tokens p50 / p95 | SessionStart p50 / p95 | UserPromptSubmit p50 / p95 |"
    )
    print("|---:|---:|---:|---:|---|---|---|")
    for budget, run in results["budgets"].items():
        o, t = run["found"]["overall"], run["tokens"]
        print(
            f"| {budget} | {rules(o, 'both')} | {rules(o, 'start')} | {rules(o, 'prompt')} | {t['both_p50']:.0f} / "
            f"{t['both_p95']:.0f} | {t['start_p50']:.0f} / {t['start_p95']:.0f} | {t['prompt_p50']:.0f} / "
            f"{t['prompt_p95']:.0f} |"
        )
    for budget, run in results["budgets"].items():
        print(
            f"\nBy {results['ability']} (budget {budget}; runs of {words} words):\n\n| {results['ability']} | n "
            "| SessionStart + prompt | SessionStart | UserPromptSubmit |\n|---|---:|---:|---:|---:|"
        )
        table = run["found"]
        for ability, row in [*table["by_ability"].items(), ("**overall**", table["overall"])]:
            print(
                f"| {ability} | {row['n']} | {rules(row, 'both')} | {rules(row, 'start')} | "
                f"{rules(row, 'prompt')} |"
            )
    print("\n| event | n | p50 ms | p95 ms | max ms |\n|---|---:|---:|---:|---:|")
    for event, row in results["wall_time"].items():
        print(f"| {event} | {row['n']} | {row['p50_ms']:.0f} | {row['p95_ms']:.0f} | {row['max_ms']:.0f} |")
    events = ", ".join(f"{ms / 1000:.2f} s" for ms in results["start_events_ms"])
    listening = ", ".join(f"{s:.1f} s" for s in results["server_starts_s"])
    print(
        f"\nResident server (re)starts: the SessionStart that starts it took {events} (hook process); "
        f"the server listened after {listening}"
    )
    print(
        f"Small talk ({', '.join(SMALL_TALK)}): at most {results['small_talk_max_chars']} characters injected"
    )
    print(f"Replay: {results['capture']}; settled {results['settle_s']:.0f} s after the replay")
    c = results["cost"]
    print(
        f"\nModel tokens on memory per exchange (conversation {c['conversation']}, first {c['exchanges']} "
        f"exchanges):\n\n| | output tokens | input tokens |\n|---|---:|---:|"
    )
    print(
        f"| before: add_turn for the prompt and the reply | {c['before_output']:.0f} | {c['before_input']:.0f} |"
    )
    print(f"| after: the hooks (UserPromptSubmit injection) | 0 | {c['after_input']:.0f} |")
    print(
        f"\n(add_turn's result: {c['result_per_call']:.0f} tokens per call for a {c['message_per_call']:.0f}-token "
        f"message on average; SessionStart injected {c['session_start_per_session']:.0f} tokens per session)"
    )


def wall_times(fired: list[Fired]) -> dict[str, dict[str, float]]:
    """Per event, every run but the (re)starts; and per event and phase (the replay: while the server
    stores and embeds what came before; questions and small talk: once it has)."""
    groups: dict[str, list[float]] = defaultdict(list)
    for f in fired:
        if f.phase != "start":
            groups[f.event].append(f.seconds * 1000)
            groups[f"{f.event}, {f.phase}"].append(f.seconds * 1000)
    order = [
        key
        for event in EVENTS
        for key in sorted(groups)
        if key.split(",")[0] == event and (key == event or len(groups[key]) < len(groups[event]))
    ]
    return {
        key: {
            "n": len(groups[key]),
            "p50_ms": percentile(groups[key], 0.5),
            "p95_ms": percentile(groups[key], 0.95),
            "max_ms": max(groups[key]),
        }
        for key in order
    }


def restore(work: Path, subjects: list[Subject], dataset: str) -> dict[str, Any]:
    """A kept replay (--work): each subject's project and what its replay injected; its settle and check."""
    saved = json.loads((work / "replayed.json").read_text())
    if saved.get("dataset", "beam") != dataset:  # written before --dataset: BEAM's
        raise SystemExit(f"{work} holds a replay of {saved.get('dataset', 'beam')}, not {dataset}")
    missing = [s.name for s in subjects if s.name not in saved["replayed"]]
    if missing:
        raise SystemExit(
            f"{work} holds no replay of conversation(s) {', '.join(missing)}; use another --work"
        )
    for subject in subjects:
        subject.repo = work / "projects" / f"conv-{subject.name}"
        subject.replayed = saved["replayed"][subject.name]
    return {"settle_s": saved["settle_s"], "capture": saved["capture"]}


def measure(
    subjects: list[Subject],
    budgets: list[str],
    work: Path,
    tokens: TokenCounter,
    *,
    dataset: str,
    flush_race: bool = False,
    capture_only: bool = False,
) -> dict[str, Any]:
    """Replay every conversation at the first budget, then ask every question at each budget."""

    def env_at(budget: str) -> dict[str, str]:
        setting = {} if budget == "default" else {"MCP_MEMORY_HOOKS__BUDGET_TOKENS": budget}
        return clean_env(work / "data", {"MCP_MEMORY_LOG_LEVEL": "INFO"} | setting)

    hooks = Hooks(work / "data", env_at(budgets[0]))
    out: dict[str, Any] = {"server_starts_s": [], "budgets": {}}
    talk: list[int] = []
    try:
        kept = work / "replayed.json"
        if kept.exists():  # --work with a finished replay: its store is asked again, not replayed
            out |= restore(work, subjects, dataset)
        out["server_starts_s"].append(hooks.start(work / "nowhere"))
        if not kept.exists():
            for subject in subjects:
                subject.repo = project_repo(work / "projects", subject.name)
                began = time.monotonic()
                subject.replayed = replay(
                    hooks, subject.name, subject.sessions, subject.repo, work, flush_race=flush_race
                )
                print(
                    f"conversation {subject.name} replayed in {time.monotonic() - began:.0f} s",
                    file=sys.stderr,
                )
            out["settle_s"] = hooks.settle()
            expected = {t: n for s in subjects for t, n in s.replayed["expected"].items()}
            said = {t for s in subjects for t in s.replayed["said"]}
            out["capture"] = capture_check(hooks.data_dir, expected, said)
            replayed = {s.name: s.replayed for s in subjects}
            kept.write_text(
                json.dumps(
                    {
                        "replayed": replayed,
                        "settle_s": out["settle_s"],
                        "capture": out["capture"],
                        "dataset": dataset,
                    }
                )
            )
        print(f"capture: {json.dumps(out['capture'])}", file=sys.stderr)
        for number, budget in enumerate([] if capture_only else budgets):
            if number:
                hooks.stop()
                hooks.env = env_at(budget)
                out["server_starts_s"].append(hooks.start(work / "nowhere"))
            rows = []
            for subject in subjects:
                rows += ask(hooks, subject, tokens, budget)
                talk += small_talk(hooks, subject.name, subject.repo)
            out["budgets"][budget] = {
                "found": found_table(rows),
                "tokens": tokens_row(rows),
                "questions": rows,
            }
            print(f"budget {budget}: every question asked", file=sys.stderr)
    finally:
        hooks.stop()
    prompt_tokens = [
        tokens.count(i["context"])
        for s in subjects
        for i in s.replayed["injected"]
        if i["event"] == "UserPromptSubmit"
    ]
    return out | {
        "wall_time": wall_times(hooks.fired),
        "start_events_ms": [f.seconds * 1000 for f in hooks.fired if f.phase == "start"],
        "small_talk_max_chars": max(talk, default=0),
        "replay_prompt_tokens": {
            "p50": percentile(prompt_tokens, 0.5),
            "p95": percentile(prompt_tokens, 0.95),
        },
        "fired": [{"event": f.event, "phase": f.phase, "ms": f.seconds * 1000} for f in hooks.fired],
    }


def model_cost(subject: Subject, work: Path, tokens: TokenCounter) -> dict[str, Any]:
    """Before (add_turn by the model) and after (hooks) on the first exchanges of one conversation."""
    messages = [m for session in subject.sessions for m in session]
    firsts = [(p, r) for p, r in exchanges(messages) if p is not None][:BEFORE_EXCHANGES]
    (work / "before").mkdir()
    calls = anyio.run(add_turn_cost, [m for p, r in firsts for m in [p, *r]], tokens, work / "before")
    injected = subject.replayed["injected"]
    prompts = [i for i in injected if i["event"] == "UserPromptSubmit"][: len(firsts)]
    return {
        "conversation": subject.name,
        "exchanges": len(firsts),
        "before_output": sum(c["output"] for c in calls) / len(firsts),
        "before_input": sum(c["input"] for c in calls) / len(firsts),
        "after_input": statistics.fmean(tokens.count(i["context"]) for i in prompts),
        "session_start_per_session": statistics.fmean(
            tokens.count(i["context"]) for i in injected if i["event"] == "SessionStart"
        ),
        "result_per_call": statistics.fmean(c["input"] for c in calls),
        "message_per_call": statistics.fmean(c["message"] for c in calls),
        "calls": calls,
    }


DATASETS = {  # --dataset: what the setup line calls it, and what its questions are grouped by
    "beam": ("BEAM 100K dev", "ability"),
    "locomo": ("LoCoMo dev", "category"),
}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "data", type=Path, help="BEAM's 100K folder (../shared/data/beam/100K) or LoCoMo's locomo_dev.json"
    )
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="beam")
    parser.add_argument("--conversations", type=int, help="the first N conversations (default: all)")
    parser.add_argument(
        "--budget",
        default="1500,800",
        help="MCP_MEMORY_HOOKS__BUDGET_TOKENS, or several (every question asked at each, the replay at the "
        "first; 'default': the setting's default); default 1500,800",
    )
    parser.add_argument("--json", type=Path, default=Path("bench/results/hooks.json"))
    parser.add_argument("--flush-race", action="store_true", help="each Stop before its replies are written")
    parser.add_argument("--capture-only", action="store_true", help="the replay and its capture check only")
    parser.add_argument(
        "--work",
        type=Path,
        help="keep the replay's store here; a later run with the same folder skips the replay and asks again",
    )
    parser.add_argument(
        "--hook-command",
        type=Path,
        help="the mcp-memory to ask with (another checkout's .venv/bin/mcp-memory)",
    )
    args = parser.parse_args()
    budgets = [b.strip() for b in args.budget.split(",") if b.strip()] or ["default"]
    if args.conversations is not None and args.conversations < 1:
        parser.error("--conversations: at least 1")
    subjects = subjects_of(args.dataset, args.data, args.conversations)
    began, load_before = time.monotonic(), os.getloadavg()[0]
    if args.hook_command:
        replaying.HOOK_COMMAND.append(str(args.hook_command.resolve()))
    with contextlib.ExitStack() as stack:
        if args.work:  # kept: a later run with the same --work asks the same store again, without a replay
            work = args.work.resolve()
            work.mkdir(parents=True, exist_ok=True)
            (work / "nowhere").mkdir(exist_ok=True)
            for old in ("before", "tiktoken"):
                shutil.rmtree(work / old, ignore_errors=True)
        else:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mcp-memory-hooks-")))
            (work / "nowhere").mkdir()
        tokens = TokenCounter.load("o200k_base", cache_dir=work / "tiktoken")
        results = measure(
            subjects,
            budgets,
            work,
            tokens,
            dataset=args.dataset,
            flush_race=args.flush_race,
            capture_only=args.capture_only,
        )
        if args.capture_only:
            print(json.dumps(results["capture"]))
            return
        results["cost"] = model_cost(subjects[0], work, tokens)
    label, results["ability"] = DATASETS[args.dataset]
    messages = sum(len(s.texts) for s in subjects)
    sessions = sum(len(s.sessions) for s in subjects)
    questions = sum(len(s.questions) for s in subjects)
    results["setup"] = (
        f"{label}, {len(subjects)} conversations ({messages} messages in {sessions} sessions, {questions} "
        f"questions with evidence); budgets {', '.join(budgets)}; {platform.machine()}, {os.cpu_count()} "
        f"cores, Python {platform.python_version()}; {time.monotonic() - began:.0f} s in all; load average "
        f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    report(results)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
