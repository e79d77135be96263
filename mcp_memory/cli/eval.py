"""`mcp-memory eval`: how often what the hooks inject holds what a session needed, on the user's own history.

The replay and its scoring are service/self_eval/ (replay.py says how a session is asked and scored,
identifiers.py what counts as an identifier); here: the options, a progress bar on stderr, the table,
and the details as JSON. docs/eval.md shows a run.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_memory.private_files import open_private

if TYPE_CHECKING:
    from mcp_memory.config import Settings
    from mcp_memory.service.self_eval.history import RecordedSession
    from mcp_memory.service.self_eval.replay import Scored

MIN_BUDGET, MAX_BUDGET = 50, 1500  # hooks.budget_tokens' own bounds
BAR_WIDTH = 30


def add_parser(commands: Any) -> None:
    command = commands.add_parser(
        "eval",
        help="replay your own coding sessions into a throw-away store and measure what the hooks' recall "
        "carries (docs/eval.md)",
    )
    command.add_argument("--project", help="only the projects whose remote, directory or name holds this")
    command.add_argument("--since", type=since_date, help="only sessions started on or after this date (UTC)")
    command.add_argument(
        "--budget",
        type=budgets,
        help=f"token budgets to compare on the same replay, e.g. 500,700,1000,1500 ({MIN_BUDGET}-{MAX_BUDGET}; "
        "default: hooks.budget_tokens)",
    )
    command.add_argument("--json", type=Path, metavar="PATH", help="also write every session's details here")


def budgets(text: str) -> list[int]:
    """--budget: token counts separated by commas."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not token counts separated by commas: {text!r}") from None
    if not values or any(not MIN_BUDGET <= v <= MAX_BUDGET for v in values):
        raise argparse.ArgumentTypeError(f"each budget must be {MIN_BUDGET} to {MAX_BUDGET} tokens: {text!r}")
    return list(dict.fromkeys(values))


def since_date(text: str) -> datetime:
    """--since: a date (or a date and time), UTC unless it names a zone."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def eval_command(settings: Settings, args: argparse.Namespace) -> int:
    """Run the replay; 0 when sessions were replayed, 1 when none was found."""
    import logging

    import anyio

    from mcp_memory.service.self_eval.history import matches, recorded_sessions
    from mcp_memory.service.self_eval.replay import replay

    # The replay opens a service of its own: its start-up lines would bury the bar and the table.
    logging.getLogger().setLevel(max(logging.getLogger().level, logging.WARNING))
    began = time.monotonic()
    sessions = recorded_sessions(Path.home(), settings.hooks.exclude)
    if args.project:
        sessions = [s for s in sessions if matches(s, args.project)]
    if args.since:
        sessions = [s for s in sessions if s.started >= args.since]
    if not sessions:
        print(f"mcp-memory eval: {_nothing(args)}", file=sys.stderr)
        return 1
    chosen = args.budget or [settings.hooks.budget_tokens]
    bar = _Bar() if sys.stderr.isatty() else None
    scored = anyio.run(replay, settings, sessions, chosen, bar)
    if bar is not None:
        bar.close()
    seconds = time.monotonic() - began
    print(report(sessions, scored, chosen, seconds))
    if args.json:
        with open(open_private(args.json), "w", encoding="utf-8") as out:  # 0600: it quotes sessions
            out.write(json.dumps(details(sessions, scored, chosen, seconds), indent=1) + "\n")
        print(f"details: {args.json}")
    return 0


def _nothing(args: argparse.Namespace) -> str:
    where = (
        "~/.claude/projects/*/*.jsonl (Claude Code), ~/.gemini/tmp/*/chats/ (Gemini CLI) or "
        "~/.codex/sessions/ (Codex CLI)"
    )
    filters = []
    if args.project:
        filters.append(f"--project {args.project}")
    if args.since:
        filters.append(f"--since {args.since:%Y-%m-%d}")
    return f"no sessions found in {where}" + (f" with {' '.join(filters)}" if filters else "")


class _Bar:
    """A text progress bar on stderr (a terminal only)."""

    def __call__(self, done: int, total: int) -> None:
        filled = BAR_WIDTH * done // max(total, 1)
        sys.stderr.write(f"\rreplaying [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{total} steps")
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")


def report(
    sessions: Sequence[RecordedSession], scored: Sequence[Scored], chosen: Sequence[int], seconds: float
) -> str:
    """The table: one row per project and budget (and all projects together when there are several)."""
    projects = sorted({s.project.id for s in sessions})
    clients = sorted({s.client for s in sessions})
    lines = [
        f"Replayed {len(sessions)} sessions of {len(projects)} projects ({', '.join(clients)}) in "
        f"{seconds:.1f} s; asked at {len(scored)} first prompts that had an earlier session of their project.",
        "",
        f"{'project':<40} {'budget':>6} {'sessions':>8} {'scored':>6} {'needed':>6} {'found':>6} "
        f"{'tokens p50/p95':>14} {'ms p50/p95':>12}",
    ]
    groups = [(p, [s for s in sessions if s.project.id == p]) for p in projects]
    if len(groups) > 1:
        groups.append(("all projects", list(sessions)))
    for name, members in groups:
        ids = {id(s) for s in members}
        asked = [s for s in scored if id(s.session) in ids]
        for n, budget in enumerate(chosen):
            answers = [s.answers[n] for s in asked]
            needed = sum(len(s.needed) for s in asked)
            found = sum(len(a.found) for a in answers)
            share = f"{found / needed:.2f}" if needed else "-"
            tokens = _pair([a.tokens for a in answers], "{:.0f}")
            ms = _pair([a.ms for a in answers], "{:.0f}")
            label = name if len(name) <= 40 else "…" + name[-39:]
            lines.append(
                f"{label:<40} {budget:>6} {len(members):>8} {len(asked):>6} {needed:>6} {share:>6} "
                f"{tokens:>14} {ms:>12}"
            )
    lines += [
        "",
        "needed: identifiers of a session's replies and tool calls that an earlier session of its project "
        "mentions and its prompts do not; found: the share of them in what the hook injected at its first "
        "prompt (docs/eval.md).",
    ]
    return "\n".join(lines)


def _pair(values: list[float], form: str) -> str:
    if not values:
        return "-"
    return f"{form.format(percentile(values, 0.5))}/{form.format(percentile(values, 0.95))}"


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest rank: the smallest value with at least `share` of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(math.ceil(share * len(ordered)) - 1, 0)]


def details(
    sessions: Sequence[RecordedSession], scored: Sequence[Scored], chosen: Sequence[int], seconds: float
) -> dict[str, Any]:
    """Every asked session: its prompt, the identifiers it needed, and per budget what was injected."""
    return {
        "budgets": list(chosen),
        "run_seconds": round(seconds, 1),
        "sessions_replayed": len(sessions),
        "asked": [
            {
                "client": s.session.client,
                "session": s.session.session_id,
                "project": s.session.project.id,
                "transcript": str(s.session.path),
                "started": s.session.started.isoformat(),
                "prompt": s.session.first_prompt.content if s.session.first_prompt else "",
                "needed": list(s.needed),
                "answers": [
                    {
                        "budget": a.budget,
                        "tokens": a.tokens,
                        "ms": round(a.ms, 1),
                        "found": list(a.found),
                        "missed": [x for x in s.needed if x not in a.found],
                        "injected": a.injected,
                    }
                    for a in s.answers
                ],
            }
            for s in scored
        ],
    }
