"""onnxrt figures (issue 6): ResNet-18 v1 (full width, 224x224, random weights) run with
MXNET_SUBGRAPH_BACKEND=onnxrt against the same network exported whole to ONNX Runtime
(parameters as initializers) in the same process, both with the same thread count; and the
cost of one region boundary (an IOBinding round trip).

Run: python benchmarks/bench_onnxrt.py [--threads 2] [--batches 1,16]
     [--mxnet /path/to/mxnet-venv/bin/python]
MXNet 1.9.1 (oneDNN, OMP_NUM_THREADS=2) on this machine class: 44.5 ms at batch 1,
683 ms at batch 16 (issue 6). With --mxnet, MXNet is timed right before and right after
graphexec (benchmarks/mxnet_oracle.py in that interpreter: another process, so the ratio is
only as good as the machine is steady).
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from bench_memory import resnet18  # noqa: E402
from common import interleaved_medians, mxnet_ms  # noqa: E402

import graphexec as gx  # noqa: E402

MXNET_MS = {1: 44.5, 16: 683.0}


def random_params(sym, shapes: dict) -> tuple[dict, dict]:
    rng = np.random.default_rng(0)
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    args = {n: (rng.standard_normal(s) * 0.05).astype("f4")
            for n, s in zip(sym.list_arguments(), arg_shapes) if n not in shapes}
    aux = {n: (np.abs(rng.standard_normal(s)) + 0.5).astype("f4")
           for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    return args, aux


def whole_model_session(sym, args, aux, shapes, threads: int):
    """The reference: the whole network exported (parameters as initializers) and run by one
    ORT session with the backend's thread settings (intra-op threads, no spinning)."""
    import onnxruntime as ort
    model = gx.onnx.export_model(sym, args, aux, shapes)
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.log_severity_level = 3
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def resnet(batch: int, threads: int, repeat: int) -> dict:
    sym = resnet18(train=False)
    shapes = {"data": (batch, 3, 224, 224)}
    args, aux = random_params(sym, shapes)
    data = np.random.default_rng(1).standard_normal(shapes["data"]).astype("f4")
    sess = whole_model_session(sym, args, aux, shapes, threads)
    execs = {}
    for label, freeze in (("graphexec", True), ("unfrozen", False)):
        exe = execs[label] = sym.simple_bind(
            gx.cpu(), grad_req="null", backend="onnxrt",
            backend_options={"onnxrt": {"threads": threads, "freeze_params": freeze}}, **shapes)
        exe.copy_params_from(args, aux)
        exe.arg_dict["data"][...] = data
    want = sess.run(None, {"data": data})[0]
    diff = max(float(np.abs(e.forward()[0] - want).max()) for e in execs.values())
    name = sym.list_outputs()[0]
    t = interleaved_medians({"graphexec": execs["graphexec"].forward,
                             "unfrozen": execs["unfrozen"].forward,
                             "ort": lambda: sess.run([name], {"data": data})}, repeat=repeat,
                            number=3 if batch == 1 else 1)
    return {"batch": batch, "regions": len(execs["graphexec"].partition_plan.regions),
            "diff": diff, **{f"{k}_ms": v * 1e3 for k, v in t.items()}}


def spinning(threads: int, repeat: int) -> dict:
    """Why the backend turns ORT's spin-waiting off: two sessions of the ResNet-18 model run
    in alternation (two regions of one executor do that), spinning on vs off."""
    import onnxruntime as ort
    sym = resnet18(train=False)
    shapes = {"data": (1, 3, 224, 224)}
    args, aux = random_params(sym, shapes)
    model = gx.onnx.export_model(sym, args, aux, shapes).SerializeToString()
    data = {"data": np.random.default_rng(1).standard_normal(shapes["data"]).astype("f4")}
    out = {}
    for spin in ("1", "0"):
        sessions = []
        for _ in range(2):
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            so.log_severity_level = 3
            so.add_session_config_entry("session.intra_op.allow_spinning", spin)
            sessions.append(ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]))
        t = interleaved_medians({k: (lambda s=s: s.run(None, data)) for k, s in
                                 enumerate(sessions)}, repeat=repeat)
        out[spin] = sum(t.values()) / 2 * 1e3
    return {"spin_ms": out["1"], "nospin_ms": out["0"]}


def boundary(threads: int, repeat: int) -> dict:
    """The cost of one region boundary: a graph of one tiny op (relu of 64 floats) run as
    one onnxrt region (IOBinding round trip into ONNX Runtime and back) against the same op
    run natively, per forward."""
    y = gx.sym.relu(gx.sym.Variable("x"))
    shapes = {"x": (1, 64)}
    region = y.simple_bind(gx.cpu(), grad_req="null", backend="onnxrt",
                           backend_options={"onnxrt": {"threads": threads}}, **shapes)
    plain = y.simple_bind(gx.cpu(), grad_req="null", backend="NONE", **shapes)
    assert len(region.partition_plan.regions) == 1
    t = interleaved_medians({"region": lambda: region.forward(), "native": lambda: plain.forward()},
                            repeat=repeat, number=500)
    return {"region_us": t["region"] * 1e6, "native_us": t["native"] * 1e6}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batches", default="1,16")
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--mxnet", help="python of a venv with mxnet==1.9.1, to time MXNet too")
    opts = ap.parse_args()
    for batch in (int(b) for b in opts.batches.split(",")):
        repeat = opts.repeat if batch == 1 else max(opts.repeat // 3, 3)
        before = (mxnet_ms(opts.mxnet, "resnet18", batch, repeat, opts.threads)[0]
                  if opts.mxnet else None)
        r = resnet(batch, opts.threads, repeat)
        print(f"ResNet-18 batch {batch:2d}: onnxrt backend {r['graphexec_ms']:7.1f} ms, "
              f"whole-model ORT {r['ort_ms']:7.1f} ms, ratio {r['graphexec_ms'] / r['ort_ms']:.3f}"
              f" (goal <= 1.10); MXNet 1.9.1 figure {MXNET_MS.get(batch, float('nan'))} ms; "
              f"{r['regions']} region(s), max |diff| {r['diff']:.2e}")
        if opts.mxnet:
            mx_ms = (before + mxnet_ms(opts.mxnet, "resnet18", batch, repeat, opts.threads)[0]) / 2
            print(f"    MXNet 1.9.1 timed around it: {mx_ms:7.1f} ms, onnxrt backend / MXNet "
                  f"{r['graphexec_ms'] / mx_ms:.3f} (goal < 1)")
        print(f"    with freeze_params=False (weights fed as inputs): {r['unfrozen_ms']:7.1f} ms, "
              f"ratio {r['unfrozen_ms'] / r['ort_ms']:.3f}")
    b = boundary(opts.threads, opts.repeat)
    print(f"region boundary: one-op graph as an onnxrt region {b['region_us']:.1f} us per "
          f"forward, natively {b['native_us']:.1f} us: one boundary (IOBinding round trip) "
          f"costs {b['region_us'] - b['native_us']:.1f} us")
    sp = spinning(opts.threads, opts.repeat)
    print(f"two ORT sessions in alternation (batch 1): spinning threads {sp['spin_ms']:.1f} ms "
          f"per run, no spinning {sp['nospin_ms']:.1f} ms (ratio {sp['spin_ms'] / sp['nospin_ms']:.2f})")


if __name__ == "__main__":
    main()
