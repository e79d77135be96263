"""Test doubles that stand in for outside services: the OpenAI-compatible stub server."""
