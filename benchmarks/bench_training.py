"""Training figures (issue 3): MLP 784-512-512-10, batch 64, SoftmaxOutput. One
forward(is_train=True)+backward and one inference forward, against a hand-written numpy
forward+backward run in the same process, and MXNet 1.9.1's recorded figures. With --mxnet,
MXNet is also timed right before and right after (benchmarks/mxnet_oracle.py in that
interpreter; another process, so that ratio is not interleaved).

Run: OMP_NUM_THREADS=2 python benchmarks/bench_training.py [--mxnet /path/to/mxvenv/bin/python]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import interleaved_medians, mxnet_ms  # noqa: E402

import graphexec as gx  # noqa: E402

MXNET_MS = {"train": 3.98, "infer": 1.33}     # MXNet 1.9.1, OMP_NUM_THREADS=2, this machine class
BATCH, SIZES = 64, (784, 512, 512, 10)


def mlp_symbol() -> gx.sym.Symbol:
    x = gx.sym.Variable("data")
    for i, n in enumerate(SIZES[1:], 1):
        x = gx.sym.FullyConnected(x, num_hidden=n, name=f"fc{i}")
        if i < len(SIZES) - 1:
            x = gx.sym.Activation(x, act_type="relu", name=f"relu{i}")
    return gx.sym.SoftmaxOutput(x, name="softmax")


class HandNumpyMLP:
    """The same network written by hand with preallocated buffers (the comparison)."""

    def __init__(self, params: dict, data: np.ndarray, label: np.ndarray):
        self.w = [params[f"fc{i}_weight"] for i in range(1, 4)]
        self.b = [params[f"fc{i}_bias"] for i in range(1, 4)]
        self.x, self.label = data, label.astype(np.int64)
        self.h = [np.empty((BATCH, n), "f4") for n in SIZES[1:]]
        self.gw = [np.empty_like(w) for w in self.w]
        self.gb = [np.empty_like(b) for b in self.b]

    def forward(self) -> np.ndarray:
        inp = self.x
        for i in range(3):
            np.matmul(inp, self.w[i].T, out=self.h[i])
            self.h[i] += self.b[i]
            if i < 2:
                np.maximum(self.h[i], 0, out=self.h[i])
            inp = self.h[i]
        out = self.h[2]
        out -= out.max(axis=1, keepdims=True)
        np.exp(out, out=out)
        out /= out.sum(axis=1, keepdims=True)
        return out

    def backward(self) -> None:
        g = self.h[2].copy()
        g[np.arange(BATCH), self.label] -= 1
        for i in (2, 1, 0):
            inp = self.h[i - 1] if i else self.x
            np.matmul(g.T, inp, out=self.gw[i])
            g.sum(axis=0, out=self.gb[i])
            if i:
                g = g @ self.w[i]
                g *= self.h[i - 1] > 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mxnet", help="python of a venv with mxnet==1.9.1, to time MXNet too")
    opts = ap.parse_args()
    threads = int(os.environ.get("OMP_NUM_THREADS", "2"))
    before = mxnet_ms(opts.mxnet, "mlp", BATCH, 200, threads) if opts.mxnet else None
    rng = np.random.default_rng(0)
    sym = mlp_symbol()
    exe = sym.simple_bind(gx.cpu(), data=(BATCH, SIZES[0]), grad_req={
        n: "write" for n in sym.list_arguments() if n not in ("data", "softmax_label")})
    for name, arr in exe.arg_dict.items():
        arr[...] = rng.standard_normal(arr.shape) * 0.05
    exe.arg_dict["softmax_label"][...] = rng.integers(0, 10, BATCH)
    params = {n: a for n, a in exe.arg_dict.items()}
    hand = HandNumpyMLP(params, exe.arg_dict["data"], exe.arg_dict["softmax_label"])
    infer = sym.simple_bind(gx.cpu(), grad_req="null", data=(BATCH, SIZES[0]))
    infer.copy_params_from(params)
    np.testing.assert_allclose(exe.forward(is_train=True)[0], hand.forward(), rtol=1e-4, atol=1e-6)
    exe.backward()
    hand.backward()
    np.testing.assert_allclose(exe.grad_dict["fc1_weight"], hand.gw[0], rtol=1e-3, atol=1e-5)

    def train_step():
        exe.forward(is_train=True)
        exe.backward()

    def hand_step():
        hand.forward()
        hand.backward()
    for _ in range(10):  # warm up caches and BLAS threads
        train_step()
        hand_step()
    t = interleaved_medians({"train": train_step, "hand_train": hand_step,
                             "infer": lambda: infer.forward(is_train=False),
                             "hand_infer": hand.forward}, repeat=61, number=10)
    t_train, t_hand_train, t_infer, t_hand_infer = (t["train"], t["hand_train"], t["infer"],
                                                    t["hand_infer"])
    print(f"MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, threads "
          f"{os.environ.get('OMP_NUM_THREADS', 'default')}:")
    mx_now = None
    if opts.mxnet:
        after = mxnet_ms(opts.mxnet, "mlp", BATCH, 200, threads)
        mx_now = [(a + b) / 2 for a, b in zip(before, after)]
    for k, (label, ours, theirs, mx) in enumerate((
            ("train step", t_train, t_hand_train, MXNET_MS["train"]),
            ("inference ", t_infer, t_hand_infer, MXNET_MS["infer"]))):
        print(f"  {label}: graphexec {ours * 1e3:6.2f} ms   hand numpy {theirs * 1e3:6.2f} ms   "
              f"ratio {ours / theirs:.3f} (goal <= 1.0)   MXNet 1.9.1 figure {mx} ms")
        if mx_now:
            print(f"      MXNet 1.9.1 timed around it: {mx_now[k]:6.2f} ms, graphexec / MXNet "
                  f"{ours * 1e3 / mx_now[k]:.3f}")


if __name__ == "__main__":
    main()
