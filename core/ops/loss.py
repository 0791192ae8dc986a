"""Operator family loss (filled in by its own commit)."""
