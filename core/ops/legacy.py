"""MXNet's legacy and single-device variants of the core layers, each declared as itself (its
own attribute schema, name and backward operator) and computed as the modern operator it
stands for (``as_op`` maps its parameters):

- ``BatchNorm_v1``, ``_contrib_SyncBatchNorm`` (one device: ``ndev`` and ``key`` only name the
  devices that would share statistics) and ``_contrib_BatchNormWithReLU`` (BatchNorm, then
  relu on the output) -> ``BatchNorm`` with the channel axis 1;
- ``Convolution_v1`` -> ``Convolution``; ``Pooling_v1`` -> ``Pooling`` (one output: no
  workspace; the max gradient finds each window's maximum again);
- bilinear ``UpSampling`` (declared in ``slicing``) -> a grouped ``Deconvolution``
  (``resample.upsampling_deconv_attrs``).

Checked against MXNet 1.9.1 (tests/data/vision/geometry): every variant's hidden ``var`` output
holds what BatchNorm's does (the inverse standard deviation in training).
"""
from __future__ import annotations

from ..ir.attrs import Params
from ..ir.graph import Entry
from . import conv  # noqa: F401 - registers Convolution and Pooling, mapped to below
from .common import Bool, Enum, Float, Int, OpDef, Shape, Str, register_op
from .nn import OptEnum, PositiveInt
from .registry import get_op
from .tensor_grad import backward_op, forward_params

__all__ = ["LEGACY", "as_op"]

#: legacy op -> the modern op it is computed as
LEGACY = {"BatchNorm_v1": "BatchNorm", "_contrib_SyncBatchNorm": "BatchNorm",
          "_contrib_BatchNormWithReLU": "BatchNorm", "Convolution_v1": "Convolution",
          "Pooling_v1": "Pooling"}


def as_op(target: str, p: Params, **overrides) -> Params:
    """``p`` (a legacy node's parameters) as parameters of ``target``: the fields both
    schemas share, then ``overrides``; the rest take ``target``'s defaults."""
    fields = get_op(target).schema.fields
    attrs = {k: v for k, v in vars(p).items() if k in fields and v is not None}
    attrs.update(overrides)
    return get_op(target).parse(attrs)


def _delegate_rule(name: str, fn_name: str):
    """The modern op's shape or dtype rule applied with the mapped parameters."""
    target = get_op(LEGACY[name])
    fn = getattr(target, fn_name)

    def rule(p, ins, outs):
        fn(as_op(target.name, p), ins, outs)
    return rule


def _out(node, k: int = 0) -> Entry:
    return Entry(node, k)


_GRAD_INPUTS = {
    "BatchNorm": lambda node, og: [og[0], _out(node, 1), _out(node, 2), *node.inputs],
    "Convolution": lambda node, og: [og[0], *node.inputs],
    "Pooling": lambda node, og: [og[0], node.inputs[0], _out(node)],
}


def _gradient(name: str):
    build = _GRAD_INPUTS[LEGACY[name]]
    relu = name == "_contrib_BatchNormWithReLU"

    def rule(g, node, ograds):
        ins = build(node, ograds) + ([_out(node)] if relu else [])
        grads = g.outputs(g.backward_node(node, f"_backward_{name}", ins))
        return grads + [None] * (len(node.inputs) - len(grads))
    return rule


def _bn_params(**extra) -> dict:
    return {"eps": Float(1e-3), "momentum": Float(0.9), "fix_gamma": Bool(True),
            "use_global_stats": Bool(False), "output_mean_var": Bool(False), **extra}


def _conv_v1_params() -> dict:
    return {"kernel": Shape(), "stride": Shape(()), "dilate": Shape(()), "pad": Shape(()),
            "num_filter": PositiveInt(), "num_group": PositiveInt(1), "workspace": Int(1024),
            "no_bias": Bool(False),
            "cudnn_tune": OptEnum(("fastest", "limited_workspace", "off"), None),
            "cudnn_off": Bool(False), "layout": OptEnum(("NCDHW", "NCHW", "NDHWC", "NHWC"), None)}


def _pool_v1_params() -> dict:
    return {"kernel": Shape(()), "pool_type": Enum(("avg", "max", "sum"), "max"),
            "global_pool": Bool(False), "pooling_convention": Enum(("full", "valid"), "valid"),
            "stride": Shape(()), "pad": Shape(())}


def _declare_bn(name: str, params: dict) -> None:
    bn = get_op("BatchNorm")
    register_op(OpDef(name, params=params, inputs=bn.input_names(bn.parse({})),
                      aux=("moving_mean", "moving_var"), outputs=("output", "mean", "var"),
                      num_visible=lambda p: 3 if p.output_mean_var else 1,
                      infer_shape=_delegate_rule(name, "infer_shape_fn"),
                      infer_type=_delegate_rule(name, "infer_type_fn"),
                      gradient=_gradient(name), traits=("normalization",),
                      input_var_attrs=bn.input_var_attrs))
    extra = ["out"] if name == "_contrib_BatchNormWithReLU" else []
    backward_op(f"_backward_{name}", params=forward_params(name), outputs=3,
                inputs=("ograd", "mean", "var", "data", "gamma", "beta", "moving_mean",
                        "moving_var", *extra))


def _declare() -> None:
    _declare_bn("BatchNorm_v1", _bn_params())
    _declare_bn("_contrib_SyncBatchNorm", _bn_params(ndev=Int(1), key=Str()))
    _declare_bn("_contrib_BatchNormWithReLU", dict(get_op("BatchNorm").schema.fields))
    register_op(OpDef("Convolution_v1", params=_conv_v1_params(),
                      inputs=lambda p: ["data", "weight"] + ([] if p.no_bias else ["bias"]),
                      infer_shape=_delegate_rule("Convolution_v1", "infer_shape_fn"),
                      infer_type=_delegate_rule("Convolution_v1", "infer_type_fn"),
                      gradient=_gradient("Convolution_v1"), traits=("conv",)))
    backward_op("_backward_Convolution_v1", params=forward_params("Convolution_v1"),
                inputs=lambda p: ["ograd", "data", "weight"] + ([] if p.no_bias else ["bias"]),
                outputs=lambda p: [f"output{k}" for k in range(2 if p.no_bias else 3)])
    register_op(OpDef("Pooling_v1", params=_pool_v1_params(),
                      infer_shape=_delegate_rule("Pooling_v1", "infer_shape_fn"),
                      infer_type=_delegate_rule("Pooling_v1", "infer_type_fn"),
                      gradient=_gradient("Pooling_v1"), traits=("pooling",)))
    backward_op("_backward_Pooling_v1", params=forward_params("Pooling_v1"),
                inputs=("ograd", "data", "out"))


_declare()
