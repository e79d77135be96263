"""`mcp-memory eval`'s replay and scoring: the user's own sessions (history.py) replayed into a throw-away
store and asked at each first prompt as the hook asks (replay.py), scored by identifiers (identifiers.py)."""
