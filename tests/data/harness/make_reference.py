"""Record MXNet 1.9.1's training-harness behaviour for tests/test_harness_*.py.

Run with a Python that has mxnet==1.9.1 and numpy<1.24 (never a dependency of graphexec):

    MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=2 python tests/data/harness/make_reference.py

Writes, beside this script:
  optimizers.npz   weights, gradients and the weights/states after each of 3 updates, per
                   optimizer configuration (keys "<case>/...")
  reference.json   optimizer cases, learning-rate schedules, initializer rules and statistics,
                   metric values, NDArrayIter and CSVIter batches, RecordIO expectations
  mxnet.rec/.idx   a RecordIO file written by MXNet (records that exercise the format)
  images.rec/.idx  PNG image records (packed by MXNet) and images.npz: ImageRecordIter batches
  rnn.npz          weights, outputs and gradients of unrolled mx.rnn cells (LSTM, GRU, RNN)
"""
import json
import os
import struct
import zlib

import mxnet as mx
import numpy as np
from rnn_net import rnn_symbol

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = {}


# -- optimizers ---------------------------------------------------------------------------------
OPTIMIZERS = [
    ("sgd", {"learning_rate": 0.1}),
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "rescale_grad": 0.5}),
    ("sgd", {"learning_rate": 0.05, "momentum": 0.9, "clip_gradient": 0.3}),
    ("nag", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}),
    ("nag", {"learning_rate": 0.1}),
    ("signum", {"learning_rate": 0.01, "momentum": 0.9, "wd_lh": 0.01, "wd": 0.001}),
    ("signum", {"learning_rate": 0.01, "momentum": 0.0}),
    ("adam", {"learning_rate": 0.01, "wd": 0.01, "rescale_grad": 0.5}),
    ("adam", {"learning_rate": 0.01, "clip_gradient": 0.2}),
    ("rmsprop", {"learning_rate": 0.01, "wd": 0.01}),
    ("rmsprop", {"learning_rate": 0.01, "centered": True, "clip_weights": 0.5,
                 "clip_gradient": 1.0}),
    ("adagrad", {"learning_rate": 0.1, "wd": 0.01}),
    ("adadelta", {"rho": 0.9, "epsilon": 1e-5, "wd": 0.01}),
    ("ftrl", {"learning_rate": 0.1, "lamda1": 0.01, "beta": 1.0, "wd": 0.01}),
    ("lamb", {"learning_rate": 0.01, "wd": 0.01}),
    ("lamb", {"learning_rate": 0.01, "bias_correction": False, "lower_bound": 0.1,
              "upper_bound": 2.0}),
]


def record_optimizers(arrays):
    rng = np.random.RandomState(0)
    weight = rng.uniform(-1, 1, (4, 5)).astype("f4")
    grads = [rng.uniform(-2, 2, (4, 5)).astype("f4") for _ in range(3)]
    arrays["weight"] = weight
    for k, g in enumerate(grads):
        arrays[f"grad{k}"] = g
    cases = []
    for n, (name, kwargs) in enumerate(OPTIMIZERS):
        opt = mx.optimizer.create(name, param_idx2name={0: "fc_weight"}, **kwargs)
        updater = mx.optimizer.get_updater(opt)
        w = mx.nd.array(weight)
        for k, g in enumerate(grads):
            updater(0, mx.nd.array(g), w)
            arrays[f"opt{n}/step{k}"] = w.asnumpy()
        cases.append({"name": name, "kwargs": kwargs})
    # AdamW is the _adamw_update operator with eta 1 and Adam's bias-corrected lr
    w, mean, var = mx.nd.array(weight), mx.nd.zeros(weight.shape), mx.nd.zeros(weight.shape)
    for k, g in enumerate(grads):
        t = k + 1
        lr = 0.01 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        mx.nd.contrib.adamw_update(w, mx.nd.array(g), mean, var, mx.nd.array([0.5]), lr=lr,
                                   eta=1.0, wd=0.01, epsilon=1e-6, out=w)
        arrays[f"adamw/step{k}"] = w.asnumpy()
    OUT["optimizers"] = cases
    OUT["adamw"] = {"learning_rate": 0.01, "wd": 0.01, "epsilon": 1e-6, "rescale_grad": 0.5}
    # float16 weights through a float32 master copy
    opt = mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9, multi_precision=True)
    updater = mx.optimizer.get_updater(opt)
    w = mx.nd.array(weight, dtype="float16")
    for g in grads:
        updater(0, mx.nd.array(g, dtype="float16"), w)
    arrays["sgd_fp16"] = w.asnumpy()
    record_mults()


def record_mults():
    """lr_mult / wd_mult from names, symbol attributes and set_*_mult."""
    data = mx.sym.Variable("data")
    w = mx.sym.Variable("fc_weight", lr_mult=2.0)
    b = mx.sym.Variable("fc_bias", wd_mult=3.0)
    net = mx.sym.FullyConnected(data, w, b, num_hidden=3, name="fc")
    net = mx.sym.BatchNorm(net, name="bn")
    names = {0: "fc_weight", 1: "fc_bias", 2: "bn_gamma", 3: "bn_beta", 4: "other"}
    opt = mx.optimizer.SGD(learning_rate=0.1, wd=0.01, sym=net, param_idx2name=names)
    opt.set_lr_mult({"bn_beta": 0.5})
    OUT["mults"] = {"lr": [opt._get_lr(i) for i in range(5)],
                    "wd": [opt._get_wd(i) for i in range(5)]}


# -- learning-rate schedules ---------------------------------------------------------------------
SCHEDULERS = [
    ("FactorScheduler", {"step": 3, "factor": 0.5, "base_lr": 1.0}),
    ("FactorScheduler", {"step": 2, "factor": 0.1, "stop_factor_lr": 1e-3, "base_lr": 1.0,
                         "warmup_steps": 3, "warmup_begin_lr": 0.1}),
    ("MultiFactorScheduler", {"step": [2, 5, 7], "factor": 0.5, "base_lr": 1.0}),
    ("PolyScheduler", {"max_update": 8, "base_lr": 1.0, "pwr": 2, "final_lr": 0.1,
                       "warmup_steps": 2, "warmup_mode": "constant", "warmup_begin_lr": 0.5}),
    ("CosineScheduler", {"max_update": 8, "base_lr": 1.0, "final_lr": 0.1}),
]


def record_schedulers():
    cases = []
    for name, kwargs in SCHEDULERS:
        sched = getattr(mx.lr_scheduler, name)(**kwargs)
        cases.append({"name": name, "kwargs": kwargs,
                      "values": [sched(n) for n in range(12)]})
    OUT["schedulers"] = cases


# -- initializers --------------------------------------------------------------------------------
def record_initializers(arrays):
    shapes = {"fc_weight": (3, 4), "fc_bias": (3,), "bn_gamma": (3,), "bn_beta": (3,),
              "bn_moving_mean": (3,), "bn_moving_var": (3,), "up_weight": (2, 1, 4, 4),
              "lstm_bias": (8,), "q_min": (2,), "q_max": (2,)}
    rules = {}
    for name, shape in shapes.items():
        arr = mx.nd.full(shape, 7.0)
        attrs = {}
        if name == "bn_moving_mean":
            attrs = {"__init__": '["zero", {}]'}
        if name == "bn_moving_var":
            attrs = {"__init__": '["one", {}]'}
        if name == "up_weight":
            attrs = {"__init__": mx.init.Bilinear().dumps()}
        if name == "lstm_bias":
            attrs = {"__init__": mx.init.LSTMBias(forget_bias=2.0).dumps()}
        mx.init.Constant(0.25)(mx.init.InitDesc(name, attrs), arr)
        arrays[f"init/{name}"] = arr.asnumpy()
        rules[name] = {"shape": shape, "attrs": attrs}
    OUT["init_rules"] = rules
    mx.random.seed(0)
    stats = []
    for name, kwargs, shape in [("xavier", {}, (64, 32, 3, 3)),
                                ("xavier", {"factor_type": "in", "magnitude": 2.34}, (200, 300)),
                                ("xavier", {"rnd_type": "gaussian", "factor_type": "out"},
                                 (300, 200)),
                                ("msraprelu", {"slope": 0.1}, (128, 64, 3, 3)),
                                ("uniform", {"scale": 0.3}, (300, 300)),
                                ("normal", {"sigma": 0.2}, (300, 300))]:
        arr = mx.nd.zeros(shape)
        mx.init.create(name, **kwargs)(mx.init.InitDesc("x_weight"), arr)
        v = arr.asnumpy()
        stats.append({"name": name, "kwargs": kwargs, "shape": shape, "std": float(v.std()),
                      "max": float(np.abs(v).max()), "mean": float(v.mean())})
    OUT["init_stats"] = stats
    arr = mx.nd.zeros((6, 10))
    mx.init.Orthogonal(scale=1.5)(mx.init.InitDesc("o_weight"), arr)
    v = arr.asnumpy()
    OUT["orthogonal_gram"] = (v @ v.T).tolist()
    OUT["init_dumps"] = {"xavier": mx.init.Xavier(factor_type="in", magnitude=2).dumps(),
                         "constant": mx.init.Constant(0.5).dumps(),
                         "msraprelu": mx.init.MSRAPrelu().dumps()}


# -- metrics -------------------------------------------------------------------------------------
def metric_batches():
    rng = np.random.RandomState(1)
    batches = []
    for n in (8, 5, 7):
        scores = rng.uniform(0, 1, (n, 4)).astype("f4")
        probs = scores / scores.sum(axis=1, keepdims=True)
        labels = rng.randint(0, 4, n).astype("f4")
        binary = rng.uniform(0, 1, (n, 2)).astype("f4")
        blabels = rng.randint(0, 2, n).astype("f4")
        regress = rng.uniform(-1, 1, (n,)).astype("f4")
        target = (regress + rng.normal(0, 0.3, n)).astype("f4")
        batches.append({"probs": probs.tolist(), "labels": labels.tolist(),
                        "binary": binary.tolist(), "blabels": blabels.tolist(),
                        "regress": regress.tolist(), "target": target.tolist()})
    return batches


METRICS = [
    ("acc", {}, "probs", "labels"), ("top_k_accuracy", {"top_k": 2}, "probs", "labels"),
    ("f1", {}, "binary", "blabels"), ("f1", {"average": "micro"}, "binary", "blabels"),
    ("mcc", {}, "binary", "blabels"), ("mcc", {"average": "micro"}, "binary", "blabels"),
    ("pcc", {}, "probs", "labels"), ("ce", {}, "probs", "labels"),
    ("nll_loss", {}, "probs", "labels"), ("perplexity", {"ignore_label": 2}, "probs", "labels"),
    ("perplexity", {"ignore_label": None}, "probs", "labels"),
    ("mae", {}, "regress", "target"), ("mse", {}, "regress", "target"),
    ("rmse", {}, "regress", "target"), ("pearsonr", {}, "regress", "target"),
    ("pearsonr", {"average": "micro"}, "regress", "target"), ("loss", {}, "regress", "target"),
]


def record_metrics():
    batches = metric_batches()
    cases = []
    for name, kwargs, pred_key, label_key in METRICS:
        metric = mx.metric.create(name, **kwargs)
        values = []
        for k, batch in enumerate(batches):
            metric.update([mx.nd.array(batch[label_key])], [mx.nd.array(batch[pred_key])])
            values.append([metric.get()[1], metric.get_global()[1]])
            if k == 1:
                metric.reset_local()
        cases.append({"name": name, "kwargs": kwargs, "pred": pred_key, "label": label_key,
                      "metric_name": metric.get()[0], "values": values})
    OUT["metric_batches"] = batches
    OUT["metrics"] = cases
    composite = mx.metric.create(["acc", "ce"])
    composite.update([mx.nd.array(batches[0]["labels"])], [mx.nd.array(batches[0]["probs"])])
    OUT["composite"] = [list(x) for x in composite.get()]


# -- iterators -----------------------------------------------------------------------------------
def record_iterators():
    data = np.arange(10 * 3, dtype="f4").reshape(10, 3)
    label = np.arange(10, dtype="f4")
    iters = {}
    for handle in ("pad", "discard", "roll_over"):
        it = mx.io.NDArrayIter(data, label, batch_size=4, last_batch_handle=handle)
        epochs = []
        for _ in range(3):
            epochs.append([[b.data[0].asnumpy().tolist(), b.label[0].asnumpy().tolist(), b.pad]
                           for b in it])
            it.reset()
        iters[handle] = epochs
    it = mx.io.NDArrayIter({"b": data, "a": data * 2}, {"lab": label}, batch_size=5)
    iters["dict_provide"] = [[d.name, list(d.shape)] for d in it.provide_data + it.provide_label]
    it = mx.io.NDArrayIter([data, data], batch_size=5)
    iters["list_names"] = [d.name for d in it.provide_data + it.provide_label]
    OUT["ndarrayiter"] = iters
    rows = np.arange(5 * 3, dtype="f4").reshape(5, 3) + 1
    np.savetxt(os.path.join(HERE, "csv_data.csv"), rows, delimiter=",", fmt="%g")
    np.savetxt(os.path.join(HERE, "csv_label.csv"), np.arange(5), delimiter=",", fmt="%g")
    csv = {}
    for round_batch in (True, False):
        it = mx.io.CSVIter(data_csv=os.path.join(HERE, "csv_data.csv"), data_shape=(3,),
                           label_csv=os.path.join(HERE, "csv_label.csv"), batch_size=2,
                           round_batch=round_batch)
        epochs = []
        for _ in range(3):
            epochs.append([[b.data[0].asnumpy().tolist(), b.label[0].asnumpy().tolist(), b.pad]
                           for b in it])
            it.reset()
        csv[str(round_batch)] = epochs
    OUT["csviter"] = csv


# -- RecordIO ------------------------------------------------------------------------------------
MAGIC = struct.pack("<I", 0xCED7230A)
RECORDS = [b"", b"a", b"abcd", b"hello world", MAGIC, b"xyz" + MAGIC + b"!",
           b"abcd" + MAGIC + b"efgh" + MAGIC, MAGIC + MAGIC, bytes(range(256)) * 3]


def record_recordio():
    rec, idx = os.path.join(HERE, "mxnet.rec"), os.path.join(HERE, "mxnet.idx")
    writer = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for k, payload in enumerate(RECORDS):
        writer.write_idx(k * 10, payload)
    header = mx.recordio.IRHeader(0, 3.5, 7, 0)
    writer.write_idx(1000, mx.recordio.pack(header, b"payload"))
    header = mx.recordio.IRHeader(0, [1.0, 2.0, 3.0], 8, 9)
    writer.write_idx(1001, mx.recordio.pack(header, b"vector"))
    writer.close()
    OUT["recordio"] = {"records": [r.hex() for r in RECORDS], "keys": [k * 10 for k in
                                                                       range(len(RECORDS))],
                       "packed_scalar": mx.recordio.pack(mx.recordio.IRHeader(0, 3.5, 7, 0),
                                                         b"payload").hex(),
                       "packed_vector": mx.recordio.pack(mx.recordio.IRHeader(0, [1., 2., 3.],
                                                                              8, 9),
                                                         b"vector").hex()}


def _png(img):
    """A PNG file of an HxWx3 (RGB) or HxW uint8 image (zlib only: no image library here)."""
    height, width = img.shape[:2]
    color = 2 if img.ndim == 3 else 0
    raw = b"".join(b"\x00" + img[y].tobytes() for y in range(height))

    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))
    head = struct.pack(">IIBBBBB", width, height, 8, color, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b""))


def record_images(arrays):
    rng = np.random.RandomState(3)
    rec, idx = os.path.join(HERE, "images.rec"), os.path.join(HERE, "images.idx")
    writer = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    sizes = [(12, 10), (10, 14), (16, 16), (11, 11), (13, 12)]
    for k, (h, w) in enumerate(sizes):
        img = rng.randint(0, 256, (h, w, 3)).astype("u1")
        arrays[f"image{k}"] = img
        writer.write_idx(k, mx.recordio.pack(mx.recordio.IRHeader(0, float(k % 3), k, 0),
                                             _png(img)))
    writer.close()
    configs = {"plain": {},
               "norm": {"mean_r": 120.0, "mean_g": 110.0, "mean_b": 100.0, "std_r": 50.0,
                        "std_g": 60.0, "std_b": 70.0, "scale": 0.5, "mirror": True},
               "resize": {"resize": 12}}
    for name, kwargs in configs.items():
        it = mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 9), batch_size=2,
                                   preprocess_threads=1, **kwargs)
        for n, batch in enumerate(it):
            arrays[f"images/{name}/data{n}"] = batch.data[0].asnumpy()
            arrays[f"images/{name}/label{n}"] = batch.label[0].asnumpy()
            arrays[f"images/{name}/pad{n}"] = np.array(batch.pad)
    OUT["image_configs"] = configs


# -- recurrent cells ------------------------------------------------------------------------------
def record_rnn():
    arrays = {}
    for kind in ("lstm", "gru", "rnn"):
        net = rnn_symbol(mx.rnn, mx.sym, kind)
        rng = np.random.RandomState(5)
        inputs = ("data", "softmax_label")
        exe = net.simple_bind(mx.cpu(), grad_req={n: "null" if n in inputs else "write"
                                                  for n in net.list_arguments()},
                              data=(3, 5), softmax_label=(3, 5))
        for name in net.list_arguments():
            value = (rng.randint(0, 11, (3, 5)) if name in inputs
                     else rng.uniform(-0.5, 0.5, exe.arg_dict[name].shape))
            exe.arg_dict[name][:] = value
            arrays[f"{kind}/arg/{name}"] = exe.arg_dict[name].asnumpy()
        exe.forward(is_train=True)
        exe.backward()
        arrays[f"{kind}/out"] = exe.outputs[0].asnumpy()
        for name, grad in exe.grad_dict.items():
            if grad is not None:
                arrays[f"{kind}/grad/{name}"] = grad.asnumpy()
    np.savez_compressed(os.path.join(HERE, "rnn.npz"), **arrays)


if __name__ == "__main__":
    record_rnn()
    arrays = {}
    record_optimizers(arrays)
    record_schedulers()
    record_initializers(arrays)
    record_metrics()
    record_iterators()
    record_recordio()
    record_images(arrays)
    np.savez_compressed(os.path.join(HERE, "optimizers.npz"),
                        **{k: v for k, v in arrays.items() if not k.startswith("image")})
    np.savez_compressed(os.path.join(HERE, "images.npz"),
                        **{k: v for k, v in arrays.items() if k.startswith("image")})
    with open(os.path.join(HERE, "reference.json"), "w") as f:
        json.dump(OUT, f, indent=1)
    print("wrote", sorted(os.listdir(HERE)))
