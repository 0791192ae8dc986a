"""Operator family indexing (filled in by its own commit)."""
