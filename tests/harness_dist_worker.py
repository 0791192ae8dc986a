"""One worker of the distributed KVStore tests (tests/test_harness_kvstore.py runs it under
``mpiexec -n 2``): ``python harness_dist_worker.py CASE KIND OUTDIR`` writes ``OK <case>
<details>`` lines to OUTDIR/rank<r>.txt (mpiexec's forwarded output may interleave lines)."""
from __future__ import annotations

import builtins
import functools
import os
import sys

import numpy as np

import graphexec as gx


def basic(kv):
    kv.init("w", gx.nd.full((2, 3), float(kv.rank + 1)))  # worker 0's value wins
    out = gx.nd.zeros((2, 3))
    kv.pull("w", out=out)
    assert (out.asnumpy() == 1).all(), out
    kv.push("w", [gx.nd.ones((2, 3)) * (kv.rank + 1), gx.nd.ones((2, 3))])  # 2 devices
    kv.pull("w", out=out)
    assert (out.asnumpy() == 5).all(), out  # (1 + 1) + (2 + 1)
    kv.init("b", gx.nd.zeros(4))
    kv.set_optimizer(gx.optimizer.SGD(learning_rate=0.5, rescale_grad=0.5))
    value = gx.nd.full(4, float(kv.rank))
    kv.pushpull("b", value)
    assert np.allclose(value.asnumpy(), -0.25), value  # 0 - 0.5 * 0.5 * (0 + 1)
    kv.barrier()
    print(f"OK basic rank={kv.rank} workers={kv.num_workers} type={kv.type}")


def async_order(kv):
    kv.init(0, gx.nd.zeros(1))
    kv.set_optimizer(gx.optimizer.SGD(learning_rate=1.0, momentum=0.5))
    kv.push(0, gx.nd.full(1, float(kv.rank + 1)))
    out = gx.nd.zeros(1)
    kv.pull(0, out=out)
    # rank 0's push then rank 1's, each an update: mom=-1, w=-1; mom=-0.5-2, w=-3.5
    assert np.allclose(out.asnumpy(), -3.5), out
    print(f"OK async rank={kv.rank}")


def mismatch(kv):
    kv.init(0, gx.nd.zeros(3))
    kv.push(0, gx.nd.zeros(3))
    try:
        kv.push(0 if kv.rank == 0 else 1, gx.nd.zeros(3))
    except gx.kv.KVStoreError as exc:
        print(f"OK mismatch rank={kv.rank} {str(exc).splitlines()[0]}")
        for line in str(exc).splitlines()[1:]:
            print(f"OK mismatch-detail rank={kv.rank} {line.strip()}")
        return
    print(f"FAIL mismatch rank={kv.rank}: no error")


def module(kv):
    """dist_sync training equals one process training on the joined batches."""
    rng = np.random.RandomState(0)
    x = rng.normal(0, 1, (6, 2, 10, 8)).astype("f4")  # 6 steps x 2 workers x 10 examples
    y = rng.randint(0, 3, (6, 2, 10)).astype("f4")
    net = gx.sym.SoftmaxOutput(gx.sym.FullyConnected(gx.sym.Variable("data"), num_hidden=3,
                                                     name="fc"), name="softmax")
    mine = gx.io.NDArrayIter(x[:, kv.rank].reshape(-1, 8), y[:, kv.rank].reshape(-1),
                             batch_size=10)
    mod = gx.mod.Module(net)
    gx.random.seed(kv.rank)  # different local inits: the store starts everyone from rank 0's
    mod.fit(mine, kvstore=kv, optimizer="sgd", initializer=gx.init.Xavier(),
            optimizer_params={"learning_rate": 0.3, "momentum": 0.9}, num_epoch=2)
    weight = mod.get_params()[0]["fc_weight"].asnumpy()
    if kv.rank == 0:
        gx.random.seed(0)
        ref = gx.mod.Module(net)
        ref.fit(gx.io.NDArrayIter(x.reshape(-1, 8), y.reshape(-1), batch_size=20),
                optimizer="sgd", initializer=gx.init.Xavier(),
                optimizer_params={"learning_rate": 0.3, "momentum": 0.9}, num_epoch=2)
        want = ref.get_params()[0]["fc_weight"].asnumpy()
        assert np.allclose(weight, want, rtol=1e-5, atol=1e-6), np.abs(weight - want).max()
    print(f"OK module rank={kv.rank} checksum={weight.sum():.6f}")


if __name__ == "__main__":
    case, kind, outdir = sys.argv[1:4]
    store = gx.kv.create(kind)
    out = open(os.path.join(outdir, f"rank{store.rank}.txt"), "w")
    print = functools.partial(builtins.print, file=out, flush=True)  # noqa: A001
    {"basic": basic, "async": async_order, "mismatch": mismatch, "module": module}[case](store)
