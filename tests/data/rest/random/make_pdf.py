"""Record MXNet 1.9.1's densities (_random_pdf_*) and their gradients, plus the gradient of
_sample_multinomial's log-probability output for fixed draws.

    MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=2 /path/to/mxnet-1.9.1/bin/python make_pdf.py

Writes pdf.json (symbol JSON and input names per case) and pdf.npz (inputs, head gradients,
outputs, gradients) next to this file. Sampling streams are not recorded: graphexec draws
from its own generator (README), so only deterministic values are compared.
"""
import json
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = np.random.RandomState(11)
PARAMS = {
    "uniform": (("low", -1.0, 0.0), ("high", 1.0, 2.0)),
    "normal": (("mu", -1.0, 1.0), ("sigma", 0.5, 2.0)),
    "gamma": (("alpha", 0.5, 3.0), ("beta", 0.5, 2.0)),
    "exponential": (("lam", 0.5, 3.0),),
    "poisson": (("lam", 0.5, 4.0),),
    "negative_binomial": (("k", 1.0, 4.0), ("p", 0.2, 0.8)),
    "generalized_negative_binomial": (("mu", 0.5, 3.0), ("alpha", 0.2, 1.5)),
    "dirichlet": (("alpha", 0.5, 3.0),),
}
DISCRETE = {"poisson", "negative_binomial", "generalized_negative_binomial"}


def samples(distr, shape):
    if distr in DISCRETE:
        return RNG.randint(0, 6, shape).astype(np.float64)
    if distr == "dirichlet":
        return RNG.dirichlet([2.0, 3.0, 4.0], shape[:-1])
    if distr == "normal":
        return RNG.normal(0, 1, shape)
    return RNG.uniform(0.1, 0.9 if distr == "uniform" else 3.0, shape)


def record(name, sym, ins, meta, arrays):
    args = {n: mx.nd.array(a, dtype="float64") for n, a in ins.items()}
    grads = {n: mx.nd.zeros(a.shape, dtype="float64") for n, a in ins.items()}
    exe = sym.bind(mx.cpu(), args, args_grad=grads)
    outs = [o.asnumpy() for o in exe.forward(is_train=True)]
    heads = [RNG.uniform(-1, 1, o.shape) for o in outs]
    exe.backward([mx.nd.array(h, dtype="float64") for h in heads])
    meta[name] = {"symbol_json": sym.tojson(), "inputs": list(ins), "n_out": len(outs)}
    for n, a in ins.items():
        arrays[f"{name}/in/{n}"] = a
        arrays[f"{name}/grad/{n}"] = grads[n].asnumpy()
    for k, (o, h) in enumerate(zip(outs, heads)):
        arrays[f"{name}/out/{k}"] = o
        arrays[f"{name}/head/{k}"] = h


def main():
    meta, arrays = {}, {}
    for distr, params in PARAMS.items():
        vector = distr == "dirichlet"
        pshape, sshape = ((2, 3), (2, 4, 3)) if vector else ((2,), (2, 3, 4))
        for is_log in (False, True):
            ins = {"sample": samples(distr, sshape)}
            for pname, lo, hi in params:
                ins[pname] = RNG.uniform(lo, hi, pshape)
            fn = getattr(mx.sym, f"random_pdf_{distr}")
            name = f"pdf_{distr}" + ("_log" if is_log else "")
            sym = fn(*[mx.sym.var(n) for n in ins], is_log=is_log, name=name)
            record(name, sym, ins, meta, arrays)
    with open(os.path.join(HERE, "pdf.json"), "w") as f:
        json.dump({"mxnet": mx.__version__, "cases": meta}, f, indent=1, sort_keys=True)
    np.savez_compressed(os.path.join(HERE, "pdf.npz"), **arrays)


if __name__ == "__main__":
    main()
