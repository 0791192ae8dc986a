"""Where generated kernels live: each source is written once to a module file named by its
hash in the cache folder and imported from there, so numba's own cache (``cache=True``,
``__pycache__`` beside the file) keeps the compiled machine code across processes.

The folder is ``$GRAPHEXEC_CACHE_DIR/fused`` when that variable is set, else
``$XDG_CACHE_HOME/graphexec/fused`` (``~/.cache/graphexec/fused``); when it cannot be created,
a per-user folder under the system's temporary directory. Files are written to a temporary
name and renamed into place, so concurrent processes never read a partial module; a file
whose content does not match its name is rewritten.
"""
from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import sys
import tempfile
import threading
from pathlib import Path
from types import ModuleType

__all__ = ["cache_dir", "load_module", "source_key", "MODULES"]

log = logging.getLogger("graphexec.fused")

#: loaded kernel modules by source hash (one per distinct source in this process)
MODULES: dict[str, ModuleType] = {}
_LOCK = threading.Lock()


def cache_dir() -> Path:
    """The folder generated kernel modules are written to (created on first use)."""
    root = os.environ.get("GRAPHEXEC_CACHE_DIR")
    if root:
        folder = Path(root) / "fused"
    else:
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        folder = Path(base) / "graphexec" / "fused"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return folder
    except OSError as exc:
        fallback = Path(tempfile.gettempdir()) / f"graphexec-fused-{os.getuid()}"
        log.info("fused kernel cache %s is not writable (%s); using %s", folder, exc, fallback)
        fallback.mkdir(parents=True, exist_ok=True)
        return fallback


def source_key(source: str) -> str:
    """The name of a kernel: a hash of its source."""
    return hashlib.sha256(source.encode()).hexdigest()[:20]


def load_module(source: str) -> ModuleType:
    """The module of ``source``: from memory, else imported from the cache folder (written
    there first when absent)."""
    key = source_key(source)
    with _LOCK:
        module = MODULES.get(key)
        if module is None:
            path = _write(cache_dir() / f"fk_{key}.py", source)
            name = f"graphexec_fused_{key}"
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # numba's cache locates functions by their module
            spec.loader.exec_module(module)
            MODULES[key] = module
        return module


def _write(path: Path, source: str) -> Path:
    try:
        if path.read_text() == source:
            return path
    except (OSError, UnicodeDecodeError):
        pass
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(source)
    os.replace(tmp, path)
    return path
