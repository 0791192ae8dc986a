"""Record what MXNet 1.9.1 decides about its random operators that does not depend on its
random stream: output names, inferred shapes and dtypes, and the values of degenerate
distributions (low == high, lam = 0, one-hot probabilities, ...).

    MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=2 /path/to/mxnet-1.9.1/bin/python make_random.py

Writes random.json next to this file.
"""
import json
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
V = mx.sym.var
CASES = {
    "uniform_f16": (lambda: mx.sym.random.uniform(0, 1, shape=(2, 3), dtype="float16"), {}),
    "normal_default": (lambda: mx.sym.random.normal(shape=(4,)), {}),
    "randint": (lambda: mx.sym.random.randint(2, 3, shape=(5,)), {}),
    "randint_i64": (lambda: mx.sym.random.randint(-4, -3, shape=(2,), dtype="int64"), {}),
    "uniform_const": (lambda: mx.sym.random.uniform(1.5, 1.5, shape=(3,)), {}),
    "poisson_zero": (lambda: mx.sym.random.poisson(lam=0.0, shape=(3,)), {}),
    "negbin_p1": (lambda: mx.sym.random.negative_binomial(k=3, p=1.0, shape=(3,)), {}),
    "gnb_mu0": (lambda: mx.sym.random.generalized_negative_binomial(mu=0.0, alpha=0.5,
                                                                     shape=(3,)), {}),
    "uniform_like": (lambda: mx.sym.random.uniform_like(V("d"), low=2.0, high=2.0),
                     {"d": np.zeros((2, 2), np.float64)}),
    "sample_uniform": (lambda: mx.sym.random.uniform(V("lo"), V("hi"), shape=(2, 3)),
                       {"lo": np.array([1.0, -2.0]), "hi": np.array([1.0, -2.0])}),
    "sample_normal_f64": (lambda: mx.sym.random.normal(V("mu"), V("sigma"), shape=(2,),
                                                       dtype="float64"),
                          {"mu": np.zeros((3, 1), np.float32),
                           "sigma": np.ones((3, 1), np.float32)}),
    "sample_poisson_zero": (lambda: mx.sym.random.poisson(V("lam"), shape=(4,)),
                            {"lam": np.zeros((2, 2), np.float32)}),
    "multinomial_onehot": (lambda: mx.sym.random.multinomial(V("p"), shape=(3,)),
                           {"p": np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], np.float32)}),
    "multinomial_vector": (lambda: mx.sym.random.multinomial(V("p"), get_prob=False),
                           {"p": np.array([0.0, 0.0, 1.0], np.float64)}),
    "shuffle_const": (lambda: mx.sym.random.shuffle(V("d")),
                      {"d": np.ones((4, 2), np.float32)}),
    "zipfian": (lambda: mx.sym._internal._sample_unique_zipfian(range_max=1, shape=(2, 1)),
                {}),
}


def main():
    out = {}
    for name, (make, ins) in CASES.items():
        sym = make()
        shapes = {k: v.shape for k, v in ins.items()}
        dtypes = {k: v.dtype for k, v in ins.items()}
        _, oshapes, _ = sym.infer_shape(**shapes)
        _, otypes, _ = sym.infer_type(**dtypes)
        args = {k: mx.nd.array(v, dtype=v.dtype) for k, v in ins.items()}
        values = [o.asnumpy() for o in sym.bind(mx.cpu(), args).forward()]
        out[name] = {"symbol_json": sym.tojson(), "outputs": sym.list_outputs(),
                     "inputs": {k: {"value": v.tolist(), "dtype": str(v.dtype)}
                                for k, v in ins.items()},
                     "shapes": [list(s) for s in oshapes],
                     "dtypes": [np.dtype(t).name for t in otypes],
                     "values": [v.tolist() for v in values]}
    with open(os.path.join(HERE, "random.json"), "w") as f:
        json.dump({"mxnet": mx.__version__, "cases": out}, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
