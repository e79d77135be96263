"""Model providers: embeddings (embedder.py) and chat (chat.py). Each is opened by its own factory."""
