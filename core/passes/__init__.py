"""Graph passes (pure functions Graph -> Graph), the pass manager that runs them by name or by
pipeline stage, and the symbol-level shape/dtype inference API built on them
(:mod:`.inference`). Importing this package registers the built-in passes."""
# importing the pass modules registers the passes; inference installs Symbol.infer_shape/type
from . import assign_context, cse, gradient, infer_shape, inference, plan_memory  # noqa: F401
from .manager import STAGES, apply_passes, get_pass, list_passes, register_pass, run_stage

__all__ = ["apply_passes", "get_pass", "list_passes", "register_pass", "run_stage", "STAGES"]
