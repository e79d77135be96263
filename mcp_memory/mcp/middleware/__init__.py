"""Everything a request passes through before its handler, in one place.

The MCP server's chain (`install_chain` in mcp/server.py), outermost first:
0. bounded.py: BoundedErrors, no error answered longer than ~300 characters, malformed params in words;
1. call_metrics.py: CallMetrics, every request counted, timed and traced (so refusals count too);
2. request_log.py: RequestLog, a request id for every log line and one line per request;
3. client_log.py: ClientLog, the log a 2025 client asked for with logging/setLevel;
4. scopes.py: ScopeGuard, the principal's scopes for the tool or read;
5. audit_actor.py: AuditActor, who the audit trail names for what the request changes or reads;
6. rate_limit.py: RateLimit, the principal's requests per second;
7. learning's SamplingSessions (llm/sampling.py): which session can sample for a user;
8. session_instructions.py: SessionInstructions, the instructions for a client whose hooks capture the
   conversation (or not), as its session says.
Before MCP, on the HTTP transports (ASGI): oauth.py (the OAuth resource guard: 401/403 and
its challenges) and admission.py (a fair queue per
user under load), both reading the request body once through request_body.py. results.py is what they
share about a handler's result. answered.py answers what is not well-formed JSON-RPC at all, before any
of this: on the session's read stream (stdio, SSE) and in front of streamable HTTP.
"""
