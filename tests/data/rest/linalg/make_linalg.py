"""Record MXNet 1.9.1's forward values and gradients of the linalg operators.

    MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=2 /path/to/mxnet-1.9.1/bin/python make_linalg.py

Writes linalg.json (per case: symbol JSON, input names, which inputs get gradients, whether
MXNet raised) and linalg.npz (inputs, head gradients, outputs, gradients) next to this file.
Inputs are float64 so that the comparison tests the formulas, not rounding.
"""
import json
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = np.random.RandomState(7)


def t(a):
    return np.swapaxes(a, -1, -2)


def rand(*shape):
    return RNG.uniform(-1, 1, shape)


def spd(*shape):
    a = rand(*shape)
    return a @ t(a) + shape[-1] * np.eye(shape[-1])


def factor(*shape):
    return rand(*shape) + 3 * np.eye(shape[-1])


def symmetric(*shape):
    a = rand(*shape)
    return (a + t(a)) / 2 + np.diag(np.arange(shape[-1]) * 2.0)


CASES = {}


def case(name, op, inputs, attrs=None, grads=True):
    CASES[name] = (op, inputs, attrs or {}, grads)


case("gemm", "linalg_gemm", [rand(2, 3, 4), rand(2, 4, 5), rand(2, 3, 5)],
     {"alpha": 0.5, "beta": 2.0})
case("gemm_t_axis", "linalg_gemm", [rand(4, 2, 3), rand(5, 2, 4), rand(3, 2, 5)],
     {"transpose_a": True, "transpose_b": True, "axis": 0})
case("gemm2", "linalg_gemm2", [rand(3, 4), rand(4, 2)], {"alpha": 2.0})
case("gemm2_tb", "linalg_gemm2", [rand(2, 2, 3, 4), rand(2, 2, 5, 4)], {"transpose_b": True})
case("potrf", "linalg_potrf", [spd(2, 3, 3)])
case("potrf_upper", "linalg_potrf", [spd(3, 3)], {"lower": False})
case("potrf_not_pd", "linalg_potrf", [-np.eye(3)], grads=False)
case("potri", "linalg_potri", [factor(2, 3, 3)])
case("potri_upper", "linalg_potri", [factor(3, 3)], {"lower": False})
for tag, attrs in (("", {}), ("_right_t", {"rightside": True, "transpose": True}),
                   ("_upper_alpha", {"lower": False, "alpha": -1.5})):
    bshape = (2, 4, 3) if attrs.get("rightside") else (2, 3, 4)
    case("trmm" + tag, "linalg_trmm", [factor(2, 3, 3), rand(*bshape)], attrs)
    case("trsm" + tag, "linalg_trsm", [factor(2, 3, 3), rand(*bshape)], attrs)
case("syrk", "linalg_syrk", [rand(2, 3, 4)], {"alpha": 2.0})
case("syrk_t", "linalg_syrk", [rand(3, 4)], {"transpose": True})
case("gelqf", "linalg_gelqf", [rand(2, 3, 4) + np.eye(3, 4)])
case("syevd", "linalg_syevd", [symmetric(2, 3, 3)])
case("sumlogdiag", "linalg_sumlogdiag", [factor(2, 3, 3)])
case("sumlogdiag_single", "linalg_sumlogdiag", [factor(3, 3)])
case("inverse", "linalg_inverse", [factor(2, 3, 3)])
case("det", "linalg_det", [rand(2, 3, 3) + 2 * np.eye(3)])
case("det_single", "linalg_det", [rand(3, 3) + 2 * np.eye(3)])
case("det_singular", "linalg_det", [np.array([[1.0, 2.0], [2.0, 4.0]])])
case("slogdet", "linalg_slogdet", [rand(2, 3, 3) - 2 * np.eye(3)])
case("extractdiag", "linalg_extractdiag", [rand(2, 4, 4)], {"offset": -1})
case("makediag", "linalg_makediag", [rand(2, 3)], {"offset": 2})
case("extracttrian_upper", "linalg_extracttrian", [rand(2, 4, 4)], {"lower": False})
case("extracttrian_k1", "linalg_extracttrian", [rand(4, 4)], {"offset": 1})
case("maketrian_upper", "linalg_maketrian", [rand(2, 6)], {"lower": False})
case("maketrian_km1", "linalg_maketrian", [rand(6)], {"offset": -1})


def run(name, op, inputs, attrs, grads):
    names = ["A", "B", "C"][:len(inputs)]
    fn = getattr(mx.sym.linalg, op[len("linalg_"):])
    sym = fn(*[mx.sym.var(n) for n in names], name=name, **attrs)
    args = {n: mx.nd.array(a, dtype="float64") for n, a in zip(names, inputs)}
    meta = {"symbol_json": sym.tojson(), "inputs": names, "grads": grads}
    arrays = {f"{name}/in/{n}": a for n, a in zip(names, inputs)}
    try:
        gbuf = {n: mx.nd.zeros(a.shape, dtype="float64") for n, a in args.items()}
        exe = sym.bind(mx.cpu(), args, args_grad=gbuf if grads else None,
                       grad_req="write" if grads else "null")
        outs = [o.asnumpy() for o in exe.forward(is_train=grads)]
        if grads:
            heads = [RNG.uniform(-1, 1, o.shape) for o in outs]
            exe.backward([mx.nd.array(h, dtype="float64") for h in heads])
            for k, h in enumerate(heads):
                arrays[f"{name}/head/{k}"] = h
            for n in names:
                arrays[f"{name}/grad/{n}"] = gbuf[n].asnumpy()
        for k, o in enumerate(outs):
            arrays[f"{name}/out/{k}"] = o
        meta["n_out"] = len(outs)
    except mx.base.MXNetError as err:
        meta["error"] = [ln for ln in str(err).splitlines() if ln.strip()][-1][:300]
    return meta, arrays


def main():
    meta, arrays = {}, {}
    for name, spec in CASES.items():
        meta[name], more = run(name, *spec)
        arrays.update(more)
    with open(os.path.join(HERE, "linalg.json"), "w") as f:
        json.dump({"mxnet": mx.__version__, "cases": meta}, f, indent=1, sort_keys=True)
    np.savez_compressed(os.path.join(HERE, "linalg.npz"), **arrays)


if __name__ == "__main__":
    main()
