"""Where numba-compiled kernels live (the fused backend's generated kernels, the native
kernels' compiled loops): each source is written once to a module file named by its hash in
the cache folder and imported from there, so numba's own cache (``cache=True``,
``__pycache__`` beside the file) keeps the compiled machine code across processes.

The folder is ``$GRAPHEXEC_CACHE_DIR/jit`` when that variable is set, else
``$XDG_CACHE_HOME/graphexec/jit`` (``~/.cache/graphexec/jit``); when it cannot be created,
a per-user folder under the system's temporary directory. Files are written to a temporary
name and renamed into place, so concurrent processes never read a partial module; a file
whose content does not match its name is rewritten.

**What the cache trusts.** Importing a module file runs it, and numba unpickles its index and
data files (kept in ``__pycache__`` beside the module, or under ``NUMBA_CACHE_DIR`` when you
set it), so whoever can write the folder can run code in the next process that compiles a
kernel. The folder is therefore used only when it is private: owned by the user, not writable
by group or others, and inside folders nobody else can rename or replace (each ancestor owned
by the user or root, and not writable by others unless sticky, as ``/tmp`` is). Folders are
created with mode 0700 and checked every time a new kernel is loaded; a folder that fails the
check (``NUMBA_CACHE_DIR`` too) is refused with a warning and kernels are compiled in memory
(not cached). A cache file numba cannot load (truncated, corrupt) is deleted and compiled
again, with a warning.
"""
from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import stat
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["cache_dir", "load_module", "compile_cached", "source_key", "unsafe_reason",
           "MODULES", "CACHE_OPTION"]

log = logging.getLogger("graphexec.jit")

#: loaded kernel modules by source hash (one per distinct source in this process)
MODULES: dict[str, ModuleType] = {}
#: the ``njit`` option that caches a kernel on disk (turned off for in-memory kernels)
CACHE_OPTION = "cache=True"
_LOCK = threading.Lock()
_WARNED: set = set()


def cache_dir() -> Path | None:
    """The private folder generated kernel modules are written to (created on first use), or
    None when no private folder is available (kernels are then compiled in memory)."""
    root = os.environ.get("GRAPHEXEC_CACHE_DIR")
    if root:
        folder = Path(root) / "jit"
    else:
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        folder = Path(base) / "graphexec" / "jit"
    try:
        _make_private(folder)
    except OSError as exc:
        fallback = Path(tempfile.gettempdir()) / f"graphexec-jit-{_uid()}"
        log.info("compiled kernel cache %s cannot be created (%s); using %s", folder,
                 exc.strerror, fallback)
        folder = fallback
        try:
            _make_private(folder)
        except OSError as exc2:
            return _refuse(folder, f"cannot be created ({exc2.strerror})")
    numba_dir = os.environ.get("NUMBA_CACHE_DIR")  # numba then keeps its pickles there
    for path in (folder, folder / "__pycache__", *([Path(numba_dir)] if numba_dir else [])):
        why = unsafe_reason(path)
        if why:
            return _refuse(path, why)
    return folder


def _make_private(folder: Path) -> None:
    """Create ``folder`` and the ``__pycache__`` numba writes into it with mode 0700 (numba
    would create the latter with the umask's mode, group-writable under umask 002)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.mkdir(mode=0o700, exist_ok=True)
    (folder / "__pycache__").mkdir(mode=0o700, exist_ok=True)


def _uid() -> int | None:
    return os.getuid() if hasattr(os, "getuid") else None


def unsafe_reason(folder: Path) -> str | None:
    """Why ``folder`` may not hold kernels (someone else could write or replace it), or None
    when it is private. Without POSIX ownership (Windows) every folder is accepted."""
    uid = _uid()
    if uid is None:
        return None
    try:
        st = os.stat(folder)
    except OSError as exc:
        return f"cannot be examined ({exc.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if st.st_uid != uid:
        return f"is owned by uid {st.st_uid}, not by you (uid {uid})"
    if st.st_mode & 0o022:
        return f"is writable by others (mode {stat.S_IMODE(st.st_mode):o})"
    for parent in sorted(set(folder.absolute().parents) | set(folder.resolve().parents)):
        try:
            st = os.stat(parent)
        except OSError as exc:
            return f"has a parent {parent} that cannot be examined ({exc.strerror})"
        if st.st_uid not in (0, uid):
            return f"lies in {parent}, owned by uid {st.st_uid}, who can replace it"
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            return (f"lies in {parent}, writable by others (mode "
                    f"{stat.S_IMODE(st.st_mode):o}), who can replace it")
    return None


def _refuse(folder: Path, why: str) -> None:
    if (folder, why) not in _WARNED:
        _WARNED.add((folder, why))
        warnings.warn(f"compiled kernel cache: {folder} {why}; a folder others can write could "
                      f"make this process run their code, so kernels are compiled in "
                      f"memory instead (not cached across processes). Point "
                      f"GRAPHEXEC_CACHE_DIR at a folder only you can write.", RuntimeWarning,
                      stacklevel=4)
    return None


def source_key(source: str) -> str:
    """The name of a kernel: a hash of its source."""
    return hashlib.sha256(source.encode()).hexdigest()[:20]


def load_module(source: str) -> ModuleType:
    """The module of ``source``: from memory, else imported from the cache folder (written
    there first when absent), else (no private folder) executed in memory without caching."""
    key = source_key(source)
    with _LOCK:
        module = MODULES.get(key)
        if module is None:
            folder = cache_dir()
            name = f"graphexec_jit_{key}"
            module = _in_memory(name, source) if folder is None else \
                _from_file(folder, name, source, key)
            MODULES[key] = module
        return module


def _from_file(folder: Path, name: str, source: str, key: str) -> ModuleType:
    try:
        path = _write(folder / f"fk_{key}.py", source)
    except OSError as exc:
        _refuse(folder, f"cannot hold fk_{key}.py ({exc.strerror})")
        return _in_memory(name, source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # numba's cache locates functions by their module
    spec.loader.exec_module(module)
    return module


def _in_memory(name: str, source: str) -> ModuleType:
    module = ModuleType(name)
    code = compile(source.replace(CACHE_OPTION, "cache=False"), f"<compiled kernel {name}>",
                   "exec")
    exec(code, module.__dict__)  # noqa: S102 - graphexec's own generated source
    return module


def compile_cached(fn: Any, signature: tuple, module: ModuleType) -> None:
    """``fn.compile(signature)`` for a kernel of ``module``. When that fails and the kernel
    has files in numba's cache (corrupt or truncated ones make numba's loader raise, in every
    later process too), the files are deleted, the kernel compiled again and the replacement
    reported once; a failure that does not come from the cache is raised as it is."""
    try:
        fn.compile(signature)
        return
    except Exception as exc:  # noqa: BLE001 - numba raises anything its unpickler meets
        stale = _numba_files(module)
        if not stale:
            raise
        first = exc
    for path in stale:
        path.unlink(missing_ok=True)
    fn.compile(signature)
    warnings.warn(f"compiled kernel cache: {', '.join(p.name for p in stale)} in {stale[0].parent} "
                  f"could not be loaded ({type(first).__name__}: {first}); deleted and "
                  f"compiled again", RuntimeWarning, stacklevel=3)


def _numba_files(module: ModuleType) -> list[Path]:
    path = getattr(module, "__file__", None)
    if not path:
        return []
    stem = Path(path).stem
    folder = Path(path).parent / "__pycache__"
    return sorted(p for p in folder.glob(f"{stem}.*") if p.suffix in (".nbi", ".nbc"))


def _write(path: Path, source: str) -> Path:
    try:
        current = path.read_text()
    except FileNotFoundError:
        current = None
    except (OSError, UnicodeDecodeError) as exc:
        current = f"<unreadable: {exc}>"
    if current == source:
        return path
    if current is not None:
        warnings.warn(f"compiled kernel cache: {path} does not hold the kernel its name promises; "
                      f"rewritten", RuntimeWarning, stacklevel=4)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(source)
    os.replace(tmp, path)
    return path
