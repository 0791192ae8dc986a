"""Graph passes (pure functions Graph -> Graph) and the pass manager that runs them by name.
Importing this package registers the built-in passes."""
from . import (assign_context, cse, gradient, infer_shape,  # noqa: F401 - registers the passes
               plan_memory)
from .manager import apply_passes, get_pass, list_passes, register_pass

__all__ = ["apply_passes", "get_pass", "list_passes", "register_pass"]
