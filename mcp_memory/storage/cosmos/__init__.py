"""The Azure Cosmos DB for NoSQL backend: long-term memory with hierarchical partition keys and native
hybrid search, revisions, learning counters and stored-bytes usage."""
