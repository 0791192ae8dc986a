"""Operator family nn (filled in by its own commit)."""
