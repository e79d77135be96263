"""This machine's side of a shared memory server (`mcp-memory login URL`, `install <client> --server URL`):
where its state is kept (places.py, standard library), the sign-in and the credential, the outbox the
hooks write and the courier that delivers it, the stdio bridge a client's MCP entry starts
(docs/team.md)."""
