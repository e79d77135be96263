"""`mcp-memory demo`: start the real server over stdio, drive it with a real MCP client, print it all.

It uses a temporary data directory unless --keep is given, so trying it never touches your memories.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any

from mcp import Client, StdioServerParameters

from mcp_memory.config import Settings

CONVERSATION = [
    ("user", "Hi! I'm planning a trip to Hawaii with my sister Maya in March."),
    ("assistant", "Lovely! Which islands are you considering, and what's your budget?"),
    ("user", "Maui and Kauai. Our budget is $10,000 for flights, hotels and food."),
    ("assistant", "That works well for two islands. Do you prefer hotels or vacation rentals?"),
    ("user", "Vacation rentals. Also, I'm vegetarian, so I need good food options nearby."),
    ("assistant", "Noted: vegetarian. Paia on Maui and Hanalei on Kauai have great vegetarian cafes."),
    ("user", "We decided to fly out of Seattle on March 14 and come back March 24."),
    ("assistant", "Ten nights then: I'd suggest five on Maui and five on Kauai."),
    ("user", "Perfect. Maya wants to snorkel at Molokini crater, can we book that?"),
    ("assistant", "Yes, morning tours from Maalaea harbour are calmest; about $120 per person."),
    ("user", "Book the morning tour on March 16. And remind me to renew my passport."),
    ("assistant", "Done. Reminder noted: renew your passport before the trip."),
]


def _show(title: str) -> None:
    print(f"\n== {title} ==")


def _indented(text: str) -> str:
    """A memory of several lines, its later lines under its first."""
    return text.replace("\n", "\n" + " " * 20)


def _data(result: Any) -> dict[str, Any]:
    if result.is_error:
        raise SystemExit(f"tool error: {result.content[0].text}")
    return result.structured_content  # type: ignore[no-any-return]


async def run_demo(settings: Settings, keep: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="mcp-memory-demo-") as scratch:
        env = {k: v for k, v in os.environ.items()}
        if not keep:
            env["MCP_MEMORY_DATA_DIR"] = scratch
        env.setdefault("MCP_MEMORY_LOG_LEVEL", "WARNING")
        # In process: relayed, the session would leave a resident server behind on the scratch data dir.
        arguments = ["-m", "mcp_memory", "serve", "--in-process"]
        params = StdioServerParameters(command=sys.executable, args=arguments, env=env)
        print(
            f"Starting `mcp-memory serve` over stdio (data dir: {env.get('MCP_MEMORY_DATA_DIR', settings.data_dir)})"
        )
        async with Client(params, read_timeout_seconds=120) as client:
            tools = await client.list_tools()
            print("tools:", ", ".join(t.name for t in tools.tools))
            thread = "demo-hawaii-trip"

            _show("add_turn x12 with a 256-token context window (summarizes past 70% = 179 tokens)")
            for role, text in CONVERSATION:
                out = _data(
                    await client.call_tool(
                        "add_turn",
                        {"thread_id": thread, "role": role, "content": text, "context_window": 256},
                    )
                )
                counts = out["thread"]  # the thread's working memory after this turn
                mark = "  <- summarized" if out["summarized"] else ""
                print(
                    f"{role:>9}: {counts['tokens']:>3} tokens, {counts['messages']:>2} messages in "
                    f"working memory{mark}"
                )

            _show("get_working_memory")
            wm = _data(await client.call_tool("get_working_memory", {"thread_id": thread}))
            print("summary:", wm["summary"])
            for message in wm["messages"]:
                print(f"  {message['role']}: {message['content']}")

            for query, mode in [
                ("budget", "hybrid"),
                ("what food does the user eat?", "hybrid"),
                ('"passport"', "text"),
            ]:
                _show(f"search_memory {query!r} (mode={mode})")
                found = _data(
                    await client.call_tool("search_memory", {"query": query, "limit": 3, "mode": mode})
                )
                for hit in found["results"]:
                    # Fields at their default are left out (type "turn"); a long memory comes back as
                    # the passage that matched.
                    text = hit["content"] if "content" in hit else hit["passage"]["text"]
                    print(f"  {hit['score']:.4f} [{hit.get('type', 'turn')}] {_indented(text)}")

            _show("resource memory://threads")
            listing = await client.read_resource("memory://threads")
            print(json.dumps(json.loads(listing.contents[0].text), indent=1)[:400])  # type: ignore[union-attr]

            _show("prompt recall('where are we flying from?')")
            prompt = await client.get_prompt("recall", {"query": "where are we flying from?"})
            # In full: the remembered answer is what the recall step is for.
            print(prompt.messages[0].content.text)  # type: ignore[union-attr]

            _show("forget(thread_id, dry_run=True)")
            print(
                json.dumps(
                    _data(await client.call_tool("forget", {"thread_id": thread, "dry_run": True})), indent=1
                )
            )
        print("\nDone. Point your MCP client at `mcp-memory` (see claude_desktop_config.example.json).")
