"""Several `mcp-memory serve` processes on one SQLite data file: what noticing another process's write,
starting a new process, holding many users' indexes and searching beside a get_working_memory cost.

The embedded default (SQLite long term + working memory, the local ONNX embedder, default settings), on
fresh temporary data dirs seeded with LoCoMo turns (the data stays where it is: its path is an argument):

    .venv/bin/python bench/shared_file.py --locomo ../shared/data/locomo/locomo_dev.json
    .venv/bin/python bench/shared_file.py --locomo ../shared/data/locomo/locomo_dev.json \\
        --sizes 10000 --phases foreign first --rounds 10 --json /tmp/shared_file.json

Another checkout of the code (e.g. a git worktree of an older commit) runs with this venv's Python and
its own tree first on the path; every child process inherits PYTHONPATH, and the header prints which
mcp_memory each process imported:

    PYTHONPATH=/work/before .venv/bin/python /work/before/bench/shared_file.py --locomo ...

Phases (--phases, default all; the seeding each needs always runs):

1. seed: one data dir per --sizes entry, filled fast: turn Memory objects built as MemoryService.add_turn
   builds them (same fields, index_context as service._index_context builds it, token counts from the
   service's counter, embeddings from its embedder, computed once per distinct text), LoCoMo turns
   repeated (each copy a new thread of 100 turns), written with stores.long_term.put in batches; plus a
   few threads through the real add_turn, so working memory exists.
2. foreign: this process opens the service on the dir and warms it; a real second process
   (`mcp-memory serve` over stdio, same dir and user) adds one turn per round; the in-process
   search_memory right after it (once the file is quiet again) is timed, then the same search again
   (warm, no write between). Also whether that first search finds the new turn.
3. first: a new process opens the service on the dir and sends its first search right away (open time
   and first-search time apart), twice in a row; a second run may load what the first left.
4. rss: --users users of --per-user memories each in one dir; a new process opens the service, searches
   every user round robin a few times, then reports its VmRSS (and the store's index memory if the
   store reports it); then a second new process does the same (a restart: it finds what the first left).
5. http: `mcp-memory serve --transport http` on the largest seeded dir: get_working_memory latency while
   4 other clients loop search_memory, and with nobody searching (baseline), for --seconds each.

Prints markdown tables (with the load average at each figure: the machine may be shared) and writes
JSON (--json). Numbers are wall-clock on this machine; nothing here is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._shared_file_http import HttpServer, http_bench
from bench._shared_file_phases import child_first_search, child_rss, first_searches, foreign_writes
from bench._shared_file_procs import INDEX_MEMORY_ENV, USER, code_under_test, load, run_child, server_code
from bench._shared_file_seed import Corpus, seed_dir
from bench.harness import cli, table
from bench.harness.timing import cpu, percentiles

PHASES = ("seed", "foreign", "first", "rss", "http")


# ---- the run ------------------------------------------------------------------------------------------


def wanted(args: argparse.Namespace) -> dict[str, Any]:
    """Run the phases asked for; every server and child process is stopped before this returns."""
    phases = set(args.phases)
    corpus = Corpus(args.locomo)
    out: dict[str, Any] = {
        "started": datetime.now().isoformat(timespec="seconds"),
        "cpu": cpu(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "code": code_under_test(),
        "index_memory_mb": os.environ.get(INDEX_MEMORY_ENV, "default"),
        "seed": [],
        "foreign": [],
        "first": [],
        "rss": [],
        "http": None,
    }
    with tempfile.TemporaryDirectory(prefix="mcp-memory-shared-bench-") as scratch:
        root = Path(args.workdir) if args.workdir else Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        workdir = root / "work"  # children's cwd: no stray .env, no package next to it
        workdir.mkdir(exist_ok=True)
        out["code"]["server_imports"] = server_code(workdir)
        print(f"code under test: {out['code']}", file=sys.stderr)
        largest: Path | None = None
        if phases & {"seed", "foreign", "first", "http"}:
            for size in sorted(args.sizes):
                data_dir = root / f"size-{size}"
                row = seed_dir(data_dir, [USER], size, corpus)
                out["seed"].append(row)
                print(f"seeded {row}", file=sys.stderr)
                largest = data_dir
                if "foreign" in phases:
                    row = anyio.run(foreign_writes, data_dir, workdir, corpus, args.rounds, args.round_budget)
                    row["size"] = size
                    out["foreign"].append(row)
                    print(f"foreign {size}: {row}", file=sys.stderr)
                if "first" in phases:
                    for run in first_searches(data_dir, workdir, corpus, args.first_runs):
                        out["first"].append({"size": size, **run})
                        print(f"first {size}: {out['first'][-1]}", file=sys.stderr)
        if "rss" in phases:
            users = [f"{USER}-{u}" for u in range(args.users)]
            data_dir = root / f"users-{args.users}x{args.per_user}"
            row = seed_dir(data_dir, users, args.per_user, corpus)
            out["seed"].append(row)
            print(f"seeded {row}", file=sys.stderr)
            questions = [corpus.questions[i * 13 % len(corpus.questions)] for i in range(97)]
            out["rss"] = []
            # Twice: the first process builds every user's indexes from the file, the second (a restart)
            # finds what the first left beside it, if the store keeps anything there.
            for start in (1, 2):
                started_load = load()
                answer = run_child(
                    "rss",
                    data_dir,
                    workdir,
                    [
                        *("--child-users", *users),
                        *("--child-rounds", str(args.rss_rounds)),
                        *("--child-questions", json.dumps(questions)),
                    ],
                    user=users[0],  # the one its start-up warm-up builds, as a server's configured user
                )
                out["rss"].append(
                    {
                        "start": start,
                        "users": args.users,
                        "per_user": args.per_user,
                        "load": started_load,
                        "load_end": load(),
                        "at": datetime.now().isoformat(timespec="seconds"),
                        **answer,
                    }
                )
                print(f"rss: {out['rss'][-1]}", file=sys.stderr)
        if "http" in phases and largest is not None:
            server = HttpServer(largest, workdir)
            try:
                up = server.start()
                result = anyio.run(http_bench, server.url, args.seconds, corpus)
                out["http"] = {"memories": max(args.sizes), "health_s": up, **result}
                print(f"http: {out['http']}", file=sys.stderr)
            finally:
                server.stop()
    out["ended"] = datetime.now().isoformat(timespec="seconds")
    return out


def ms(value: float) -> str:
    return "n/a" if value != value else f"{value:.1f}"  # nan != nan


def clock(row: dict[str, Any]) -> str:
    """When the figure was taken (the end of its measurement), local time of day."""
    return str(row.get("at", "?")).split("T")[-1]


def report(out: dict[str, Any]) -> None:
    code = out["code"]
    print(
        f"\n{out['started']} to {out['ended']}; {out['cpu']}, {out['cores']} cores, Python {out['python']}; "
        f"mcp_memory from {code['mcp_memory']} (commit {code['commit']}, {code['modified']}); servers import "
        f"{code.get('server_imports', '?')}; index memory budget: {out['index_memory_mb']}\n"
    )
    if out["seed"]:
        print("Seeding (turns built as add_turn builds them, written with long_term.put)\n")
        print(
            "| data dir | users | memories | total s | open + embed corpus s | build + put s | rows/s | "
            "add_turn s | file MB | time | load 1/5/15 |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
        )
        for r in out["seed"]:
            print(
                f"| {Path(r['dir']).name} | {r['users']} | {r['memories']:,} | {r['seconds']:.1f} "
                f"| {r['open_and_embed_s']:.1f} | {r['put_s']:.1f} | {r['put_rows_per_s']:,.0f} "
                f"| {r['add_turn_s']:.1f} | {r['file_mb']:.0f} | {clock(r)} | {r['load']} |"
            )
    if out["foreign"]:
        print(
            "\nSearch in this process right after another process's add_turn, and warm (same query again)\n"
        )
        print(
            "| memories | rounds | after write p50 ms | p95 | max | warm p50 ms | p95 | found | "
            "in-process ready s | 2nd process ready s | time | load 1/5/15 (start -> end) |\n"
            "|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---|"
        )
        for r in out["foreign"]:
            a, w = r["after_write"], r["warm"]
            note = f" ({r['warm_disturbed']} warm disturbed)" if r["warm_disturbed"] else ""
            print(
                f"| {r['memories']:,} | {r['rounds']} | {ms(a['p50_ms'])} | {ms(a['p95_ms'])} "
                f"| {ms(a['max_ms'])} | {ms(w['p50_ms'])} | {ms(w['p95_ms'])} "
                f"| {r['found']}/{r['rounds']}{note} | {r['in_process_ready_s']:.1f} "
                f"| {r['foreign_ready_s']:.1f} | {clock(r)} | {r['load_start']} -> {r['load_end']} |"
            )
    if out["first"]:
        print("\nFirst search of a newly started process (sent right after opening)\n")
        print(
            "| memories | run | index snapshot dir before | open s | first search s | 2nd search ms "
            "| process start to exit s | RSS MB | time | load 1/5/15 |\n|---:|---:|---|---:|---:|---:|---:|---:|---|---|"
        )
        for r in out["first"]:
            print(
                f"| {r['size']:,} | {r['run']} | {r['snapshot_before']} | {r['open_s']:.2f} "
                f"| {r['first_search_s']:.2f} | {r['second_search_ms']:.1f} | {r['process_s']:.1f} "
                f"| {r['rss_mb']:.0f} | {clock(r)} | {r['load']} |"
            )
    if out["rss"]:
        print("\nOne process searching many users round robin (started twice on the same data)\n")
        print(
            "| users x memories | start | rounds | RSS after open MB | RSS after searches MB | index memory MB "
            "| 1st round search p50 ms | max | later rounds p50 ms | max | open s | time | load 1/5/15 |\n"
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
        )
        for r in out["rss"]:
            rounds = r["round_ms"]
            first_round = percentiles([t / 1000 for t in rounds[0]])
            later = percentiles([t / 1000 for rnd in rounds[1:] for t in rnd])
            index = "n/a" if r["index_memory_bytes"] is None else f"{r['index_memory_bytes'] / 2**20:.0f}"
            print(
                f"| {r['users']} x {r['per_user']:,} | {r['start']} | {len(rounds)} | {r['rss_after_open_mb']:.0f} "
                f"| {r['rss_mb']:.0f} | {index} | {ms(first_round['p50_ms'])} | {ms(first_round['max_ms'])} "
                f"| {ms(later['p50_ms'])} | {ms(later['max_ms'])} | {r['open_s']:.1f} "
                f"| {clock(r)} | {r['load']} -> {r['load_end']} |"
            )
    if out["http"]:
        h = out["http"]
        print(
            f"\nget_working_memory over streamable HTTP at {h['memories']:,} memories, with and without 4 "
            f"clients searching (server up in {h['health_s']:.1f} s, its first search {h['first_search_s']:.1f} s)\n"
        )
        print(
            "| searching clients | get_wm calls | p50 ms | p95 | p99 | max | searches/s | search p50 ms "
            "| p95 | errors | time | load 1/5/15 |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
        )
        for r in (h["baseline"], h["loaded"]):
            g, s = r["get_working_memory"], r["search_memory"]
            print(
                f"| {r['searchers']} | {g['count']} | {ms(g['p50_ms'])} | {ms(g['p95_ms'])} "
                f"| {ms(g['p99_ms'])} | {ms(g['max_ms'])} | {r['searches_per_s']:.1f} "
                f"| {ms(s['p50_ms'])} | {ms(s['p95_ms'])} "
                f"| {r['get_working_memory_errors'] + r['search_errors']} | {clock(r)} "
                f"| {r['load']} -> {r['load_end']} |"
            )
            if r["first_error"]:
                print(f"\nfirst error: {r['first_error'][:300]}")


def main() -> None:
    parser = cli.parser(__doc__, json=True)
    parser.add_argument("--locomo", default="../shared/data/locomo/locomo_dev.json", help="locomo_dev.json")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000], help="memories per data dir")
    parser.add_argument("--phases", nargs="+", choices=PHASES, default=list(PHASES))
    parser.add_argument("--rounds", type=int, default=30, help="foreign writes per size (phase 2)")
    parser.add_argument(
        "--round-budget",
        type=float,
        default=180.0,
        help="phase 2 stops starting rounds after this many seconds per size (3 rounds at least)",
    )
    parser.add_argument("--first-runs", type=int, default=2, help="new processes per size (phase 3)")
    parser.add_argument("--users", type=int, default=10, help="users in the RSS dir (phase 4)")
    parser.add_argument("--per-user", type=int, default=10000, help="memories per user (phase 4)")
    parser.add_argument("--rss-rounds", type=int, default=3, help="round-robin passes over the users")
    parser.add_argument("--seconds", type=float, default=20.0, help="each HTTP measurement (phase 5)")
    parser.add_argument(
        "--index-memory-mb",
        default=None,
        help=f"sets {INDEX_MEMORY_ENV} here and in every child (stores that lack the setting ignore it)",
    )
    parser.add_argument("--workdir", default=None, help="keep the data dirs here instead of a temp dir")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)  # a measuring child process
    parser.add_argument("--child-query", default="", help=argparse.SUPPRESS)
    parser.add_argument("--child-users", nargs="*", default=[], help=argparse.SUPPRESS)
    parser.add_argument("--child-rounds", type=int, default=3, help=argparse.SUPPRESS)
    parser.add_argument("--child-questions", default="[]", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "first-search":
        anyio.run(child_first_search, args.child_query)
        return
    if args.child == "rss":
        anyio.run(child_rss, args.child_users, args.child_rounds, json.loads(args.child_questions))
        return
    if args.index_memory_mb is not None:
        os.environ[INDEX_MEMORY_ENV] = str(args.index_memory_mb)
    out = wanted(args)
    report(out)
    table.save(args.json, out)


if __name__ == "__main__":
    main()
