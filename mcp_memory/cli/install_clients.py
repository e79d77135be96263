"""What `mcp-memory install` and `mcp-memory doctor` know about each coding agent: where its files are,
the shape of the MCP server entry and of the hook entries it reads, and which entries are ours.

One class per client; each shape names the documentation page it comes from. Standard library only:
this runs from a CLI that must start fast.
"""

from __future__ import annotations

import ntpath
import os
import re
import shutil
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

Scope = Literal["user", "project"]
JsonObject = dict[str, Any]

SERVER_NAME = "memory"
PROGRAM_NAMES = ("mcp-memory", "mcp-memory.exe")
# Recall events search the memory and print what they found; capture events only hand the event over.
RECALL_SECONDS = 10
CAPTURE_SECONDS = 5


@dataclass(frozen=True)
class HookedEvent:
    name: str  # the client's own event name
    recall: bool = False

    @property
    def timeout_seconds(self) -> int:
        return RECALL_SECONDS if self.recall else CAPTURE_SECONDS


def _events(recall: tuple[str, ...], capture: tuple[str, ...]) -> tuple[HookedEvent, ...]:
    return tuple(HookedEvent(name, True) for name in recall) + tuple(HookedEvent(name) for name in capture)


class Client(ABC):
    """A coding agent's files. `root` is the home directory (user scope) or the project (project scope)."""

    name: ClassVar[str]
    title: ClassVar[str]
    docs: ClassVar[tuple[str, ...]]
    events: ClassVar[tuple[HookedEvent, ...]]
    servers_key: ClassVar[str] = "mcpServers"  # the object that holds the MCP servers
    mcp_format: ClassVar[Literal["json", "toml"]] = "json"
    # Claude Code, Codex, Gemini: {event: [{"matcher"?, "hooks": [entry]}]}; Cursor, VS Code: {event: [entry]}.
    nested_hooks: ClassVar[bool] = True
    hooks_skeleton: ClassVar[JsonObject] = {}  # what a hooks file we create starts with, besides "hooks"

    @abstractmethod
    def mcp_file(self, scope: Scope, root: Path) -> Path: ...

    @abstractmethod
    def hooks_file(self, scope: Scope, root: Path) -> Path: ...

    def server_entry(self, program: list[str], env: dict[str, str], server: str | None = None) -> JsonObject:
        return {"command": program[0], "args": [*program[1:], *serve_words(server)], "env": env}

    def hook_entry(self, command: str, event: HookedEvent) -> JsonObject:
        return {"type": "command", "command": command, "timeout": event.timeout_seconds}

    def hook_item(self, command: str, event: HookedEvent) -> JsonObject:
        """What goes into the event's list: the entry, or a matcher group holding it (no matcher: all)."""
        entry = self.hook_entry(command, event)
        return {"hooks": [entry]} if self.nested_hooks else entry


class ClaudeCode(Client):
    # Hooks: https://code.claude.com/docs/en/hooks ("Configuration", "Hook Events"): settings files
    # ~/.claude/settings.json and .claude/settings.json; {"hooks": {Event: [{"matcher", "hooks": [{"type":
    # "command", "command", "timeout" (seconds)}]}]}}; the matcher may be left out to match everything.
    # MCP: https://code.claude.com/docs/en/mcp ("MCP installation scopes"): user scope in ~/.claude.json
    # "mcpServers", project scope in .mcp.json at the project root; {"type": "stdio", "command", "args", "env"}.
    name = "claude-code"
    title = "Claude Code"
    docs = ("https://code.claude.com/docs/en/hooks", "https://code.claude.com/docs/en/mcp")
    events = _events(
        ("SessionStart", "UserPromptSubmit"),
        ("PostToolUse", "PreCompact", "Stop", "SubagentStop", "SessionEnd"),
    )

    def mcp_file(self, scope: Scope, root: Path) -> Path:
        return root / (".claude.json" if scope == "user" else ".mcp.json")

    def hooks_file(self, scope: Scope, root: Path) -> Path:
        return root / ".claude" / "settings.json"

    def server_entry(self, program: list[str], env: dict[str, str], server: str | None = None) -> JsonObject:
        return {"type": "stdio", **super().server_entry(program, env, server)}


class Cursor(Client):
    # Hooks: https://cursor.com/docs/hooks ("Configuration"): ~/.cursor/hooks.json or <project>/.cursor/
    # hooks.json, {"version": 1, "hooks": {event: [{"command", "timeout" (seconds)}]}}; agent events
    # sessionStart, beforeSubmitPrompt, postToolUse, afterFileEdit, preCompact, stop, sessionEnd.
    # MCP: https://cursor.com/docs/context/mcp: ~/.cursor/mcp.json or .cursor/mcp.json, "mcpServers".
    name = "cursor"
    title = "Cursor"
    docs = ("https://cursor.com/docs/hooks", "https://cursor.com/docs/context/mcp")
    events = _events(
        ("sessionStart", "beforeSubmitPrompt"),
        ("postToolUse", "afterFileEdit", "preCompact", "stop", "sessionEnd"),
    )
    nested_hooks = False
    hooks_skeleton: ClassVar[JsonObject] = {"version": 1}

    def mcp_file(self, scope: Scope, root: Path) -> Path:
        return root / ".cursor" / "mcp.json"

    def hooks_file(self, scope: Scope, root: Path) -> Path:
        return root / ".cursor" / "hooks.json"

    def hook_entry(self, command: str, event: HookedEvent) -> JsonObject:
        return {"command": command, "timeout": event.timeout_seconds}


class VSCode(Client):
    # Hooks: https://code.visualstudio.com/docs/agent-customization/hooks ("Hook file locations", "Hook
    # configuration format"): every *.json in .github/hooks/ (workspace) and ~/.copilot/hooks (user),
    # {"hooks": {Event: [{"type": "command", "command", "timeout" (seconds)}]}}, events SessionStart,
    # UserPromptSubmit, PreToolUse, PostToolUse, PreCompact, SubagentStart, SubagentStop, Stop. Copilot CLI
    # and the cloud agent read the same folders: https://docs.github.com/en/copilot/reference/hooks-reference
    # takes "version": 1, these PascalCase names (VS Code compatible payloads) and "command". We write a
    # file of our own there, mcp-memory.json.
    # MCP: https://code.visualstudio.com/docs/copilot/reference/mcp-configuration: .vscode/mcp.json or the
    # user profile's mcp.json, "servers": {name: {"type": "stdio", "command", "args", "env"}}.
    name = "vscode"
    title = "VS Code (agent hooks, Copilot)"
    docs: ClassVar[tuple[str, ...]] = (
        "https://code.visualstudio.com/docs/agent-customization/hooks",
        "https://docs.github.com/en/copilot/reference/hooks-reference",
        "https://code.visualstudio.com/docs/copilot/reference/mcp-configuration",
    )
    events = _events(
        ("SessionStart", "UserPromptSubmit"), ("PostToolUse", "PreCompact", "SubagentStop", "Stop")
    )
    servers_key = "servers"
    nested_hooks = False
    hooks_skeleton: ClassVar[JsonObject] = {"version": 1}

    def mcp_file(self, scope: Scope, root: Path) -> Path:
        return root / ".vscode" / "mcp.json" if scope == "project" else vscode_user_dir(root) / "mcp.json"

    def hooks_file(self, scope: Scope, root: Path) -> Path:
        folder = root / ".github" / "hooks" if scope == "project" else self.user_hooks_dir(root)
        return folder / "mcp-memory.json"

    def user_hooks_dir(self, home: Path) -> Path:
        return home / ".copilot" / "hooks"

    def server_entry(self, program: list[str], env: dict[str, str], server: str | None = None) -> JsonObject:
        return {"type": "stdio", **super().server_entry(program, env, server)}


class Codex(Client):
    # Hooks: https://developers.openai.com/codex/hooks: ~/.codex/hooks.json or <repo>/.codex/hooks.json,
    # the same shape as Claude Code's ({Event: [{"matcher"?, "hooks": [{"type": "command", "command",
    # "timeout" (seconds)}]}]}); events SessionStart, UserPromptSubmit, PreToolUse, PermissionRequest,
    # PostToolUse, PreCompact, PostCompact, SubagentStop, Stop. Older releases run hooks only with
    # `[features] codex_hooks = true` in config.toml (newer ones by default, `codex_hooks` kept as an alias).
    # MCP: https://developers.openai.com/codex/mcp: config.toml [mcp_servers.<name>] command, args, env.
    name = "codex"
    title = "Codex CLI"
    docs = ("https://developers.openai.com/codex/hooks", "https://developers.openai.com/codex/mcp")
    events = _events(
        ("SessionStart", "UserPromptSubmit"), ("PostToolUse", "PreCompact", "SubagentStop", "Stop")
    )
    servers_key = "mcp_servers"
    mcp_format = "toml"

    def mcp_file(self, scope: Scope, root: Path) -> Path:
        return codex_dir(scope, root) / "config.toml"

    def hooks_file(self, scope: Scope, root: Path) -> Path:
        return codex_dir(scope, root) / "hooks.json"


class Gemini(Client):
    # Hooks: https://geminicli.com/docs/hooks/reference ("Configuration schema"): settings.json "hooks",
    # {Event: [{"matcher"?, "hooks": [{"type": "command", "command", "name", "timeout" (milliseconds)}]}]};
    # events SessionStart, BeforeAgent, AfterAgent, AfterTool, SessionEnd (and others). Not PreCompress: Gemini
    # fires it before every turn and waits for it, and it carries nothing to store (hooks/clients.py); an
    # entry of ours an earlier install wrote there is removed by install and by --uninstall.
    # MCP: https://geminicli.com/docs/tools/mcp-server: settings.json "mcpServers" {command, args, env}.
    # Both in ~/.gemini/settings.json (user) or <project>/.gemini/settings.json.
    name = "gemini"
    title = "Gemini CLI"
    docs = ("https://geminicli.com/docs/hooks/reference", "https://geminicli.com/docs/tools/mcp-server")
    events = _events(("SessionStart", "BeforeAgent"), ("AfterAgent", "AfterTool", "SessionEnd"))

    def mcp_file(self, scope: Scope, root: Path) -> Path:
        return root / ".gemini" / "settings.json"

    def hooks_file(self, scope: Scope, root: Path) -> Path:
        return self.mcp_file(scope, root)

    def hook_entry(self, command: str, event: HookedEvent) -> JsonObject:
        # "name" is what `/hooks disable mcp-memory` takes.
        return {
            "name": "mcp-memory",
            "type": "command",
            "command": command,
            "timeout": 1000 * event.timeout_seconds,
        }


CLIENTS: dict[str, Client] = {c.name: c for c in (ClaudeCode(), Cursor(), VSCode(), Codex(), Gemini())}


def codex_dir(scope: Scope, root: Path) -> Path:
    """~/.codex, or $CODEX_HOME (Codex's own variable), for the user; <project>/.codex for a project."""
    codex_home = os.environ.get("CODEX_HOME")
    return Path(codex_home) if scope == "user" and codex_home else root / ".codex"


def vscode_user_dir(home: Path) -> Path:
    """VS Code's user profile folder (where its user mcp.json lives), on each platform."""
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Code" / "User"
    if os.name == "nt":
        return Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming") / "Code" / "User"
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "Code" / "User"


def find_program() -> list[str]:
    """The absolute command that runs mcp-memory: a GUI-launched client has another PATH than this shell."""
    found = shutil.which("mcp-memory")
    if found:
        return [str(Path(found).resolve())]
    script = Path(sys.argv[0])
    if script.name.lower() in PROGRAM_NAMES and script.is_file():
        return [str(script.resolve())]
    # Not resolved: a virtual environment's python is a link to the base interpreter, outside the venv.
    return [os.path.abspath(sys.executable), "-m", "mcp_memory"]


def shell_word(word: str) -> str:
    """`word` in double quotes, for the shell the client runs a hook command with."""
    if os.name == "nt":
        return f'"{word}"'
    return '"' + re.sub(r'(["\\$`])', r"\\\1", word) + '"'


# Whose memory, and where: set when `install` runs, they are written into the hooks and the server entry,
# so a client started from the desktop (without the shell's environment) uses the same memory.
PINNED = ("MCP_MEMORY_USER_ID", "MCP_MEMORY_DATA_DIR")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def pinned_env() -> dict[str, str]:
    return {name: os.environ[name] for name in PINNED if os.environ.get(name)}


def hook_command(program: list[str], client: str, event: str, server: str | None = None) -> str:
    """The hook's command line; with `server` (team mode: a memory server's URL), `--server URL` too."""
    assignments = [f"{name}={shell_word(value)}" for name, value in pinned_env().items()]
    team = ["--server", shell_word(server)] if server else []
    return " ".join(
        [*assignments, shell_word(program[0]), *program[1:], "hook", client, "--event", event, *team]
    )


def serve_words(server: str | None) -> list[str]:
    """The MCP server entry's command after the program: `serve`, or in team mode `serve --server URL` (a
    stdio bridge to that server's /mcp with the stored credential)."""
    return ["serve", "--server", server] if server else ["serve"]


def server_of(words: list[str]) -> str | None:
    """The memory server a hook command or server entry names with `--server URL` (None: local)."""
    at = words.index("--server") if "--server" in words else -1
    return words[at + 1] if 0 <= at < len(words) - 1 else None


def server_env() -> dict[str, str]:
    return {"MCP_MEMORY_HOOKS__CAPTURE": "true", **pinned_env()}


def _program_words(words: list[str]) -> list[str]:
    """The command's words less the variable assignments before its program."""
    at = 0
    while at < len(words) and _ASSIGNMENT.match(words[at]):
        at += 1
    return words[at:]


def is_our_program(words: list[str]) -> bool:
    """`mcp-memory` by any path, or `python -m mcp_memory` (an install moved elsewhere is still ours)."""
    if not words:
        return False
    return ntpath.basename(words[0]).lower() in PROGRAM_NAMES or words[1:3] == ["-m", "mcp_memory"]


def shell_words(command: str) -> list[str] | None:
    """A command's words as a POSIX shell reads them: blanks split; '...' is literal; in "..." a backslash
    escapes only $ ` " \\ (shlex keeps `\\$`, which sh does not); None when a quote is left open."""
    words: list[str] = []
    word: str | None = None
    i = 0
    while i < len(command):
        c = command[i]
        if c in " \t\n":
            if word is not None:
                words.append(word)
            word, i = None, i + 1
            continue
        word = word or ""
        if c == "'" or c == '"':
            end = command.find(c, i + 1)
            while c == '"' and end > 0 and _escaped(command, end):
                end = command.find(c, end + 1)
            if end < 0:
                return None
            inner = command[i + 1 : end]
            word += inner if c == "'" else re.sub(r'\\([$`"\\\n])', r"\1", inner)
            i = end + 1
        elif c == "\\" and i + 1 < len(command):
            word, i = word + command[i + 1], i + 2
        else:
            word, i = word + c, i + 1
    return words + ([word] if word is not None else [])


def _escaped(text: str, at: int) -> bool:
    """The character at `at` follows an odd number of backslashes."""
    count = 0
    while at - count - 1 >= 0 and text[at - count - 1] == "\\":
        count += 1
    return count % 2 == 1


def hook_program(command: str) -> list[str]:
    """The program words of a hook command (those before `hook`), or [] when it runs no `hook`."""
    words = _program_words(shell_words(command) or [])
    return words[: words.index("hook")] if "hook" in words else []


def is_our_hook(entry: object, client: str) -> bool:
    """A hook entry we wrote: its command runs `<mcp-memory> hook <client>`."""
    command = entry.get("command") if isinstance(entry, dict) else None
    if not isinstance(command, str) or f" hook {client}" not in command:
        return False
    words = _program_words(shell_words(command) or [])
    at = words.index("hook") if "hook" in words else len(words)
    return is_our_program(words[:at]) and words[at + 1 : at + 2] == [client]


def is_our_server(entry: object) -> bool:
    """An MCP server entry that starts mcp-memory (ours, or one written by hand from the README)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    args = entry.get("args")
    words = [entry["command"], *(a for a in args if isinstance(a, str))] if isinstance(args, list) else []
    return is_our_program(words or [entry["command"]])


class OpenCode(Client):
    # No command hooks: a plugin, every .js/.ts file in ~/.config/opencode/plugins/ (user) or
    # <project>/.opencode/plugins/ (project): https://opencode.ai/docs/plugins; install_opencode.py writes ours.
    # MCP: https://opencode.ai/docs/mcp-servers: opencode.json "mcp": {name: {"type": "local", "command":
    # [program, ...args], "environment", "enabled"}}, in ~/.config/opencode/ or at the project's root.
    name = "opencode"
    title = "OpenCode"
    docs = ("https://opencode.ai/docs/plugins", "https://opencode.ai/docs/mcp-servers")
    # The plugin hooks it hands over (mcp_memory/hooks/clients.py reads them).
    events = _events(
        ("session.created", "chat.message"),
        ("tool.execute.after", "experimental.session.compacting", "session.idle"),
    )
    servers_key = "mcp"

    def mcp_file(self, scope: Scope, root: Path) -> Path:
        return (opencode_user_dir(root) if scope == "user" else root) / "opencode.json"

    def hooks_file(self, scope: Scope, root: Path) -> Path:
        folder = opencode_user_dir(root) if scope == "user" else root / ".opencode"
        return folder / "plugins" / "mcp-memory.js"

    def server_entry(self, program: list[str], env: dict[str, str], server: str | None = None) -> JsonObject:
        return {
            "type": "local",
            "command": [*program, *serve_words(server)],
            "environment": env,
            "enabled": True,
        }


def opencode_user_dir(home: Path) -> Path:
    """~/.config/opencode, or under $XDG_CONFIG_HOME (OpenCode reads its config where xdg-basedir says)."""
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "opencode"


CLIENTS[OpenCode.name] = OpenCode()


class CopilotCLI(VSCode):
    # Hooks: https://docs.github.com/en/copilot/reference/copilot-cli-reference/cli-hooks-reference: every
    # *.json in ~/.copilot/hooks (user; $COPILOT_HOME/hooks) or .github/hooks (repository, loaded by `copilot
    # -p` only in a trusted folder): VS Code's files and shape (hence the subclass); the PascalCase names
    # send VS Code's snake_case fields.
    # Its own client name, so its hooks sit beside VS Code's in the same file. No output of SessionStart or
    # UserPromptSubmit is processed ("Output processed: No"): recall reaches it through the MCP server only.
    # MCP: `copilot mcp --help`: ~/.copilot/mcp-config.json (user) or .github/mcp.json (workspace),
    # "mcpServers": {name: {"type": "local", "command", "args", "env", "tools": ["*"]}}.
    name = "copilot"
    title = "GitHub Copilot CLI"
    docs = (
        "https://docs.github.com/en/copilot/reference/copilot-cli-reference/cli-hooks-reference",
        "https://docs.github.com/en/copilot/how-tos/copilot-cli/customize-copilot/add-mcp-servers",
    )
    events = _events(
        ("SessionStart", "UserPromptSubmit"),
        ("PostToolUse", "PostToolUseFailure", "PreCompact", "SubagentStop", "Stop", "SessionEnd"),
    )
    servers_key = "mcpServers"

    def mcp_file(self, scope: Scope, root: Path) -> Path:
        return copilot_home(root) / "mcp-config.json" if scope == "user" else root / ".github" / "mcp.json"

    def user_hooks_dir(self, home: Path) -> Path:
        return copilot_home(home) / "hooks"

    def server_entry(self, program: list[str], env: dict[str, str], server: str | None = None) -> JsonObject:
        return {**super().server_entry(program, env, server), "type": "local", "tools": ["*"]}


def copilot_home(home: Path) -> Path:
    """~/.copilot, or $COPILOT_HOME (Copilot CLI's own variable)."""
    configured = os.environ.get("COPILOT_HOME")
    return Path(configured) if configured else home / ".copilot"


CLIENTS[CopilotCLI.name] = CopilotCLI()
