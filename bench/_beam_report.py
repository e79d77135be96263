"""bench/beam.py's report: server-side times read from the server's request log, latency rows per tool
and mode, recall per ability, the timeline's coverage per budget."""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
from dataclasses import asdict
from typing import Any

from bench._beam_calls import (
    REQUEST_LINE,
    TIMED,
    TIMELINE_BUDGETS,
    Call,
    Run,
)
from bench.harness.data.beam import (
    KS,
    summarize,
)
from bench.harness.timing import percentile


def timeline_report(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The share of evidence timeline returned, per ability and overall, with and without the query."""
    by_ability: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_ability.setdefault(row["ability"], []).append(row)
    keys = [f"{kind}@{budget}" for kind in ("query", "outline") for budget in TIMELINE_BUDGETS]
    table = {
        name: {key: statistics.fmean(r[key] for r in group) for key in keys} | {"n": len(group)}
        for name, group in [*sorted(by_ability.items()), ("overall", rows)]
        if group
    }
    tokens = (
        {
            key: max(r[key] for r in rows)
            for key in [
                f"{kind}_tokens@{budget}" for kind in ("query", "outline") for budget in TIMELINE_BUDGETS
            ]
        }
        if rows
        else {}
    )
    print(
        "\n| ability | n |"
        + "".join(f" with question {b} |" for b in TIMELINE_BUDGETS)
        + "".join(f" whole outline {b} |" for b in TIMELINE_BUDGETS)
        + "\n|---|---:|"
        + "---:|" * len(keys)
    )
    for name, means in table.items():
        print(f"| {name} | {means['n']} |" + "".join(f" {means[key]:.3f} |" for key in keys))
    if tokens:
        print("\nmost tokens in one timeline answer: " + ", ".join(f"{k} {v}" for k, v in tokens.items()))
    return {"by_ability": table, "max_tokens": tokens}


def attach_server_times(calls: list[Call], stderr: str) -> None:
    """The server logs one line per tool call, in the order the calls (sequential) were made."""
    logged = REQUEST_LINE.findall(stderr)
    if [tool for tool, _ in logged if tool in TIMED] != [c.tool for c in calls]:
        print(
            f"the server logged {len(logged)} tool calls for {len(calls)} made: no server-side times",
            file=sys.stderr,
        )
        return
    answered = [ms for tool, ms in logged if tool in TIMED]
    for made, ms in zip(calls, answered, strict=True):
        made.server_ms = float(ms)


def latency_rows(calls: list[Call], modes: list[str]) -> list[dict[str, Any]]:
    groups = {"add_turn": [c for c in calls if c.tool == "add_turn"]}
    for mode in modes:
        groups[f"search_memory, {mode} (after the first)"] = [
            c for c in calls if c.tool == "search_memory" and c.mode == mode and not c.first_search
        ]
    groups[f"first search after a conversation is added ({modes[0]})"] = [c for c in calls if c.first_search]
    groups["timeline"] = [c for c in calls if c.tool == "timeline"]
    rows = []
    for label, group in groups.items():
        if not group:
            continue
        row: dict[str, Any] = {"call": label, "n": len(group)}
        for side in ("client", "server"):
            values = [getattr(c, f"{side}_ms") for c in group]
            if None in values:
                continue
            row |= {f"{side}_p50_ms": percentile(values, 0.5), f"{side}_p95_ms": percentile(values, 0.95)}
            row[f"{side}_max_ms"] = max(values)
        rows.append(row)
    return rows


def report(run: Run, args: argparse.Namespace) -> dict[str, Any]:
    modes: list[str] = args.modes
    summaries = {
        mode: summarize([(q["ability"], q) for q in run.questions if q["mode"] == mode]) for mode in modes
    }
    latencies = latency_rows(run.calls, modes)
    print(
        f"\nBEAM 100K, {len(run.conversations)} conversations, {summaries[modes[0]]['questions']} questions; "
        f"{'a fresh server per conversation' if args.per_conversation else 'one server'}; "
        f"{f'{args.pace_ms:g} ms after each add_turn; ' if args.pace_ms else ''}"
        f"{''.join(f'{item}; ' for item in args.setting)}"
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}\n"
    )
    print("| mode | " + " | ".join(f"R@{k}" for k in KS) + " | knowledge updates: update first |")
    print("|---|" + "---:|" * len(KS) + "---:|")
    for mode, summary in summaries.items():
        overall = summary["overall"]
        print(
            f"| {mode} | "
            + " | ".join(f"{overall[f'R@{k}']:.3f}" for k in KS)
            + f" | {summary['updates_first']} of {summary['updates']} |"
        )
    for refusal in run.refused:
        print(
            f"\nrefused: conversation {refusal['conversation']}, message {refusal['message']}: {refusal['error']}"
        )
    first = summaries[modes[0]]
    others = modes[1:]
    print(
        "\n| ability | n | R@5 | R@10 | R@20 |"
        + "".join(f" R@10 {mode} |" for mode in others)
        + "\n|---|---:|---:|---:|---:|"
        + "---:|" * len(others)
    )
    for ability, row in first["by_ability"].items():
        print(
            f"| {ability} | {row['n']} | {row['R@5']:.3f} | {row['R@10']:.3f} | {row['R@20']:.3f} |"
            + "".join(f" {summaries[m]['by_ability'][ability]['R@10']:.3f} |" for m in others)
        )
    print(
        "\n| call | n | client p50 ms | client p95 ms | client max ms | server p50 ms | server p95 ms "
        "| server max ms |\n|---|---:|---:|---:|---:|---:|---:|---:|"
    )
    for row in latencies:
        figures = [
            f"{row[key]:.1f}" if key in row else "n/a"
            for key in (
                "client_p50_ms",
                "client_p95_ms",
                "client_max_ms",
                "server_p50_ms",
                "server_p95_ms",
                "server_max_ms",
            )
        ]
        print(f"| {row['call']} | {row['n']} | " + " | ".join(figures) + " |")
    per_conversation = []
    print(
        "\n| conversation | messages | questions |"
        + "".join(f" R@10 {mode} |" for mode in modes)
        + " add_turn total s | first search client ms |\n|---|---:|---:|"
        + "---:|" * len(modes)
        + "---:|---:|"
    )
    for info in run.conversations:
        name = info["conversation"]
        recalls = {}
        for mode in modes:
            rows = [q["R@10"] for q in run.questions if q["conversation"] == name and q["mode"] == mode]
            recalls[mode] = statistics.fmean(rows) if rows else float("nan")
        asked = sum(1 for q in run.questions if q["conversation"] == name and q["mode"] == modes[0])
        searched = next((c for c in run.calls if c.first_search and c.conversation == name), None)
        per_conversation.append(
            info | {"questions": asked, "R@10": recalls, "first_search_ms": searched and searched.client_ms}
        )
        print(
            f"| {name} | {info['messages']} | {asked} |"
            + "".join(f" {recalls[mode]:.3f} |" for mode in modes)
            + f" {info['add_seconds']:.1f} | {searched.client_ms if searched else float('nan'):.0f} |"
        )
    timelines = timeline_report(run.timelines) if run.timelines else None
    return {
        "timeline": timelines,
        "per_conversation_servers": args.per_conversation,
        "summary": summaries,
        "latency": latencies,
        "conversations": per_conversation,
        "questions": run.questions,
        "refused": run.refused,
        "calls": [asdict(c) for c in run.calls],
    }
