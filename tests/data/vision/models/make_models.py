"""The GluonCV model corpus of tests/test_vision_models.py, exported from MXNet 1.9.1 +
GluonCV with random weights, with MXNet's own outputs:

    MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=2 /work/oracle/bin/python make_models.py \\
        [--out /work/refdata/vision] [--only name,name]

Per model: ``get_model(name, pretrained=False, pretrained_base=False)``, ``initialize()``;
``hybridize()``, one forward, ``export`` (``<name>-symbol.json``,
``<name>-0000.params``); the BatchNorm moving statistics are then calibrated on the input
(each set to the statistics of the batch it receives, in graph order) so deep nets keep
finite, unsaturated activations, and the files bound by MXNet's symbolic executor
(``MXNET_SUBGRAPH_BACKEND=NONE``) on a fixed random input: ``<name>-io.npz`` holds ``data``
and ``out<k>``. ``models.json`` lists every model with its input shape, output shapes, file
sizes, and the error where a model failed to export. The files stay out of git (hundreds of
MB); point ``GRAPHEXEC_VISION_MODELS`` at the folder to run the test.
"""
import argparse
import json
import os
import time
import traceback
import zlib

import mxnet as mx
import numpy as np
from gluoncv import model_zoo

SEG = {"crop_size": 128, "base_size": 128}
#: name -> (input shape, get_model keyword arguments)
MODELS = {
    "ssd_300_vgg16_atrous_voc": ((1, 3, 300, 300), {}),
    "ssd_512_resnet50_v1_voc": ((1, 3, 128, 128), {}),
    "ssd_512_mobilenet1.0_voc": ((1, 3, 128, 128), {}),
    "yolo3_darknet53_voc": ((1, 3, 128, 128), {}),
    "yolo3_mobilenet1.0_voc": ((1, 3, 128, 128), {}),
    "faster_rcnn_resnet50_v1b_voc": ((1, 3, 128, 128), {}),
    "center_net_resnet18_v1b_voc": ((1, 3, 128, 128), {}),
    "fcn_resnet50_voc": ((1, 3, 128, 128), dict(SEG)),
    "psp_resnet50_ade": ((1, 3, 128, 128), dict(SEG)),
    "deeplab_resnet50_ade": ((1, 3, 128, 128), dict(SEG, height=128, width=128)),
    "simple_pose_resnet18_v1b": ((1, 3, 128, 96), {}),
    "resnest14": ((1, 3, 64, 64), {}),
    "se_resnet18_v1": ((1, 3, 64, 64), {}),
    "mobilenetv3_small": ((1, 3, 64, 64), {}),
    "mobilenetv3_large": ((1, 3, 64, 64), {}),
    "i3d_resnet50_v1_kinetics400": ((1, 3, 8, 64, 64), {}),
    "slowfast_4x16_resnet50_kinetics400": ((1, 3, 36, 64, 64), {}),
    # small enough for git: tests/data/vision/models/small, made with
    #   make_models.py --out tests/data/vision/models/small --only ssd_mobilenet0.25_tiny
    "ssd_mobilenet0.25_tiny": ((1, 3, 128, 128), {}),
}


def _ssd_tiny(**kwargs):
    """GluonCV's SSD on mobilenet0.25 (as ssd_300_mobilenet0.25_voc) with narrow extra layers
    and two classes: under 1 MB of parameters."""
    from gluoncv.model_zoo.ssd.ssd import get_ssd
    return get_ssd("mobilenet0.25", 128, features=["relu22_fwd", "relu26_fwd"],
                   filters=[32, 32, 16, 16], sizes=[12, 24, 45, 66, 87, 108, 128],
                   ratios=[[1, 2, 0.5]] * 6, steps=[8, 16, 32, 64, 100, 128],
                   classes=["a", "b"], dataset="voc", anchor_alloc_size=16, **kwargs)


#: models built here rather than by name from the model zoo
BUILDERS = {"ssd_mobilenet0.25_tiny": _ssd_tiny}

CLASSIFIERS = {"resnest14", "se_resnet18_v1", "mobilenetv3_small", "mobilenetv3_large"}


def calibrate(sym, args, aux, x) -> int:
    """Set every BatchNorm's moving mean and variance to the (biased) statistics of the batch
    it receives, in graph order (each computed with the ones before it already set), so
    inference-mode activations are normalised as in training. Works on the exported symbol,
    so SymbolBlock feature extractors (SSD) are covered too. Returns the count."""
    graph = json.loads(sym.tojson())
    count = 0
    for node in graph["nodes"]:
        if node["op"] != "BatchNorm":
            continue
        src, index = node["inputs"][0][:2]
        part = mx.sym.load_json(json.dumps(dict(graph, heads=[[src, index, 0]])))
        data = _run(part, args, aux, x)
        axis = int(node.get("attrs", {}).get("axis", 1)) % data.ndim
        names = [graph["nodes"][i]["name"] for i, *_ in node["inputs"][3:5]]
        mean, var = _statistics(data, axis)
        aux[names[0]], aux[names[1]] = mx.nd.array(mean), mx.nd.array(var)
        count += 1
    return count


def _statistics(data, axis: int):
    """Per-channel mean and variance, with two guards against dividing by ~0 (which would
    blow rounding differences between implementations up to O(1)): channels seen at fewer
    than 32 positions (1x1 maps of a batch of one) are only scaled, by the RMS over every
    channel; other variances are at least 1e-3 of the mean variance."""
    axes = tuple(a for a in range(data.ndim) if a != axis)
    channels = data.shape[axis]
    if data.size // channels < 32:
        rms2 = max(float((data ** 2).mean()), 1e-6)
        return np.zeros(channels), np.full(channels, rms2)
    var = data.var(axis=axes)
    return data.mean(axis=axes), np.maximum(var, 1e-3 * max(float(var.mean()), 1e-6))


def _run(sym, args, aux, x):
    exe = sym.simple_bind(mx.cpu(), data=x.shape, grad_req="null")
    exe.copy_params_from({k: v for k, v in args.items() if k in exe.arg_dict},
                         {k: v for k, v in aux.items() if k in exe.aux_dict})
    return exe.forward(is_train=False, data=x)[0].asnumpy().astype("f8")


def export(name, shape, kwargs, out_dir, rng):
    if name not in CLASSIFIERS:  # (classifiers take no pretrained_base)
        kwargs = dict(kwargs, pretrained_base=False)
    if name in BUILDERS:
        net = BUILDERS[name](pretrained=False, **kwargs)
    else:
        net = model_zoo.get_model(name, pretrained=False, **kwargs)
    net.initialize()
    x = mx.nd.array(rng.uniform(0, 1, shape).astype("f4"))
    net.hybridize()
    net(x)
    prefix = os.path.join(out_dir, name)
    net.export(prefix, 0)
    sym, args, aux = mx.model.load_checkpoint(prefix, 0)
    calibrated = calibrate(sym, args, aux, x)
    mx.model.save_checkpoint(prefix, 0, sym, args, aux)
    exe = sym.simple_bind(mx.cpu(), data=shape, grad_req="null")
    exe.copy_params_from(args, aux)
    outs = [o.asnumpy() for o in exe.forward(is_train=False, data=x)]
    np.savez_compressed(prefix + "-io.npz", data=x.asnumpy(),
                        **{f"out{k}": o for k, o in enumerate(outs)})
    files = [prefix + s for s in ("-symbol.json", "-0000.params", "-io.npz")]
    return {"input_shape": list(shape), "output_shapes": [list(o.shape) for o in outs],
            "calibrated": calibrated, "finite": bool(all(np.isfinite(o).all() for o in outs)),
            "bytes": sum(os.path.getsize(f) for f in files),
            "ops": sorted({n["op"] for n in json.loads(sym.tojson())["nodes"]} - {"null"})}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/work/refdata/vision")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    index_path = os.path.join(args.out, "models.json")
    index = json.load(open(index_path)) if os.path.exists(index_path) else {}
    index["mxnet"] = mx.__version__
    index.setdefault("models", {})
    only = [n for n in args.only.split(",") if n]
    for name, (shape, kwargs) in MODELS.items():
        if only and name not in only:
            continue
        start = time.time()
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        mx.random.seed(17)
        try:
            index["models"][name] = export(name, shape, kwargs, args.out, rng)
        except Exception as exc:  # noqa: BLE001 - record and go on with the others
            traceback.print_exc()
            index["models"][name] = {"input_shape": list(shape),
                                     "error": f"{type(exc).__name__}: {exc}"}
        print(f"{name}: {time.time() - start:.1f}s {index['models'][name].get('error', 'ok')}",
              flush=True)
        with open(index_path, "w") as f:
            json.dump(index, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
