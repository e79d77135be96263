"""bench/tool_tokens.py's report: the rows of every table, printed as markdown."""

from __future__ import annotations

import statistics
from typing import Any

from bench._tool_tokens_count import MOSTLY_LONG, REFERENCE_PACKAGE, TOP, Measured, Tally
from bench.harness.timing import spread


def call_rows(tally: Tally) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str, str], list[Measured]] = {}
    for one in tally.calls:
        if not one.is_error:
            groups.setdefault((one.dataset, one.tool, one.arguments), []).append(one)
    rows = []
    for (dataset, tool, arguments), made in groups.items():
        row: dict[str, Any] = {
            "dataset": dataset,
            "call": tool,
            "arguments": arguments,
            "n": len(made),
            "text": spread([m.text_tokens for m in made]),
            "structured": spread([m.structured_tokens for m in made if m.structured_tokens is not None]),
        }
        if tool == "add_turn":
            row["content_mean"] = statistics.fmean(m.content_tokens or 0 for m in made)
        if tool == "search_memory":
            row["hits_mean"] = statistics.fmean(m.hits or 0 for m in made)
        rows.append(row)
    rows.sort(key=lambda r: r["dataset"] == "-")
    return rows


def long_rows(tally: Tally) -> list[dict[str, Any]]:
    rows = []
    for dataset in dict.fromkeys(q["dataset"] for q in tally.questions):
        asked = [q for q in tally.questions if q["dataset"] == dataset]
        for label, chosen in (
            ("every search", asked),
            *(
                (f"at least {most} of {TOP} hits long", [q for q in asked if q["long_hits"] >= most])
                for most in MOSTLY_LONG
            ),
            (f"all {TOP} hits long", [q for q in asked if q["hits"] == TOP and q["long_hits"] == TOP]),
            ("no hit long", [q for q in asked if q["hits"] and not q["long_hits"]]),
        ):
            hits = sum(q["hits"] for q in chosen)
            rows.append(
                {
                    "dataset": dataset,
                    "searches": label,
                    "n": len(chosen),
                    "long_share": sum(q["long_hits"] for q in chosen) / hits if hits else None,
                    "text_per_search": statistics.fmean(q["text_tokens"] for q in chosen) if chosen else None,
                    "text_per_hit": sum(q["text_tokens"] for q in chosen) / hits if hits else None,
                    "structured_per_search": (
                        statistics.fmean(q["structured_tokens"] or 0 for q in chosen) if chosen else None
                    ),
                    "structured_per_hit": sum(q["structured_tokens"] or 0 for q in chosen) / hits
                    if hits
                    else None,
                }
            )
    return rows


def hit_rows(tally: Tally) -> list[dict[str, Any]]:
    """Hit by hit: the tokens of each hit's compact JSON (in structured_content), long hits apart."""
    rows = []
    for dataset in dict.fromkeys(q["dataset"] for q in tally.questions):
        asked = [q for q in tally.questions if q["dataset"] == dataset]
        for label, wanted in (("long memory", True), ("one passage", False)):
            tokens = [n for q in asked for is_long, n in q["hit_tokens"] if is_long == wanted]
            rows.append({"dataset": dataset, "hits": label, "n": len(tokens)} | spread(tokens))
    return rows


def recall_rows(tally: Tally) -> list[dict[str, Any]]:
    rows = []
    for dataset in dict.fromkeys(q["dataset"] for q in tally.questions):
        asked = [q for q in tally.questions if q["dataset"] == dataset]
        groups = {"overall": asked} | {
            label: [q for q in asked if q["label"] == label] for label in sorted({q["label"] for q in asked})
        }
        for label, chosen in groups.items():
            found = sum(q["found"] for q in chosen)
            rows.append(
                {
                    "dataset": dataset,
                    "questions": label,
                    "n": len(chosen),
                    "R@10": statistics.fmean(q["R@10"] for q in chosen),
                    "visible@10": statistics.fmean(q["visible@10"] for q in chosen),
                    "visible_text@10": statistics.fmean(q["visible_text@10"] for q in chosen),
                    "ranked_evidence": found,
                    "visible_share": sum(q["visible_in_hit"] for q in chosen) / found if found else None,
                    "visible_text_share": sum(q["visible_in_text"] for q in chosen) / found
                    if found
                    else None,
                    # of the answers' facts (questions that name some), the share in the result's text
                    "fact_questions": sum(1 for q in chosen if q["facts"]),
                    "facts_visible": sum(q["facts_visible"] for q in chosen) / facts
                    if (facts := sum(q["facts"] for q in chosen))
                    else None,
                }
            )
    return rows


def fmt(value: Any, digits: int = 0) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}"


def print_report(results: dict[str, Any]) -> None:
    print(f"\n{results['header']}\n")
    if results["calls"]:
        print(
            "Tool results, tokens (o200k_base): text = the TextContent the model reads; structured = compact JSON\n"
        )
        print(
            "| data | call | arguments | n | text mean | text p50 | text p95 | structured mean "
            "| structured p95 | stored content mean | text / content |"
        )
        print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for row in results["calls"]:
            text, structured = row["text"], row["structured"]
            content = row.get("content_mean")
            ratio = text["mean"] / content if content else None
            print(
                f"| {row['dataset']} | {row['call']} | {row['arguments']} | {row['n']} | {fmt(text['mean'])} "
                f"| {fmt(text['p50'])} | {fmt(text['p95'])} | {fmt(structured.get('mean'))} "
                f"| {fmt(structured.get('p95'))} | {fmt(content)} | {fmt(ratio, 2)} |"
            )
        errors = results["errors"]
        if errors:
            print(f"\n{len(errors)} calls answered with an error (left out above): " + "; ".join(errors[:10]))
    if results["long"]:
        print(
            f"\nsearch_memory (limit {TOP}) by how many hits are long memories (more than one passage), tokens\n"
        )
        print(
            "| data | searches | n | long share of hits | text per search | text per hit "
            "| structured per search | structured per hit |\n|---|---|---:|---:|---:|---:|---:|---:|"
        )
        for row in results["long"]:
            print(
                f"| {row['dataset']} | {row['searches']} | {row['n']} | {fmt(row['long_share'], 2)} "
                f"| {fmt(row['text_per_search'])} | {fmt(row['text_per_hit'])} "
                f"| {fmt(row['structured_per_search'])} | {fmt(row['structured_per_hit'])} |"
            )
        print(
            f"\nsearch_memory hit by hit: tokens of each hit's compact JSON in structured_content "
            f"({TOP} long hits = {TOP} x the mean)\n"
        )
        print(f"| data | hits | n | mean | p50 | p95 | {TOP} such hits |\n|---|---|---:|---:|---:|---:|---:|")
        for row in results["hit_tokens"]:
            print(
                f"| {row['dataset']} | {row['hits']} | {row['n']} | {fmt(row.get('mean'))} "
                f"| {fmt(row.get('p50'))} | {fmt(row.get('p95'))} "
                f"| {fmt(TOP * row['mean'] if row.get('mean') is not None else None)} |"
            )
    if results["recall"]:
        print(
            "\nRetrieval from the same searches: R@10 of the evidence; visible@10: the evidence ranked in the "
            "top 10 AND at least half its words (len > 3) in that hit's returned strings (text: anywhere "
            "in the result text); visible share: of the evidence ranked; answer facts shown: of the facts "
            "an answer must state (BEAM: the rubric's short 'should state: X'; LoCoMo: a short answer), the "
            "share whose numbers and two thirds of whose words are in the result text\n"
        )
        print(
            "| data | questions | n | R@10 | visible@10 | visible@10 (result text) | evidence ranked "
            "| visible share | visible share (result text) | questions with facts | answer facts shown |"
            "\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        )
        for row in results["recall"]:
            print(
                f"| {row['dataset']} | {row['questions']} | {row['n']} | {row['R@10']:.3f} "
                f"| {row['visible@10']:.3f} | {row['visible_text@10']:.3f} | {row['ranked_evidence']} "
                f"| {fmt(row['visible_share'], 3)} | {fmt(row['visible_text_share'], 3)} "
                f"| {row['fact_questions']} | {fmt(row['facts_visible'], 3)} |"
            )
    print(
        "\nTool definitions (tools/list), tokens: (a) each tool but its outputSchema, compact JSON "
        "(mcp_memory/cli/tool_profiles.py); (b) {name, description, input_schema} as Anthropic's API "
        "receives them; (c) the output schemas; and the initialize result's instructions\n"
    )
    print(
        "| server | tools | (a) definitions | (b) name+description+input_schema | (c) output schemas "
        "| instructions |\n|---|---:|---:|---:|---:|---:|"
    )
    for row in results["definitions"]:
        print(
            f"| {row['server']} | {row['tools']} | {row['definitions']:,} | {row['anthropic']:,} "
            f"| {row['output_schemas']:,} | {row['instructions']:,} |"
        )
    if not any(row["server"].startswith("reference") for row in results["definitions"]):
        print(
            f"\nThe reference memory server ({REFERENCE_PACKAGE}) is not installed locally "
            "(.cache/server-memory or $SERVER_MEMORY_DIR): its row is skipped."
        )
    if results["threads"]:
        print(
            "\n| thread | turns added | long | questions | add_turn s | waited for passages s | searches s |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        for row in results["threads"]:
            print(
                f"| {row['thread']} | {row['added']} of {row['turns']} | {row['long']} | {row['questions']} "
                f"| {row['add_seconds']:.0f} | {row['settle_seconds']:.0f} | {row['search_seconds']:.0f} |"
            )
    print(f"\n{results['elapsed_seconds']:.0f} s in all")
