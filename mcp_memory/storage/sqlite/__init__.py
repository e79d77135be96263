"""The embedded backend: one SQLite file holds working memory, long-term memory, revisions and counters."""
