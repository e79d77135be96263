"""Codex's hook trust, as Codex itself computes it: Codex runs a hook from a user's or a project's hooks.json
only once that hook is trusted, and `codex exec` skips an untrusted one without a word.

Trust is kept in the user's config.toml, one table per hook:

    [hooks.state."/home/me/.codex/hooks.json:session_start:0:0"]
    trusted_hash = "sha256:..."

Codex writes these when the user reviews the hooks in its TUI (`/hooks`). `mcp-memory install codex --trust`
writes the same entries for our hooks only (with the user's consent); `mcp-memory doctor` reads them.
From openai/codex, codex-rs (read for 0.171.0, and checked against that release's `hooks/list` answer):
- the key is `hook_key` (hooks/src/lib.rs): "<hooks.json's absolute path>:<event in snake_case>:<index of
  the matcher group in the event's list>:<index of the handler in the group>";
- the hash is `command_hook_hash` (hooks/src/engine/discovery.rs) through `version_for_toml`
  (config/src/fingerprint.rs): the identity {"event_name", "matcher" (none for UserPromptSubmit and Stop),
  "hooks": [the one handler: "type", "command", "timeout" (600 when unset, at least 1), "async"
  (false when unset), "statusMessage" when set]}, without absent fields, as JSON with sorted keys and no
  spaces, SHA-256 in hex, prefixed "sha256:". Equal hash: trusted; another hash: modified (Codex skips it
  as if untrusted); none: untrusted.

Standard library only (install and doctor must start fast).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_memory.cli.install_clients import is_our_hook

STATE_TABLE = ("hooks", "state")
DEFAULT_TIMEOUT_SECONDS = 600
_NO_MATCHER = frozenset({"UserPromptSubmit", "Stop"})  # matcher_pattern_for_event ignores theirs


@dataclass(frozen=True)
class HookTrust:
    """One of our hooks: where Codex keeps its trust, and the hash that trusts it as it is now."""

    event: str
    key: str
    hash: str


def event_label(event: str) -> str:
    """Codex's snake_case name of an event: SessionStart -> session_start."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def hook_key(hooks_file: Path, event: str, group_index: int, handler_index: int) -> str:
    return f"{os.path.abspath(hooks_file)}:{event_label(event)}:{group_index}:{handler_index}"


def hook_hash(event: str, matcher: object, handler: dict[str, Any]) -> str:
    timeout = handler.get("timeout")
    normalized: dict[str, Any] = {
        "type": "command",
        "command": handler.get("command"),
        "timeout": max(1, timeout if isinstance(timeout, int) else DEFAULT_TIMEOUT_SECONDS),
        "async": handler.get("async") is True,
    }
    if isinstance(handler.get("statusMessage"), str):
        normalized["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": event_label(event), "hooks": [normalized]}
    if isinstance(matcher, str) and event not in _NO_MATCHER:
        identity["matcher"] = matcher
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def our_hooks(hooks_file: Path, document: dict[str, Any], client: str = "codex") -> list[HookTrust]:
    """Our hooks in a hooks.json document (as parsed), each with its trust key and current hash."""
    found: list[HookTrust] = []
    hooks = document.get("hooks")
    for event, groups in (hooks if isinstance(hooks, dict) else {}).items():
        for group_index, group in enumerate(groups if isinstance(groups, list) else []):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for handler_index, handler in enumerate(handlers if isinstance(handlers, list) else []):
                if is_our_hook(handler, client):
                    key = hook_key(hooks_file, event, group_index, handler_index)
                    found.append(HookTrust(event, key, hook_hash(event, group.get("matcher"), handler)))
    return found


def trusted_hashes(config: dict[str, Any]) -> dict[str, str]:
    """The trusted_hash of every hook in a config.toml (as parsed), by key."""
    hooks = config.get("hooks")
    states = hooks.get("state") if isinstance(hooks, dict) else None
    return {
        key: state["trusted_hash"]
        for key, state in (states if isinstance(states, dict) else {}).items()
        if isinstance(state, dict) and isinstance(state.get("trusted_hash"), str)
    }


def trust_report(hooks: list[HookTrust], config: dict[str, Any]) -> dict[str, Any]:
    """{"status": trusted | not trusted | modified | partly trusted | no hooks, and the events in each state}."""
    hashes = trusted_hashes(config)
    trusted = [h.event for h in hooks if hashes.get(h.key) == h.hash]
    modified = [h.event for h in hooks if h.key in hashes and hashes[h.key] != h.hash]
    untrusted = [h.event for h in hooks if h.key not in hashes]
    if not hooks:
        status = "no hooks"
    elif len(trusted) == len(hooks):
        status = "trusted"
    elif modified:
        status = "modified"
    elif not trusted:
        status = "not trusted"
    else:
        status = "partly trusted"
    return {"status": status, "trusted": trusted, "untrusted": untrusted, "modified": modified}


def how_to_trust(count: int, scope_flag: str) -> str:
    """What the user must do, in words, when our hooks are not (or no longer) trusted."""
    return (
        f"Codex runs these {count} hooks only once you trust them; until then nothing is captured. "
        f"Either run `mcp-memory install codex{scope_flag} --trust` (writes their trust into Codex's "
        "config.toml, [hooks.state]), or start `codex`, type /hooks and trust the mcp-memory hooks."
    )
