"""Operator family tensor (filled in by its own commit)."""
