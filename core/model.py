"""``gx.model``: MXNet checkpoints (filled in by its own commit)."""
