"""Search without I/O: a query's terms, the in-memory BM25 and vector indexes, and fusing their rankings."""
