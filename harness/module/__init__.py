"""``gx.mod`` / ``gx.module``: MXNet 1.9.1's modules — ``Module`` (data parallel over
contexts through ``DataParallelExecutorGroup``), ``BucketingModule``, ``SequentialModule``
and their ``BaseModule`` interface (``fit``, ``score``, ``predict``, ...)."""
from .base_module import BaseModule
from .errors import ModuleError, ModuleStateError
from .executor_group import DataParallelExecutorGroup
from .bucketing_module import BucketingModule
from .module import Module
from .sequential_module import SequentialModule

__all__ = ["BaseModule", "Module", "BucketingModule", "SequentialModule",
           "DataParallelExecutorGroup", "ModuleError", "ModuleStateError"]
