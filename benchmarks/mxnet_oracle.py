"""The MXNet 1.9.1 side of the benchmarks that time MXNet in the same session (``--mxnet``).
Runs in a separate venv with mxnet==1.9.1 (an oracle, never a dependency) and prints the
medians in ms on one line:

    OMP_NUM_THREADS=2 /path/to/mxvenv/bin/python benchmarks/mxnet_oracle.py resnet18 BATCH REPEAT
        -> inference ms (ResNet-18 v1, the zoo symbol in tests/data)
    OMP_NUM_THREADS=2 /path/to/mxvenv/bin/python benchmarks/mxnet_oracle.py mlp BATCH REPEAT
        -> train-step ms, inference ms (MLP 784-512-512-10, SoftmaxOutput)
    /path/to/mxvenv/bin/python benchmarks/mxnet_oracle.py tinychain N REPEAT
        -> forward ms of bench_core.py's N-op chain on (1, 16) (bulk execution on)
    /path/to/mxvenv/bin/python benchmarks/mxnet_oracle.py bind N REPEAT
        -> simple_bind (grad_req null) ms of that chain
    /path/to/mxvenv/bin/python benchmarks/mxnet_oracle.py serve SPEC.json
        -> a worker for timing in alternation (common.MXNetWorker): binds the symbol SPEC
           names, prints "ready", then answers each line "forward" / "train" on stdin with
           the ms of one inference forward / one forward+backward. Optional SPEC keys:
           "arrays" (an .npz of input values to use instead of random ones), "params" (an
           MXNet .params file loaded instead of random values); no "trained" names:
           inference only
"""
import gzip
import os
import statistics
import sys
import time
from pathlib import Path

import mxnet as mx
import numpy as np

ZOO = Path(__file__).resolve().parent.parent / "tests" / "data" / "json" / "zoo_resnet18_v1-symbol.json.gz"


def median_ms(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def fill(exe, rng) -> None:
    for arr in list(exe.arg_dict.values()) + list(exe.aux_dict.values()):
        arr[:] = (np.abs(rng.standard_normal(arr.shape)) * 0.05 + 0.5).astype("f4")


def resnet18(batch: int, repeat: int) -> list:
    sym = mx.sym.load_json(gzip.decompress(ZOO.read_bytes()).decode())
    exe = sym.simple_bind(mx.cpu(), grad_req="null", data=(batch, 3, 224, 224))
    fill(exe, np.random.default_rng(0))

    def infer():
        exe.forward(is_train=False)
        exe.outputs[0].wait_to_read()
    return [median_ms(infer, repeat)]


def mlp(batch: int, repeat: int) -> list:
    x = mx.sym.Variable("data")
    sizes = (784, 512, 512, 10)
    for i, n in enumerate(sizes[1:], 1):
        x = mx.sym.FullyConnected(x, num_hidden=n, name=f"fc{i}")
        if i < len(sizes) - 1:
            x = mx.sym.Activation(x, act_type="relu", name=f"relu{i}")
    sym = mx.sym.SoftmaxOutput(x, name="softmax")
    rng = np.random.default_rng(0)
    grads = {n: "write" for n in sym.list_arguments() if n not in ("data", "softmax_label")}
    train = sym.simple_bind(mx.cpu(), grad_req=grads, data=(batch, sizes[0]))
    infer = sym.simple_bind(mx.cpu(), grad_req="null", data=(batch, sizes[0]))
    for exe in (train, infer):
        fill(exe, rng)
        exe.arg_dict["softmax_label"][:] = rng.integers(0, 10, batch)

    def step():
        train.forward(is_train=True)
        train.backward()
        mx.nd.waitall()

    def forward():
        infer.forward(is_train=False)
        infer.outputs[0].wait_to_read()
    return [median_ms(step, repeat), median_ms(forward, repeat)]


def chain(n: int):
    """The op cycle of bench_core.CYCLE: sin, *0.9, +0.1, tanh, abs, relu."""
    x = mx.sym.Variable("x")
    for i in range(n):
        x = [mx.sym.sin, lambda s: s * 0.9, lambda s: s + 0.1, mx.sym.tanh, mx.sym.abs,
             mx.sym.relu][i % 6](x)
    return x


def bind(n: int, repeat: int) -> list:
    os.environ["MXNET_SUBGRAPH_BACKEND"] = "NONE"   # as graphexec binds it (and the recorded figures)
    sym = chain(n)
    return [median_ms(lambda: sym.simple_bind(mx.cpu(), grad_req="null", x=(1, 16)), repeat)]


def tinychain(n: int, repeat: int) -> list:
    os.environ["MXNET_SUBGRAPH_BACKEND"] = "NONE"
    exe = chain(n).bind(mx.cpu(), {"x": mx.nd.array(np.random.default_rng(0).uniform(-1, 1, (1, 16)))})

    def forward100():
        for _ in range(100):
            exe.forward(is_train=False)
            exe.outputs[0].wait_to_read()
    return [median_ms(forward100, repeat) / 100]


def _fill_inputs(exe, spec: dict, rng) -> None:
    """Parameters uniform in +-0.05 (variances in (0, 0.05): BatchNorm's moving_var must not
    be negative), integer inputs (token ids, labels, lengths) in their [low, high) range."""
    for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        bounds = spec.get("int_inputs", {}).get(name)
        if bounds is not None:
            arr[:] = rng.integers(*bounds, arr.shape).astype("f4")
        else:
            v = rng.uniform(-0.05, 0.05, arr.shape).astype("f4")
            arr[:] = np.abs(v) if name.endswith("_var") else v


def _load_params(exe, spec: dict) -> None:
    """The spec's trained parameters ("params": arg:/aux: names, as MXNet saves them)."""
    if not spec.get("params"):
        return
    for key, value in mx.nd.load(spec["params"]).items():
        kind, name = key.split(":", 1)
        target = (exe.arg_dict if kind == "arg" else exe.aux_dict).get(name)
        if target is not None:
            target[:] = value


def serve(spec_path: str) -> None:
    """Bind the spec's symbol for inference and training, then time one call per request."""
    import json
    spec = json.loads(Path(spec_path).read_text())
    sym = mx.sym.load(spec["symbol"])
    shapes = {k: tuple(v) for k, v in spec["shapes"].items()}
    trained = spec.get("trained", [])
    grads = {n: "write" if n in trained else "null" for n in sym.list_arguments()}
    rng = np.random.default_rng(0)
    execs = {"forward": sym.simple_bind(mx.cpu(), grad_req="null", **shapes)}
    if trained:
        execs["train"] = sym.simple_bind(mx.cpu(), grad_req=grads, **shapes)
    fixed = np.load(spec["arrays"]) if spec.get("arrays") else {}
    for exe in execs.values():
        _fill_inputs(exe, spec, rng)
        _load_params(exe, spec)
        for name in fixed:  # inputs whose values matter (e.g. the boxes of an NMS)
            exe.arg_dict[name][:] = fixed[name]

    def forward():
        execs["forward"].forward(is_train=False)
        mx.nd.waitall()

    def train():
        execs["train"].forward(is_train=True)
        execs["train"].backward()
        mx.nd.waitall()
    calls = {"forward": forward, "train": train} if trained else {"forward": forward}
    for fn in calls.values():
        fn()
    print("ready", flush=True)
    for line in sys.stdin:
        fn = calls[line.strip()]
        t0 = time.perf_counter()
        fn()
        print(f"{(time.perf_counter() - t0) * 1e3:.4f}", flush=True)


def main() -> None:
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
        return
    model, size, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    fn = {"resnet18": resnet18, "mlp": mlp, "tinychain": tinychain, "bind": bind}[model]
    print(" ".join(f"{ms:.4f}" for ms in fn(size, repeat)))


if __name__ == "__main__":
    main()
