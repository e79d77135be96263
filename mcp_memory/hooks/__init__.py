"""Capture and recall through the coding agents' own lifecycle hooks (`mcp-memory hook <client>`).

Everything here is standard library only: a hook is a new process per event, and its whole budget
(process start included) is a few hundred milliseconds. The heavy work (storing, searching) happens in
the resident server (`mcp-memory serve --socket`), which the hook reaches over a Unix socket.

- events.py: one event, whatever the client (HookEvent), and what a hook prints back.
- clients.py: each client's payloads and outputs (Claude Code, Cursor, VS Code / Copilot, Codex, Gemini).
- transcripts.py: what a Claude Code transcript holds worth keeping (prompts, replies, observations).
- captured.py: what one captured event stores, read on the machine the session ran on (transcripts or the payload).
- projects.py: which project a working directory belongs to (its git remote, else its directory).
- spool.py: events written to disk first, so nothing is lost while the store is busy or down.
- daemon.py: finding, starting and asking the resident server.
"""
