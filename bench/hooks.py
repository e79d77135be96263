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

import contextlib
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import _hook_replay as replaying
from bench._hook_replay import (
    Hooks,
    capture_check,
    clean_env,
    exchanges,
    project_repo,
    replay,
    small_talk,
)
from bench._hooks_report import found_table, report, tokens_row, wall_times
from bench._hooks_subjects import (
    BEFORE_EXCHANGES,
    Subject,
    add_turn_cost,
    ask,
    subjects_of,
)
from bench.harness import cli
from bench.harness.timing import percentile
from mcp_memory.llm.tokens import TokenCounter

# ---- the report ----------------------------------------------------------------------------------------


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
    parser = cli.parser(__doc__)
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
