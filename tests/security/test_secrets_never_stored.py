"""Secrets are never stored: credentials planted in every MCP write (add_turn with its metadata,
set_thread_data, remember, update_memory, import_memories, the knowledge graph's create_entities and
add_observations) and in a chat export imported by `mcp-memory import`, through the real `mcp-memory`
process over stdio. Afterwards no byte of any planted value is in any file of the data dir (the SQLite
file, its write-ahead log, the index snapshots, everything), not even lowercased as a full-text index
would keep it; and what search and working memory return is the redacted text, markers in place."""

from __future__ import annotations

import base64
import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_memory.learning import Learning
from mcp_memory.service.memory_service import MemoryService
from tests.services.mcp_client import call, stored
from tests.services.server_process import E2E_USER, StdioServer, mcp_memory_command, server_env

pytestmark = pytest.mark.anyio


def _b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def _planted() -> dict[str, str]:
    """Credentials of this run, each unique (a random part), keyed by where they are planted."""
    r = uuid.uuid4().hex
    s = uuid.uuid4().hex
    return {
        "pem_body": f"MIIEow{r}Kq9Zb3vQ0pZbXk2mN8rT4uV6",
        "jwt": f"eyJhbGciOiJIUzI1NiJ9.{_b64({'sub': r})}.{s[:20]}Xk2mN8rT4uV",
        "aws_id": "AKIA" + r[:16].upper(),
        "ghp": "ghp_" + (r + s)[:36],
        "pg_password": f"Pg{r[:12]}x",
        "bearer": f"Bt9{s[:24]}",
        "dotenv_password": f"pw{r[10:22]}7",
        "private_span": f"priv{s[:12]}",
        "stripe": f"sk_live_{s[:24]}",
        "openai": f"sk-proj-{r}Z9{s[:8]}",
        "metadata_password": f"meta{r[:10]}",
        "metadata_url_password": f"redis{s[:10]}",
        "thread_data": f"data{s[4:16]}7",
        "remembered": "ghp_" + (s + r)[:36],
        "updated": f"Upd{s[:12]}Q",
        "imported_content": f"imp{r[:14]}",
        "imported_metadata": f"impmeta{s[:9]}",
        "imported_revision": f"rev{s[2:16]}7",
        "imported_source_text": f"src{r[3:17]}",
        "imported_thread_data": f"thr{s[5:17]}",
        "imported_observation": "xoxb-" + str(int(r[:10], 16)) + "-" + s[:20],
        "graph_observation": f"glpat-{r[:20]}",
        "added_observation": f"AIza{(r + s)[:35]}",
        "chat_message": f"Cm9{r[6:30]}",
        "chat_title": f"Ttl{s[6:18]}",
    }


def _fragments(secret: str) -> list[str]:
    """The secret, and its runs of 10+ letters and digits lowercased: a full-text index keeps those."""
    runs = "".join(c if c.isalnum() else " " for c in secret.lower()).split()
    return [secret, *[run for run in runs if len(run) >= 10]]


async def _write_everything(client: Any, p: dict[str, str]) -> dict[str, str]:
    """Every MCP write, each carrying planted credentials; the ids written, by name."""
    ids: dict[str, str] = {}
    pem = f"-----BEGIN RSA PRIVATE KEY-----\n{p['pem_body']}\nAwEHoUQDQgAE\n-----END RSA PRIVATE KEY-----"
    turns = [
        f"Here is the deploy key, keep it safe:\n{pem}\nthanks",
        f"The session token was {p['jwt']} and the AWS key {p['aws_id']}.",
        f"clone with https://{p['ghp']}@github.com/acme/app.git please",
        "We traced the outage to the pool. Config:\n```\n"
        f"DATABASE_URL=postgres://app:{p['pg_password']}@db:5432/app\n"
        f"DB_PASSWORD={p['dotenv_password']}\n"
        f"STRIPE_KEY={p['stripe']}\n"
        f"OPENAI_API_KEY={p['openai']}\n```\n"
        f"and curl -H 'Authorization: Bearer {p['bearer']}' https://api.example.com/v1",
        f"my passport number is <private>{p['private_span']}</private>, remember the trip",
    ]
    for i, content in enumerate(turns):
        metadata = {
            "password": p["metadata_password"],
            "cache": f"redis://:{p['metadata_url_password']}@c:6379",
        }
        added = await call(
            client, "add_turn", thread_id="secrets", role="user", content=content, metadata=metadata
        )
        ids[f"turn{i}"] = added["id"]
        assert (await stored(client, added["id"]))["metadata"]["redacted"]  # the kinds taken out
    await call(client, "set_thread_data", thread_id="secrets", data={"note": f"password={p['thread_data']}"})

    remembered = await call(client, "remember", content=f"The user's GitHub token is {p['remembered']}")
    ids["fact"] = remembered["id"]
    await call(
        client, "update_memory", memory_id=remembered["id"], content=f"The db uses password='{p['updated']}'"
    )

    at = "2026-01-02T03:04:05Z"
    lines = [
        {
            "kind": "header",
            "format": "mcp-memory-export",
            "version": 1,
            "user_id": "elsewhere",
            "exported_at": at,
        },
        {
            "kind": "memory",
            "id": "fact_imported_with_secrets",
            "type": "fact",
            "content": f'config: api_key = "{p["imported_content"]}"',
            "metadata": {"client_secret": p["imported_metadata"], "redacted": ["forged"]},
            "created_at": at,
        },
        {
            "kind": "revision",
            "memory_id": "fact_imported_with_secrets",
            "seq": 1,
            "action": "create",
            "cause": "user_edit",
            "content": f"password: {p['imported_revision']}",
            "memory_type": "fact",
            "source_text": f"secret = '{p['imported_source_text']}'",
            "created_at": at,
        },
        {"kind": "thread", "thread_id": "imported-thread", "data": {"password": p["imported_thread_data"]}},
        {
            "kind": "graph",
            "entities": [
                {
                    "name": "slack-bot",
                    "entityType": "service",
                    "observations": [f"token {p['imported_observation']}"],
                }
            ],
            "relations": [],
        },
    ]
    await call(client, "import_memories", jsonl="\n".join(json.dumps(line) for line in lines))

    await call(
        client,
        "create_entities",
        entities=[
            {
                "name": "registry",
                "entityType": "service",
                "observations": [f"pull token {p['graph_observation']}"],
            }
        ],
    )
    await call(
        client,
        "add_observations",
        observations=[{"entityName": "registry", "contents": [f"maps key {p['added_observation']}"]}],
    )
    return ids


def _import_chat_export(workdir: Path, env: dict[str, str], p: dict[str, str]) -> None:
    """A Claude export through `mcp-memory import --format claude`: its turns go through add_turn."""
    export = [
        {
            "uuid": "c0ffee00-0000-4000-8000-000000000001",
            "name": f"db at postgres://ann:{p['chat_title']}@db/app",
            "created_at": "2026-01-03T10:00:00Z",
            "chat_messages": [
                {
                    "uuid": "c0ffee00-0000-4000-8000-000000000002",
                    "sender": "human",
                    "text": f"Use Authorization: Bearer {p['chat_message']} for the API",
                    "created_at": "2026-01-03T10:00:01Z",
                }
            ],
        }
    ]
    file = workdir / "conversations.json"
    file.write_text(json.dumps(export))
    done = subprocess.run(
        [mcp_memory_command(), "import", str(file), "--format", "claude", "--user", E2E_USER],
        env=env,
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    file.unlink()  # the export itself is the user's file, not the server's


async def test_planted_credentials_reach_no_file_and_reads_return_the_redacted_text(tmp_path: Path) -> None:
    planted = _planted()
    data_dir = tmp_path / "data"
    env = server_env(data_dir)
    server = StdioServer(tmp_path / "stdio", env)
    try:
        async with server.connect() as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert {"remember", "update_memory", "import_memories", "create_entities"} <= tools
            ids = await _write_everything(client, planted)
        await anyio.to_thread.run_sync(_import_chat_export, tmp_path / "stdio", env, planted)

        async with server.connect() as client:
            working = await call(client, "get_working_memory", thread_id="secrets")
            texts = [m["content"] for m in working["messages"]]
            assert "[redacted:private_key]" in texts[0] and "\nthanks" in texts[0]
            assert "[redacted:jwt]" in texts[1] and "[redacted:aws_access_key]" in texts[1]
            assert "https://[redacted:github_token]@github.com/acme/app.git" in texts[2]
            assert "postgres://app:[redacted:url_password]@db:5432/app" in texts[3]
            assert "Authorization: Bearer [redacted:authorization]" in texts[3]
            assert "[private]" in texts[4] and "remember the trip" in texts[4]
            assert working["messages"][3]["metadata"]["redacted"] == [
                "authorization",
                "openai_api_key",
                "password",
                "stripe_key",
                "url_password",
            ]

            found = await call(  # whole: turn3 is longer than a hit's passage
                client,
                "search_memory",
                query="deploy key outage pool trip",
                mode="text",
                limit=20,
                full_content=True,
            )
            by_id = {hit["id"]: hit for hit in found["results"]}
            assert ids["turn0"] in by_id and "[redacted:private_key]" in by_id[ids["turn0"]]["content"]
            assert ids["turn3"] in by_id and "[redacted:stripe_key]" in by_id[ids["turn3"]]["content"]
            fact = await call(client, "search_memory", query="db uses password", mode="text", types=["fact"])
            contents = {hit["id"]: hit["content"] for hit in fact["results"]}
            assert "[redacted:password]" in contents[ids["fact"]]
            imported = await call(
                client, "search_memory", query="config api_key", mode="text", types=["fact"]
            )
            hit = next(h for h in imported["results"] if h["id"] == "fact_imported_with_secrets")
            assert hit["content"] == 'config: api_key = "[redacted:secret]"'
            graph = await call(client, "open_nodes", names=["registry", "slack-bot"])
            observations = [o for e in graph["entities"] for o in e["observations"]]
            assert sorted(observations) == [
                "maps key [redacted:google_api_key]",
                "pull token [redacted:gitlab_token]",
                "token [redacted:slack_token]",
            ]
            every = json.dumps([working, found, fact, imported, graph, await call(client, "export_memories")])
            for name, secret in planted.items():
                assert secret not in every, f"{name} came back from a read"
    finally:
        server.close()

    files = [f for f in data_dir.rglob("*") if f.is_file()]
    assert files, "no data file written"
    leaks = []
    for file in files:
        data = file.read_bytes()
        lower = data.lower()
        for name, secret in planted.items():
            for fragment in _fragments(secret):
                if fragment.encode() in data or fragment.lower().encode() in lower:
                    leaks.append(f"{name} ({fragment!r}) in {file.relative_to(data_dir)}")
    assert not leaks, "\n".join(sorted(set(leaks)))


async def test_a_fact_keeps_the_kinds_redacted_and_an_update_replaces_them(service: MemoryService) -> None:
    user, token = service.settings.user_id, "ghp_" + uuid.uuid4().hex + "Zq9x"
    assert isinstance(service.learning, Learning)
    editor = service.learning.editor
    written = await editor.remember(user, f"Deploy with the token {token}")
    stored = await service.stores.long_term.get(user, written.id)
    assert stored.content == "Deploy with the token [redacted:github_token]"
    assert stored.metadata["redacted"] == ["github_token"]
    await editor.update(user, written.id, "Deploy by hand from now on")
    assert "redacted" not in (await service.stores.long_term.get(user, written.id)).metadata
    await editor.update(user, written.id, f"Deploy with <private>{token}</private> again")
    updated = await service.stores.long_term.get(user, written.id)
    assert (updated.content, updated.metadata["redacted"]) == ("Deploy with [private] again", ["private"])
