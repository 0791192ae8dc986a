"""Regenerate the symbol-JSON fidelity corpus with a real MXNet 1.9.1 (not run by the tests).

    /path/to/mxnet-venv/bin/python tests/data/json/make_json_cases.py [REFCASES_DIR]

Writes, next to this script:
* ``case_*.json`` / ``shape_errors_*.json`` / ``checkpoint_lenet.json``: the reference cases'
  symbol files, copied unchanged;
* ``zoo_*-symbol.json.gz``: Gluon ``export()`` of model-zoo networks (pretrained=False,
  hybridized, one forward), gzipped to keep the repository small;
* ``api_*.json``: symbols built with MXNet's Python API across the op families;
* ``legacy_*.json`` + ``legacy_*.upgraded.json``: hand-written pre-1.0 documents ('param' /
  'attr' keys, 2-element entries, old version numbers) and MXNet's re-serialisation of them;
* ``lists.json.gz``: for every file, what MXNet reports (list_arguments, list_auxiliary_states,
  list_outputs) and the checks made here (MXNet's own load/tojson round trip).
"""
import glob
import gzip
import json
import os
import shutil
import sys

import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
ZOO = ["resnet18_v1", "resnet18_v2", "mobilenet0.25", "mobilenetv2_0.25", "squeezenet1.0",
       "densenet121", "vgg11_bn", "alexnet", "inceptionv3"]


def copy_refcases(root):
    files = {}
    for path in sorted(glob.glob(os.path.join(root, "cases", "*", "symbol*.json"))):
        case = os.path.basename(os.path.dirname(path))
        stem = os.path.basename(path)[:-5]
        name = f"case_{case}.json" if stem == "symbol" else f"case_{case}_{stem}.json"
        if case == "shape_errors":
            name = f"shape_errors_{stem[len('symbol_'):]}.json"
        files[name] = open(path).read()
    lenet = os.path.join(root, "checkpoint_lenet", "lenet_small-symbol.json")
    files["checkpoint_lenet.json"] = open(lenet).read()
    return files


def export_zoo(tmp):
    from mxnet.gluon.model_zoo import vision
    files = {}
    for name in ZOO:
        with mx.name.NameManager():
            net = vision.get_model(name, pretrained=False)
        net.initialize()
        net.hybridize()
        size = 299 if name == "inceptionv3" else 224
        net(mx.nd.zeros((1, 3, size, size)))
        net.export(os.path.join(tmp, name))
        files[f"zoo_{name}-symbol.json.gz"] = open(os.path.join(tmp, f"{name}-symbol.json")).read()
    return files


def api_nn():
    data, x1d, idx = mx.sym.var("data"), mx.sym.var("x1d"), mx.sym.var("idx")
    c1 = mx.sym.Convolution(data, kernel=(3, 3), num_filter=8, stride=(2, 2), pad=(1, 1),
                            dilate=(1, 1), name="c1")
    c2 = mx.sym.Convolution(c1, kernel=(3, 3), num_filter=8, num_group=4, no_bias=True)
    bn = mx.sym.BatchNorm(c2, fix_gamma=False, eps=1e-5, momentum=0.8)
    bn2 = mx.sym.BatchNorm(bn, use_global_stats=True, axis=1, name="bn_global")
    acts = [mx.sym.Activation(bn2, act_type=t) for t in
            ("relu", "sigmoid", "tanh", "softrelu", "softsign")]
    leaky = [mx.sym.LeakyReLU(acts[0], act_type="leaky", slope=0.1),
             mx.sym.LeakyReLU(acts[1], act_type="elu"),
             mx.sym.LeakyReLU(acts[2], act_type="prelu"),
             mx.sym.LeakyReLU(acts[3], act_type="selu"),
             mx.sym.LeakyReLU(acts[4], act_type="gelu")]
    s = mx.sym.add_n(*leaky)
    pools = [mx.sym.Pooling(s, kernel=(2, 2), pool_type="max", stride=(2, 2),
                            pooling_convention="full"),
             mx.sym.Pooling(s, kernel=(3, 3), pool_type="avg", pad=(1, 1)),
             mx.sym.Pooling(s, kernel=(2, 2), pool_type="sum", stride=(2, 2))]
    gp = mx.sym.Pooling(pools[1], global_pool=True, pool_type="avg", kernel=(1, 1))
    dec = mx.sym.Deconvolution(pools[0], kernel=(2, 2), num_filter=4, stride=(2, 2),
                               adj=(1, 1), no_bias=False)
    up = mx.sym.UpSampling(pools[2], scale=2, sample_type="nearest", num_args=1)
    pad = mx.sym.Pad(up, mode="constant", pad_width=(0, 0, 0, 0, 1, 1, 1, 1),
                     constant_value=0.5)
    drop = mx.sym.Dropout(mx.sym.Flatten(pad), p=0.3)
    fc = mx.sym.FullyConnected(drop, num_hidden=10, flatten=True)
    fc2 = mx.sym.FullyConnected(dec, num_hidden=6, flatten=False, no_bias=True)
    ln = mx.sym.LayerNorm(fc, axis=-1, eps=1e-5)
    conv1d = mx.sym.Convolution(x1d, kernel=(3,), num_filter=4, layout="NCW", stride=(2,))
    emb = mx.sym.Embedding(idx, input_dim=10, output_dim=4)
    heads = [mx.sym.softmax(ln, axis=-1), mx.sym.log_softmax(fc2, axis=1, temperature=2.0),
             mx.sym.SoftmaxOutput(fc, name="softmax"), gp, conv1d, emb]
    return mx.sym.Group(heads)


def api_tensor():
    a, b, c = mx.sym.var("a"), mx.sym.var("b"), mx.sym.var("c")
    r = [mx.sym.Reshape(a, shape=(0, -1)), mx.sym.Reshape(a, shape=(-2,)),
         mx.sym.reshape(a, shape=(-3, -2)), mx.sym.reshape(a, shape=(-4, 2, -1, -2)),
         mx.sym.reshape(a, shape=(-1, 0), reverse=True)]
    t = mx.sym.transpose(r[0], axes=(1, 0))
    sw = mx.sym.SwapAxis(a, dim1=0, dim2=2)
    ex = mx.sym.expand_dims(b, axis=1)
    sq = mx.sym.squeeze(ex, axis=1)
    cat = mx.sym.Concat(a, sw, dim=1)
    sc = mx.sym.SliceChannel(cat, num_outputs=2, axis=1, squeeze_axis=False)
    sp = mx.sym.split(b, num_outputs=2, axis=0)
    sl = mx.sym.slice(a, begin=(0, 1), end=(None, 3), step=(1, 2))
    sa = mx.sym.slice_axis(a, axis=1, begin=0, end=None)
    ti = mx.sym.tile(sq, reps=(2, 1))
    rep = mx.sym.repeat(sq, repeats=2, axis=0)
    oh = mx.sym.one_hot(c, depth=5, on_value=2.0, dtype="int32")
    cast = mx.sym.Cast(ti, dtype="float16")
    wh = mx.sym.where(mx.sym.ones_like(b), b, mx.sym.zeros_like(b))
    dot = mx.sym.dot(b, b, transpose_b=True)
    bd = mx.sym.batch_dot(a, a, transpose_a=True)
    cp = mx.sym._internal._copy(mx.sym.identity(wh))
    es = mx.sym.ElementWiseSum(cp, wh, rep, name="esum")
    cl = mx.sym.clip(es, a_min=-1, a_max=1.5)
    return mx.sym.Group(r + [t, sc[0], sc[1], sp[1], sl, sa, oh, cast, dot, bd, cl])


def api_reduce():
    x = mx.sym.var("x")
    return mx.sym.Group([mx.sym.sum(x, axis=1, keepdims=True), mx.sym.mean(x, axis=(0, 2)),
                         mx.sym.max(x, axis=1, exclude=True), mx.sym.min(x),
                         mx.sym.prod(x, axis=-1), mx.sym.argmax(x, axis=1),
                         mx.sym.sum(x), mx.sym.nansum(x, axis=0)])


def api_elemwise():
    x, y, z = mx.sym.var("x"), mx.sym.var("y"), mx.sym.var("z")
    unary = [getattr(mx.sym, n)(x) for n in
             ("exp", "log", "sqrt", "rsqrt", "square", "abs", "sign", "negative", "sin",
              "cos", "tanh", "sigmoid", "relu", "erf", "floor", "ceil", "round", "log1p")]
    arith = [x + y, x - y, x * y, x / y, x % y, x ** y, 2 * x, x - 3, 3 - x, 1 / x, x ** 2,
             2 ** x, -x, x / 4.5, x > y, x <= 0.5, x == y, x != 1]
    bcast = [mx.sym.broadcast_add(x, z), mx.sym.broadcast_mul(x, z),
             mx.sym.broadcast_maximum(x, z), mx.sym.broadcast_greater(x, z),
             mx.sym.broadcast_power(x, z)]
    return mx.sym.Group(unary + arith + bcast + [mx.sym.elemwise_add(x, y),
                                                 mx.sym.BlockGrad(x), mx.sym.stop_gradient(y)])


def api_loss():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    fc = mx.sym.FullyConnected(x, num_hidden=4, name="fc")
    return mx.sym.Group([
        mx.sym.LinearRegressionOutput(fc, y, grad_scale=0.5, name="lro"),
        mx.sym.MakeLoss(mx.sym.sum(mx.sym.square(fc)), normalization="batch", grad_scale=2.0),
        mx.sym.BlockGrad(2 * fc),
        mx.sym.SoftmaxOutput(fc, multi_output=True, use_ignore=True, ignore_label=0,
                             normalization="valid", name="smo")])


def api_attrs():
    w = mx.sym.Variable("w", shape=(3, 4), dtype="float16", lr_mult=2.0, wd_mult=0.0,
                        init=mx.init.Xavier(), stype="default")
    odd = mx.sym.Variable('a"b\\c\n\té€/', attr={"note": 'ü "q" \\ /'})
    with mx.AttrScope(ctx_group="dev1", lr_mult="0.1"):
        h = mx.sym.FullyConnected(mx.sym.var("data"), w, no_bias=True, num_hidden=3,
                                  name="fc", attr={"__mood__": "happy"})
    with mx.AttrScope(ctx_group="dev2"):
        out = mx.sym.relu(h) * odd
    return out


def api_multi_output():
    x = mx.sym.var("x")
    bn = mx.sym.BatchNorm(x, output_mean_var=True, name="bn")
    sc = mx.sym.SliceChannel(bn[0], num_outputs=3, axis=1)
    internals = sc.get_internals()
    return mx.sym.Group([sc[2], bn[1], bn[2], sc[0], sc[0], x,
                         internals["bn_output"], bn[0] + sc[1]])


def api_lstm():
    cell = mx.rnn.LSTMCell(num_hidden=8, prefix="lstm_")
    outputs, states = cell.unroll(3, inputs=mx.sym.var("data"), merge_outputs=True)
    return mx.sym.Group([outputs] + states)


def api_wide():
    """More than 10 inputs / heads / arguments: dmlc then writes one entry per line."""
    xs = [mx.sym.var(f"x{i}") for i in range(12)]
    return mx.sym.Group([mx.sym.add_n(*xs[:11]), mx.sym.Concat(*xs, dim=0), xs[3]] +
                        [x * 2 for x in xs[:9]])


API = {"api_wide": api_wide, "api_nn": api_nn, "api_tensor": api_tensor, "api_reduce": api_reduce,
       "api_elemwise": api_elemwise, "api_loss": api_loss, "api_attrs": api_attrs,
       "api_multi_output": api_multi_output, "api_lstm": api_lstm}


def legacy_docs():
    """Pre-1.0 documents: 'param'+'attr' (merged), old hidden keys, 2-element entries,
    backward_source_id, aux variables without __init__, alias op names."""
    def var(name, **extra):
        return dict({"op": "null", "param": {}, "name": name, "inputs": [],
                     "backward_source_id": -1}, **extra)
    v080 = {"nodes": [
        var("data"), var("fc1_weight", attr={"lr_mult": "0.5"}), var("fc1_bias"),
        {"op": "FullyConnected", "param": {"no_bias": "False", "num_hidden": "16"},
         "name": "fc1", "inputs": [[0, 0], [1, 0], [2, 0]], "backward_source_id": -1,
         "attr": {"ctx_group": "dev1"}},
        {"op": "Activation", "param": {"act_type": "relu"}, "name": "relu1",
         "inputs": [[3, 0]], "backward_source_id": -1},
        var("bn_gamma"), var("bn_beta"), var("bn_moving_mean"), var("bn_moving_var"),
        {"op": "BatchNorm", "param": {"eps": "0.001", "fix_gamma": "True", "momentum": "0.9",
                                      "use_global_stats": "False"},
         "name": "bn", "inputs": [[4, 0], [5, 0], [6, 0], [7, 0], [8, 0]],
         "backward_source_id": -1},
        var("softmax_label"),
        {"op": "SoftmaxOutput", "param": {"grad_scale": "1", "ignore_label": "-1",
                                          "multi_output": "False", "normalization": "null",
                                          "use_ignore": "False"},
         "name": "softmax", "inputs": [[9, 0], [10, 0]], "backward_source_id": -1}],
        "arg_nodes": [0, 1, 2, 5, 6, 7, 8, 10], "heads": [[11, 0]]}
    elem = {"nodes": [
        {"op": "null", "name": "a", "inputs": [], "attr": {"wd_mult": "0", "mirror_stage": "1",
                                                         "note": "kept"}},
        {"op": "null", "name": "b", "inputs": []},
        {"op": "_Plus", "name": "plus0", "inputs": [[0, 0], [1, 0]],
         "attr": {"force_mirroring": "True", "ctx_group": "g"}},
        {"op": "_MulScalar", "param": {"scalar": "2"}, "name": "mul0", "inputs": [[2, 0]]},
        {"op": "ElementWiseSum", "param": {"num_args": "3"}, "name": "sum0",
         "inputs": [[3, 0], [2, 0], [0, 0]]}],
        "arg_nodes": [0, 1], "heads": [[4, 0], [2, 0]],
        "attrs": {"mxnet_version": ["int", 10200]}}
    return {"legacy_v080.json": v080, "legacy_v10200_elemwise.json": elem}


def lists(sym):
    return {"list_arguments": sym.list_arguments(),
            "list_auxiliary_states": sym.list_auxiliary_states(),
            "list_outputs": sym.list_outputs()}


def write(name, text):
    path = os.path.join(HERE, name)
    if name.endswith(".gz"):
        with gzip.GzipFile(path, "wb", mtime=0) as f:
            f.write(text.encode())
    else:
        with open(path, "w") as f:
            f.write(text)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/refcases"
    tmp = os.path.join(HERE, "_tmp_export")
    os.makedirs(tmp, exist_ok=True)
    files = copy_refcases(root)
    files.update(export_zoo(tmp))
    shutil.rmtree(tmp)
    for name, build in API.items():
        with mx.name.NameManager():
            files[f"{name}.json"] = build().tojson()
    index = {}
    for name, text in sorted(files.items()):
        sym = mx.sym.load_json(text)
        assert sym.tojson() == text, f"MXNet does not round-trip {name}"
        index[name] = dict(lists(sym), kind="roundtrip")
        write(name, text)
    for name, doc in legacy_docs().items():
        text = json.dumps(doc, indent=1)
        sym = mx.sym.load_json(text)
        upgraded = name.replace(".json", ".upgraded.json")
        index[name] = dict(lists(sym), kind="legacy", upgraded=upgraded)
        write(name, text)
        write(upgraded, sym.tojson())
    lines = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(index.items())]
    write("lists.json.gz", "{\n" + ",\n".join(lines) + "\n}\n")


if __name__ == "__main__":
    main()
