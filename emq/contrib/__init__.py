"""Adapters that plug emq into other frameworks."""
