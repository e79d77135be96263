"""bench/hooks.py's report (and bench/team.py's): evidence found per side, tokens injected, the hooks'
wall times per event, printed as markdown."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from bench._hook_replay import (
    EVENTS,
    RUNS,
    SMALL_TALK,
    Fired,
)
from bench._hooks_subjects import (
    SIDES,
)
from bench.harness.timing import percentile


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
