"""The runtime, the top layer of the core below startup: the kernel registry
(:mod:`.kernels`), execution plans (:mod:`.plan`, :mod:`.bulk`), the bind pipeline
(:mod:`.pipeline`), the :class:`~.executor.Executor`, ``Symbol.bind`` / ``simple_bind``
(:mod:`.bind`), memory and parameter sharing (:mod:`.sharing`), bucketing
(:mod:`.bucketing`) and the region kernel (:mod:`.regions`). Importing the package installs
the Symbol methods it implements."""
from . import bind  # noqa: F401 - installs Symbol.bind / simple_bind
