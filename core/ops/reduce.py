"""Operator family reduce (filled in by its own commit)."""
