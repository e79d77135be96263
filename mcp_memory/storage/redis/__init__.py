"""The Redis backend: working memory shared by replicas, learning counters, rate buckets and the relay
that carries change notifications between replicas. Every multi-key write is one Lua script (scripts/)."""
