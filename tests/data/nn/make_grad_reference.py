"""Regenerate grad_reference.npz / grad_reference.json with a real MXNet 1.9.1 (not run by the
tests):

    MXNET_MKLDNN_ENABLED=0 MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=1 python make_grad_reference.py

Each case binds one operator named "node" (variables in0, in1, ... in the op's input order; BatchNorm's
moving stats are aux states) with gradient buffers pre-filled with 7 (so a buffer MXNet never
writes shows it), then runs its calls: ("f", is_train) forward, ("b", is_train) backward with
the recorded head gradients ``<case>:head<k>`` (none for loss heads). The inputs are stored
as ``<case>:in:<name>``; after call i the gradient buffers as ``<case>:<i>:grad:<name>`` and,
for BatchNorm (which modifies them), the argument and aux arrays as ``<case>:<i>:arr:<name>``.

To stay small, every array is flattened into one buffer per dtype (``f4``, ``f8``, ``i4`` in
grad_reference.npz); grad_reference.json maps each key to [dtype, offset, shape], and keeps
each case's recipe and the debug_str block of its backward node.
"""
import json
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = [("f", True), ("b", True)]


def case(op, shapes, inputs=None, req=None, calls=TRAIN, heads=True, dtype="f4", **attrs):
    """inputs: {index: array or (low, high)}; req: grad_req per input index (default write
    for every argument)."""
    return {"op": op, "shapes": shapes, "inputs": inputs or {}, "req": req or {},
            "calls": calls, "heads": heads, "dtype": dtype,
            "attrs": {k: str(v) for k, v in attrs.items()}}


LAB5 = np.array([0, 2.7, -1, 7, -0.5], "f4")          # truncation, out of range, -0.5 -> 0
LAB_MULTI = np.array([[0, 1, -1, 5, 1], [1, 1, 0, 0, 2.7], [0, 1, 1, 1, 1]], "f4")
TIES = np.array([[[[1, 3, 3, 0], [3, 2, 1, 1], [0, 0, 5, 5], [0, 1, 5, 5]]]], "f4")
ZEROS_IN = np.array([[0, 0.5, -0.5, 2], [-3, 0, 1e-3, -1e-3], [1, -1, 0, 4]], "f4")
BN = [(4, 3, 2, 2), (3,), (3,), (3,), (3,)]
BN_CALLS = [("f", True), ("b", True), ("b", True), ("b", False), ("f", False)]

CASES = {
    # -- SoftmaxOutput ------------------------------------------------------------------------
    "so_basic": case("SoftmaxOutput", [(5, 4), (5,)], {1: LAB5}, heads=False),
    "so_batch_scale": case("SoftmaxOutput", [(5, 4), (5,)], {1: LAB5}, heads=False,
                           normalization="batch", grad_scale=2.0),
    "so_valid_ignore": case("SoftmaxOutput", [(5, 4), (5,)], {1: LAB5}, heads=False,
                            normalization="valid", use_ignore=True, ignore_label=2),
    "so_valid_no_ignore": case("SoftmaxOutput", [(5, 4), (5,)], {1: LAB5}, heads=False,
                               normalization="valid", ignore_label=7),
    "so_smooth": case("SoftmaxOutput", [(5, 4), (5,)], {1: LAB5}, heads=False,
                      smooth_alpha=0.2),
    "so_smooth_ignore": case("SoftmaxOutput", [(5, 4), (5,)], {1: LAB5}, heads=False,
                             smooth_alpha=0.2, use_ignore=True, ignore_label=0),
    "so_3d_label": case("SoftmaxOutput", [(2, 3, 4), (2, 3)],
                        {1: np.array([[2, 0, 1], [1, 11, 0]], "f4")}, heads=False,
                        normalization="batch"),
    "so_multi": case("SoftmaxOutput", [(3, 2, 5), (3, 5)], {1: LAB_MULTI}, heads=False,
                     multi_output=True),
    "so_multi_valid_ignore": case("SoftmaxOutput", [(3, 2, 5), (3, 5)], {1: LAB_MULTI},
                                  heads=False, multi_output=True, normalization="valid",
                                  use_ignore=True, ignore_label=1, smooth_alpha=0.3),
    "so_multi_spatial": case("SoftmaxOutput", [(2, 3, 2, 2), (2, 2, 2)], {1: (0, 3)},
                             heads=False, multi_output=True, normalization="batch",
                             grad_scale=0.5),
    "so_multi_flat_label": case("SoftmaxOutput", [(2, 3, 2, 2), (2, 4)], {1: (0, 3)},
                                heads=False, multi_output=True),
    "so_preserve": case("SoftmaxOutput", [(2, 3, 4), (2, 3)],
                        {1: np.array([[2, -1, 1], [1, 2, 0]], "f4")}, heads=False,
                        preserve_shape=True, smooth_alpha=0.3, normalization="valid"),
    "so_soft_label": case("SoftmaxOutput", [(3, 4), (3, 4)], {1: (0, 1)}, heads=False,
                          grad_scale=3.0, normalization="batch"),
    "so_out_grad": case("SoftmaxOutput", [(4, 3), (4,)], {1: (0, 3)}, heads=False,
                        out_grad=True, grad_scale=2.0),
    "so_float64": case("SoftmaxOutput", [(4, 3), (4,)], {1: (0, 3)}, heads=False,
                       dtype="f8"),
    # -- regression outputs and MakeLoss --------------------------------------------------------
    "linear": case("LinearRegressionOutput", [(4, 1), (4,)], heads=False, grad_scale=3.0),
    "linear_reshaped": case("LinearRegressionOutput", [(4, 2, 3), (4, 6)], heads=False),
    "logistic": case("LogisticRegressionOutput", [(4, 3), (4, 3)], {1: (0, 1)}, heads=False,
                     grad_scale=0.5),
    "mae": case("MAERegressionOutput", [(3, 4), (3, 4)],
                {0: ZEROS_IN, 1: np.where(np.arange(12).reshape(3, 4) % 3, 0.3, 0).astype("f4")},
                heads=False, grad_scale=3.0),
    "makeloss_scale": case("MakeLoss", [(2, 3, 4)], heads=False, grad_scale=2.0),
    "makeloss_batch": case("MakeLoss", [(2, 3, 4)], heads=False, normalization="batch"),
    "makeloss_valid": case("MakeLoss", [(3, 4)], heads=False, normalization="valid",
                           valid_thresh=0.5, grad_scale=3.0),
    "makeloss_valid_none": case("MakeLoss", [(3, 4)], heads=False, normalization="valid",
                                valid_thresh=5),
    "make_loss": case("make_loss", [(3, 4)], heads=False),
    # -- BatchNorm sequences ---------------------------------------------------------------------
    "bn_default": case("BatchNorm", BN, calls=BN_CALLS),
    "bn_gamma_no_grad": case("BatchNorm", BN, req={1: "null"}, calls=BN_CALLS),
    "bn_gamma": case("BatchNorm", BN, calls=BN_CALLS, fix_gamma=False, momentum=0.8,
                     eps=1e-5),
    "bn_global": case("BatchNorm", BN, calls=BN_CALLS, fix_gamma=False,
                      use_global_stats=True),
    "bn_axis_last": case("BatchNorm", [(4, 2, 3), (3,), (3,), (3,), (3,)], calls=BN_CALLS,
                         axis=-1, fix_gamma=False),
    "bn_mean_var_heads": case("BatchNorm", BN, fix_gamma=False, output_mean_var=True),
    "ln_mean_std_heads": case("LayerNorm", [(4, 3), (4,), (4,)], axis=0,
                              output_mean_var=True),
    # -- pooling quirks ---------------------------------------------------------------------------
    "pool_max_ties": case("Pooling", [TIES.shape], {0: TIES}, kernel=(2, 2), stride=(2, 2)),
    "pool_max_ties_overlap": case("Pooling", [TIES.shape], {0: TIES}, kernel=(3, 3)),
    "pool_max_ties_pad": case("Pooling", [TIES.shape], {0: TIES}, kernel=(3, 3),
                              stride=(2, 2), pad=(1, 1)),
    "pool_global_max_ties": case("Pooling", [TIES.shape], {0: TIES}, kernel=(1, 1),
                                 global_pool=True),
    "pool_max_full": case("Pooling", [(1, 2, 4, 5)], kernel=(2, 2), stride=(3, 3),
                          pad=(1, 1), pooling_convention="full"),
    "pool_avg_full_nopad": case("Pooling", [(1, 2, 6, 6)], kernel=(3, 3), stride=(2, 2),
                                pool_type="avg", pooling_convention="full",
                                count_include_pad=False),
    "pool_lp3_negative": case("Pooling", [(1, 2, 4, 4)], kernel=(2, 2), pool_type="lp",
                              p_value=3),
    "pool_lp2_zero": case("Pooling", [(1, 1, 2, 4)],
                          {0: np.array([[[[0, 0, 1, 2], [0, 0, -1, 3]]]], "f4")},
                          kernel=(2, 2), stride=(2, 2), pool_type="lp", p_value=2),
    # -- activations at and around 0 -------------------------------------------------------------
    **{f"act_{t}": case("Activation", [(3, 4)], {0: ZEROS_IN}, act_type=t)
       for t in ("relu", "sigmoid", "tanh", "softrelu", "softsign")},
    "lrelu_leaky": case("LeakyReLU", [(3, 4)], {0: ZEROS_IN}, slope=0.1),
    "lrelu_elu": case("LeakyReLU", [(3, 4)], {0: ZEROS_IN}, act_type="elu", slope=0.7),
    "lrelu_selu": case("LeakyReLU", [(3, 4)], {0: ZEROS_IN}, act_type="selu"),
    "lrelu_gelu": case("LeakyReLU", [(3, 4)], {0: ZEROS_IN}, act_type="gelu"),
    "lrelu_prelu": case("LeakyReLU", [(2, 3, 4), (3,)], act_type="prelu"),
    "lrelu_prelu_scalar": case("LeakyReLU", [(3, 4), (1,)], {0: ZEROS_IN}, act_type="prelu"),
    # -- layers (finite differences check these too; one MXNet check each) -----------------------
    "fc_no_flatten": case("FullyConnected", [(2, 3, 4), (5, 4), (5,)], num_hidden=5,
                          flatten=False),
    "conv_groups": case("Convolution", [(2, 4, 5, 5), (6, 2, 3, 3), (6,)], kernel=(3, 3),
                        stride=(2, 1), pad=(1, 0), dilate=(1, 2), num_group=2, num_filter=6),
    "deconv_target": case("Deconvolution", [(1, 2, 4, 4), (2, 2, 3, 3)], kernel=(3, 3),
                          stride=(2, 2), target_shape=(8, 9), num_filter=2),
    "deconv_adj_bias": case("Deconvolution", [(1, 4, 3, 3), (4, 3, 3, 3), (6,)],
                            kernel=(3, 3), stride=(2, 2), pad=(1, 1), adj=(1, 1),
                            num_group=2, num_filter=6, no_bias=False),
    "softmax_length": case("softmax", [(2, 4, 3), (2, 3)],
                           {1: np.array([[4, 0, 2], [1, 3, 4]], "i4")}, axis=1,
                           use_length=True, temperature=2.0),
    "log_softmax": case("log_softmax", [(2, 4, 3)], axis=1, temperature=0.5),
    "softmax_activation_channel": case("SoftmaxActivation", [(2, 3, 2, 2)], mode="channel"),
    "dropout_p0": case("Dropout", [(3, 4)], p=0.0, calls=[("f", True), ("b", True),
                                                            ("b", False)]),
}


def make_input(rng, spec, index, shape, dtype):
    given = spec["inputs"].get(index)
    if isinstance(given, np.ndarray):
        return given
    if isinstance(given, tuple):
        low, high = given
        if spec["op"] == "SoftmaxOutput" and index == 1 and high > 1:
            return rng.integers(low, high, shape).astype(dtype)
        return rng.uniform(low, high, shape).astype(dtype)
    if spec["op"] == "BatchNorm" and index == 4:
        return rng.uniform(0.5, 2.0, shape).astype(dtype)
    return rng.uniform(-2, 2, shape).astype(dtype)


def run(case_id, spec, rng, store):
    names = [f"in{i}" for i in range(len(spec["shapes"]))]
    sym = getattr(mx.sym, spec["op"])(*[mx.sym.Variable(n) for n in names], name="node",
                                      **spec["attrs"])
    arrays = {n: make_input(rng, spec, i, s, spec["dtype"])
              for i, (n, s) in enumerate(zip(names, spec["shapes"]))}
    aux_names = sym.list_auxiliary_states()
    req = {n: spec["req"].get(i, "write") for i, n in enumerate(names) if n not in aux_names}
    if arrays.get("in1") is not None and arrays["in1"].dtype.kind == "i":
        req["in1"] = "null"
    nd = {n: mx.nd.array(a, dtype=a.dtype) for n, a in arrays.items()}
    grads = {n: mx.nd.full(arrays[n].shape, 7, dtype=arrays[n].dtype)
             for n, r in req.items() if r != "null"}
    exe = sym.bind(mx.cpu(), {n: nd[n] for n in req}, args_grad=grads, grad_req=req,
                   aux_states={n: nd[n] for n in aux_names} or None)
    heads = None
    for n, a in arrays.items():
        store[f"{case_id}:in:{n}"] = a
    for i, (kind, is_train) in enumerate(spec["calls"]):
        if kind == "f":
            exe.forward(is_train=is_train)
        else:
            if spec["heads"] and heads is None:
                heads = [rng.standard_normal(o.shape).astype(o.dtype) for o in exe.outputs]
                for k, h in enumerate(heads):
                    store[f"{case_id}:head{k}"] = h
            exe.backward([mx.nd.array(h, dtype=h.dtype) for h in heads] if heads else None,
                         is_train=is_train)
        mx.nd.waitall()
        for n, g in grads.items():
            store[f"{case_id}:{i}:grad:{n}"] = g.asnumpy()
        if spec["op"] == "BatchNorm":
            for n in list(req) + aux_names:
                store[f"{case_id}:{i}:arr:{n}"] = nd[n].asnumpy()
    return {"op": spec["op"], "attrs": spec["attrs"], "inputs": names, "grad_req": req,
            "aux": aux_names, "calls": spec["calls"], "heads": spec["heads"],
            "backward_nodes": backward_blocks(exe.debug_str())}


def backward_blocks(text):
    """The debug_str blocks of the backward nodes (named <node>_backward)."""
    blocks = [b.strip("\n").split("\n") for b in text.split("--------------------")]
    return [[line for line in b if not line.startswith("Total ")] for b in blocks
            if b[0].endswith("Name=node_backward")]


def main():
    rng = np.random.default_rng(20240503)
    store, meta = {}, {}
    for case_id, spec in CASES.items():
        meta[case_id] = run(case_id, spec, rng, store)
    buffers, index = {}, {}
    for key, arr in store.items():
        code = arr.dtype.str[1:]
        parts = buffers.setdefault(code, [])
        index[key] = [code, sum(p.size for p in parts), list(arr.shape)]
        parts.append(arr.reshape(-1))
    np.savez_compressed(os.path.join(HERE, "grad_reference.npz"),
                        **{code: np.concatenate(parts) for code, parts in buffers.items()})
    with open(os.path.join(HERE, "grad_reference.json"), "w") as f:
        json.dump({"mxnet": mx.__version__, "cases": meta, "index": index}, f,
                  separators=(",", ":"), sort_keys=True)


if __name__ == "__main__":
    main()
