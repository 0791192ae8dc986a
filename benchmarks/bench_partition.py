"""Partitioning figures (issue 5): partition + bind time for chains and random DAGs of 1k, 10k,
20k and 100k nodes with a backend (``default``) claiming half the operator types, against
MXNet 1.9.1's recorded bind of a 20k chain (0.26 s plain, 1.19 s with its MKLDNN partitioner).

Run: python benchmarks/bench_partition.py [max_nodes]
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import graphexec as gx  # noqa: E402

MXNET_PARTITIONED_20K_S = 1.19
UNARY = ["sin", "cos", "tanh", "exp", "abs", "sigmoid"]
CLAIMED = {"sin", "cos", "tanh", "elemwise_add"}     # half of the op types used


def chain(n: int) -> gx.sym.Symbol:
    x = gx.sym.Variable("x")
    for i in range(n):
        x = gx.core.symbol.create_op_symbol(UNARY[i % len(UNARY)], [x], {})
    return x


def random_dag(n: int, seed: int = 0) -> gx.sym.Symbol:
    """Each node reads one or two of the 8 most recent nodes; every unread node is an output."""
    rng = np.random.default_rng(seed)
    pool = [gx.sym.Variable("x"), gx.sym.Variable("y")]
    unread = set(range(2))
    for _ in range(n):
        picks = [len(pool) - 1 - int(rng.integers(min(8, len(pool))))]
        if rng.random() < 0.3:
            picks.append(len(pool) - 1 - int(rng.integers(min(8, len(pool)))))
            op = "elemwise_add" if rng.random() < 0.5 else "elemwise_mul"
        else:
            op = UNARY[rng.integers(len(UNARY))]
        node = gx.core.symbol.create_op_symbol(op, [pool[i] for i in picks], {})
        unread -= set(picks)
        unread.add(len(pool))
        pool.append(node)
    return gx.sym.Group([pool[i] for i in sorted(unread) if i > 1])


def time_bind(sym: gx.sym.Symbol, backend: str, repeat: int) -> float:
    """Median of ``repeat`` binds."""
    shapes = {n: (4,) for n in sym.list_arguments()}
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        sym.simple_bind(gx.cpu(), grad_req="null", backend=backend, **shapes)
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def main() -> None:
    top = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    gx.subgraph.set_op_names("default", CLAIMED)
    print("partition + simple_bind (grad_req null), backend 'default' claiming "
          f"{sorted(CLAIMED)}:")
    for kind, make in (("chain", chain), ("random DAG", random_dag)):
        prev = None
        for n in (1000, 10_000, 20_000, 100_000):
            if n > top:
                break
            sym = make(n)
            repeat = 3 if n <= 20_000 else 1
            plain = time_bind(sym, "NONE", repeat)
            part = time_bind(sym, "default", repeat)
            plan = gx.partition(sym, "default")
            growth = f"  x{part / prev[1]:.1f} for x{n // prev[0]} nodes" if prev else ""
            extra = f"  (MXNet partitioned 20k chain: {MXNET_PARTITIONED_20K_S} s)" \
                if n == 20_000 and kind == "chain" else ""
            print(f"  {kind:10s} {n:7d} nodes: {part:7.3f} s partitioned ({len(plan.regions)} "
                  f"regions, {plan.num_claimed} ops claimed), {plain:7.3f} s unpartitioned"
                  f"{growth}{extra}")
            prev = (n, part)


if __name__ == "__main__":
    main()
