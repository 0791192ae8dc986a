"""Training-harness figures (issue 20), from examples/train_mnist_like.py's own log
("Epoch[k] Time cost=..." is the training time of epoch k, as Module.fit logs it):

1. Module.fit epoch time of the MLP and of LeNet, graphexec against MXNet 1.9.1 in the same
   session: the two run the same script (MXNet's copy imports mxnet) in alternating
   processes; epoch 0 (binding, first-touch) is left out. Goal: ratio <= 1.0.
2. dist_sync throughput of LeNet (compute-bound) with 2 processes x 1 thread against 1
   process x 1 thread, under mpiexec, alternating. Goal: >= 1.6x. The machine's own
   parallelism is measured right before (two independent single-thread matmul processes
   against one) and printed with it.

Run: python benchmarks/bench_harness.py --mxnet /path/to/mxnet-venv/bin/python [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "examples" / "train_mnist_like.py"


def epoch_times(output: str) -> list[float]:
    """Training seconds of epochs 1.. (epoch 0 binds and warms up)."""
    times = [float(t) for t in re.findall(r"Epoch\[(?:[1-9]\d*)\] Time cost=([0-9.]+)", output)]
    if not times:
        raise RuntimeError(f"no epoch times in the output:\n{output[-2000:]}")
    return times


def run(command: list[str], cwd: Path, threads: int, backend: str = "NONE") -> str:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MXNET_SUBGRAPH_BACKEND=backend)
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=3600)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n{proc.stderr[-3000:]}")
    return proc.stdout + proc.stderr


def mxnet_copy(folder: Path) -> Path:
    shutil.copy(SCRIPT.parent / "mnist_like.py", folder)
    path = folder / "train_mx.py"
    path.write_text(SCRIPT.read_text().replace("import graphexec as mx\n", "import mxnet as mx\n"))
    return path


def bench_fit(mxnet: str, rounds: int, threads: int, backends: list[str]) -> None:
    """MXNet (``MXNET_SUBGRAPH_BACKEND=NONE``: its default CPU kernels) against graphexec
    with each of ``backends`` (MXNET_SUBGRAPH_BACKEND of the graphexec process), in turn."""
    print(f"Module.fit epoch time (training part), OMP_NUM_THREADS={threads}, alternating "
          f"processes, {rounds} rounds:")
    with tempfile.TemporaryDirectory() as tmp:
        mx_script = mxnet_copy(Path(tmp))
        for network, extra in (("mlp", ["--num-train", "30000"]),
                               ("lenet", ["--num-train", "6000"])):
            args = ["--network", network, "--num-epoch", "3", *extra]
            times: dict[str, list[float]] = {"mxnet": [], **{b: [] for b in backends}}
            for _ in range(rounds):
                times["mxnet"] += epoch_times(run([mxnet, str(mx_script), *args], Path(tmp),
                                                  threads))
                for backend in backends:
                    times[backend] += epoch_times(run([sys.executable, str(SCRIPT), *args],
                                                      SCRIPT.parent, threads, backend))
            mx_s = statistics.median(times["mxnet"])
            for backend in backends:
                gx_s = statistics.median(times[backend])
                print(f"  {network:5s} graphexec {backend:6s} {gx_s:7.3f} s/epoch   MXNet 1.9.1 "
                      f"{mx_s:7.3f} s/epoch   ratio {gx_s / mx_s:.3f} (goal <= 1.0)   "
                      f"[{' '.join(f'{t:.3f}' for t in times[backend])} | "
                      f"{' '.join(f'{t:.3f}' for t in times['mxnet'])}]")


def parallelism() -> float:
    """How many single-thread processes this machine runs at once at full speed (~1-2)."""
    code = ("import numpy as np, time\na = np.ones((500, 500), 'f4')\nt = time.time()\n"
            "for _ in range(80): a @ a\nprint(time.time() - t)")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    alone = float(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                 text=True).stdout)
    pair = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                             text=True) for _ in range(2)]
    both = max(float(p.communicate()[0]) for p in pair)
    return 2 * alone / both


def bench_dist(rounds: int) -> None:
    mpiexec = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or \
        shutil.which("mpiexec")
    if mpiexec is None:
        print("dist_sync: no mpiexec (pip install graphexec[dist])")
        return
    cores = parallelism()
    print(f"dist_sync LeNet throughput, 1 thread per process, {rounds} rounds "
          f"(this machine runs {cores:.2f} single-thread processes at once now):")
    args = ["--network", "lenet", "--num-epoch", "3", "--num-train", "6000",
            "--kvstore", "dist_sync"]
    times: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(rounds):
        for n in (1, 2):
            out = run([mpiexec, "-n", str(n), sys.executable, str(SCRIPT), *args],
                      SCRIPT.parent, 1)
            times[n] += epoch_times(out)[:2]  # one worker's lines (both log the same epochs)
    one, two = (statistics.median(times[n]) for n in (1, 2))
    print(f"  1 process: {6000 / one:8.1f} samples/s   2 processes: {6000 / two:8.1f} "
          f"samples/s   speed-up {one / two:.2f}x (goal >= 1.6x; {one / two / cores:.2f} of "
          f"what the free cores allow)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mxnet", help="python of a venv with mxnet==1.9.1 (for the fit ratio)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--skip-dist", action="store_true")
    ap.add_argument("--backends", default="NONE,torch",
                    help="graphexec strategies (MXNET_SUBGRAPH_BACKEND), comma-separated")
    opts = ap.parse_args()
    start = time.time()
    if opts.mxnet:
        bench_fit(opts.mxnet, opts.rounds, opts.threads, opts.backends.split(","))
    if not opts.skip_dist:
        bench_dist(opts.rounds)
    print(f"({time.time() - start:.0f} s)")
