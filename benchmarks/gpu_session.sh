#!/usr/bin/env bash
# One device run for issue #22, for a session lent a GPU machine (minutes of device time, no
# network there): graphexec straight from this working tree (a symlink named graphexec on
# PYTHONPATH: nothing to install), the packages it finds, then benchmarks/gpu_probe.py (which
# native kernels run on gx.gpu(0)) and benchmarks/bench_gpu.py (the fused chain's figure).
# Each step reports what is missing and the next one runs anyway.
# Dependencies the machine lacks (pluggy, rich, onnx, ...): download their wheels here into
# devwheels/ (git-ignored; e.g. pip download --only-binary=:all: --python-version 3.12
# --platform manylinux2014_x86_64 -d devwheels pluggy rich onnx threadpoolctl) and carry
# that folder with the run: they are installed from it (no index, no dependencies) first.
# Run from the repository root: bash benchmarks/gpu_session.sh [--size N]
set -u
PYTHON=${PYTHON:-python}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHIM=$(mktemp -d)
ln -s "$ROOT" "$SHIM/graphexec"
export PYTHONPATH="$SHIM${PYTHONPATH:+:$PYTHONPATH}"
if compgen -G "$ROOT/devwheels/*.whl" > /dev/null; then
    "$PYTHON" -m pip install -q --no-index --no-deps --target "$SHIM/deps" \
        "$ROOT"/devwheels/*.whl && export PYTHONPATH="$PYTHONPATH:$SHIM/deps"
fi
cd "$SHIM" || exit 1
"$PYTHON" - <<'PY'
import importlib
for name in ("numpy", "pluggy", "onnx", "onnxruntime", "cupy", "numba", "torch", "graphexec"):
    try:
        module = importlib.import_module(name)
        print(f"{name:12s} {getattr(module, '__version__', 'ok')}")
    except Exception as exc:  # noqa: BLE001 - report and go on
        print(f"{name:12s} MISSING ({type(exc).__name__}: {exc})")
PY
echo "== gpu_probe"
timeout 300 "$PYTHON" "$ROOT/benchmarks/gpu_probe.py" || echo "gpu_probe exited $?"
echo "== bench_gpu"
timeout 300 "$PYTHON" "$ROOT/benchmarks/bench_gpu.py" "$@" || echo "bench_gpu exited $?"
