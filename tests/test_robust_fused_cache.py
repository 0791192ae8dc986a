"""The fused kernel cache trusts only private folders (issue #15, item 1) and replaces files
numba cannot load (item 7)."""
from __future__ import annotations

import os
import pickle
import shutil
import stat
import warnings

import numpy as np
import pytest

import graphexec as gx
from graphexec.core.runtime import jit_cache as cache

pytest.importorskip("numba")


@pytest.fixture
def fresh(monkeypatch):
    """No kernel module loaded in this process, no warning already given."""
    monkeypatch.setattr(cache, "MODULES", {})
    monkeypatch.setattr(cache, "_WARNED", set())
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _run_fused():
    """Bind and run a one-region fused graph; (outputs, warnings as text)."""
    x = gx.sym.Variable("x")
    exe = (gx.sym.exp(x) * 2).simple_bind(gx.cpu(), x=(8,), grad_req="null", backend="fused",
                                          backend_options={"fused": {"cost_model": False}})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = exe.forward(x=np.ones(8, "f4"))[0].copy()
    assert exe.partition_plan.fallbacks == 0
    return out, [str(w.message) for w in caught]


def test_folders_are_created_private(tmp_path, monkeypatch, fresh):
    monkeypatch.setenv("GRAPHEXEC_CACHE_DIR", str(tmp_path / "new"))
    folder = cache.cache_dir()
    assert folder == tmp_path / "new" / "jit"
    assert _mode(folder) == 0o700 and _mode(folder / "__pycache__") == 0o700


@pytest.mark.parametrize("sub", ["", "__pycache__"])
def test_a_folder_others_can_write_is_refused(tmp_path, monkeypatch, fresh, sub):
    monkeypatch.setenv("GRAPHEXEC_CACHE_DIR", str(tmp_path))
    (tmp_path / "jit" / "__pycache__").mkdir(parents=True)
    os.chmod(tmp_path / "jit" / sub, 0o777)
    with pytest.warns(RuntimeWarning, match=r"is writable by others \(mode 777\).*compiled in "
                                            r"memory"):
        assert cache.cache_dir() is None


def test_a_folder_owned_by_someone_else_is_refused(tmp_path, monkeypatch, fresh):
    monkeypatch.setenv("GRAPHEXEC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_uid", lambda: os.getuid() + 4242)
    with pytest.warns(RuntimeWarning, match=f"is owned by uid {os.getuid()}, not by you"):
        assert cache.cache_dir() is None


def test_a_folder_inside_one_others_can_write_is_refused(tmp_path, monkeypatch, fresh):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # anyone may rename graphexec's folder away and plant another
    monkeypatch.setenv("GRAPHEXEC_CACHE_DIR", str(shared / "cache"))
    with pytest.warns(RuntimeWarning, match=f"lies in {shared}, writable by others"):
        assert cache.cache_dir() is None
    os.chmod(shared, 0o1777)  # sticky, as /tmp: only the owner may rename its entries
    assert cache.cache_dir() == shared / "cache" / "jit"


def test_numba_cache_dir_is_checked_too(tmp_path, monkeypatch, fresh):
    monkeypatch.setenv("GRAPHEXEC_CACHE_DIR", str(tmp_path / "mine"))
    (tmp_path / "numba").mkdir()
    os.chmod(tmp_path / "numba", 0o777)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    with pytest.warns(RuntimeWarning, match="numba is writable by others"):
        assert cache.cache_dir() is None


def _temp_fallback(tmp_path, monkeypatch):
    """GRAPHEXEC_CACHE_DIR under a file (cannot be created) and a sticky temporary folder;
    returns the per-user fallback folder graphexec would use there."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("GRAPHEXEC_CACHE_DIR", str(blocker / "cache"))
    temp = tmp_path / "tmp"
    temp.mkdir()
    os.chmod(temp, 0o1777)
    monkeypatch.setattr("tempfile.tempdir", str(temp))
    return temp / f"graphexec-jit-{os.getuid()}"


def test_the_temporary_fallback_is_created_private(tmp_path, monkeypatch, fresh):
    fallback = _temp_fallback(tmp_path, monkeypatch)
    assert cache.cache_dir() == fallback and _mode(fallback) == 0o700


def test_a_fallback_planted_by_another_user_is_refused(tmp_path, monkeypatch, fresh):
    fallback = _temp_fallback(tmp_path, monkeypatch)
    fallback.mkdir()
    os.chmod(fallback, 0o777)  # made in advance, world-writable, by someone else
    with pytest.warns(RuntimeWarning, match=f"{fallback} is writable by others"):
        assert cache.cache_dir() is None


class _Payload:
    """Unpickling this creates the file ``marker``: proof that a planted pickle ran."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_planted_pickle_never_runs(tmp_path, monkeypatch, fresh, fused_kernel_cache):
    expected, _ = _run_fused()  # compiled in the private test cache: its file names
    (module,) = cache.MODULES.values()
    names = [p.name for p in cache._numba_files(module)]
    assert names and all(n.endswith((".nbi", ".nbc")) for n in names)
    planted = tmp_path / "evil" / "jit"
    (planted / "__pycache__").mkdir(parents=True)
    shutil.copy(module.__file__, planted)
    marker = tmp_path / "pwned"
    for name in names:
        (planted / "__pycache__" / name).write_bytes(pickle.dumps(_Payload(str(marker))))
    for folder in (planted, planted / "__pycache__"):
        os.chmod(folder, 0o777)
    monkeypatch.setenv("GRAPHEXEC_CACHE_DIR", str(tmp_path / "evil"))
    cache.MODULES.clear()
    out, messages = _run_fused()
    assert not marker.exists()
    assert any("writable by others" in m and "compiled in memory" in m for m in messages)
    np.testing.assert_array_equal(out, expected)
    (module,) = cache.MODULES.values()
    assert not hasattr(module, "__file__")  # compiled in memory


def test_a_corrupt_cache_file_is_replaced_once(tmp_path, monkeypatch, fresh):
    monkeypatch.setenv("GRAPHEXEC_CACHE_DIR", str(tmp_path))
    expected, messages = _run_fused()
    assert messages == []
    (module,) = cache.MODULES.values()
    files = cache._numba_files(module)
    for path in files:
        path.write_bytes(b"garbage\n")
    cache.MODULES.clear()  # the next process, as far as the cache is concerned
    out, messages = _run_fused()
    np.testing.assert_array_equal(out, expected)
    assert len(messages) == 1 and "could not be loaded" in messages[0] and \
        "deleted and compiled again" in messages[0]
    cache.MODULES.clear()
    out, messages = _run_fused()  # the replaced files load without a word
    assert messages == [] and cache._numba_files(module)
    np.testing.assert_array_equal(out, expected)


def test_a_module_file_that_differs_from_its_name_is_rewritten(tmp_path, monkeypatch, fresh):
    monkeypatch.setenv("GRAPHEXEC_CACHE_DIR", str(tmp_path))
    source = '"""k"""\nvalue = 1\n'
    path = tmp_path / "jit" / f"fk_{cache.source_key(source)}.py"
    path.parent.mkdir(mode=0o700)
    path.write_text("import os\nvalue = 2\n")
    with pytest.warns(RuntimeWarning, match="does not hold the kernel its name promises"):
        assert cache.load_module(source).value == 1
    assert path.read_text() == source
