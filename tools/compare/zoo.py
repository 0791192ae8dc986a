"""Built-in models for the A/B comparison tool, built with graphexec's own Symbol API (nothing
is downloaded). Each :class:`ZooModel` carries its default input shapes, so
``graphexec compare resnet18_v1`` needs no other argument.

* ``mlp``, ``lenet``: MXNet's classic tutorial networks with a SoftmaxOutput head.
* ``resnet18_v1``, ``resnet50_v1``: the Gluon model-zoo topologies with the node names,
  attributes and parameter hints Gluon's ``export()`` writes (``resnetv10_conv0_fwd``, ...), so
  ``tojson()`` matches a real export node for node; like the export, they end at the dense
  layer (no softmax head).
* ``lstm``: a 2-layer LSTM language model unrolled over 16 steps from FullyConnected,
  SliceChannel, Activation and elementwise ops.
* ``pointwise``: transformer-MLP blocks (LayerNorm, FullyConnected, GELU, scaled residual)
  whose GELUs are long elementwise chains, the fused backend's best case.

>>> sym = build_zoo_model("lenet")
>>> ZOO["lenet"].input_shapes
{'data': (32, 1, 28, 28), 'softmax_label': (32,)}
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from graphexec.core.ir.errors import GraphexecError
from graphexec.core.symbol import sym as S
from graphexec.core.symbol.naming import NameManager
from graphexec.core.symbol.symbol import Symbol

__all__ = ["ZooModel", "ZOO", "zoo_names", "get_zoo_model", "build_zoo_model", "UnknownModelError"]


class UnknownModelError(GraphexecError, ValueError):
    """A model name that the built-in zoo does not hold."""


@dataclass(frozen=True)
class ZooModel:
    """One built-in model: ``builder()`` returns its Symbol; ``input_shapes`` (data inputs and
    labels) and ``input_dtypes`` are the defaults a comparison binds with."""

    name: str
    description: str
    builder: Callable[[], Symbol]
    input_shapes: dict[str, tuple[int, ...]]
    label_names: tuple[str, ...] = ()
    input_dtypes: dict[str, str] = field(default_factory=dict)

    def build(self) -> Symbol:
        """A fresh Symbol; automatic names count from zero, so every build is identical."""
        with NameManager():
            return self.builder()

    def dtype_of(self, name: str) -> str:
        """The dtype of input ``name`` (float32 unless ``input_dtypes`` says otherwise)."""
        return self.input_dtypes.get(name, "float32")


# -- mlp, lenet ---------------------------------------------------------------------------------
def mlp() -> Symbol:
    """784-512-512-10 perceptron with relu activations and a SoftmaxOutput head."""
    x = S.Variable("data")
    for k, hidden in enumerate((512, 512), start=1):
        x = S.FullyConnected(x, num_hidden=hidden, name=f"fc{k}")
        x = S.Activation(x, act_type="relu", name=f"relu{k}")
    x = S.FullyConnected(x, num_hidden=10, name="fc3")
    return S.SoftmaxOutput(x, name="softmax")


def lenet() -> Symbol:
    """LeNet as MXNet's tutorial builds it: two conv(5x5)-tanh-maxpool(2x2) stages, then
    fc 500 tanh, fc 10, SoftmaxOutput."""
    x = S.Variable("data")
    for k, filters in enumerate((20, 50), start=1):
        x = S.Convolution(x, kernel=(5, 5), num_filter=filters, name=f"conv{k}")
        x = S.Activation(x, act_type="tanh", name=f"tanh{k}")
        x = S.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2), name=f"pool{k}")
    x = S.Flatten(x, name="flatten")
    x = S.FullyConnected(x, num_hidden=500, name="fc1")
    x = S.Activation(x, act_type="tanh", name="tanh3")
    x = S.FullyConnected(x, num_hidden=10, name="fc2")
    return S.SoftmaxOutput(x, name="softmax")


# -- Gluon ResNet v1 ----------------------------------------------------------------------------
class _GluonScope:
    """Gluon's block names: ``<prefix><kind><k>`` with one counter per kind in a scope."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self._counts: dict[str, int] = {}

    def name(self, kind: str) -> str:
        k = self._counts.get(kind, 0)
        self._counts[kind] = k + 1
        return f"{self.prefix}{kind}{k}"


def _gluon_param(name: str, shape: tuple[int, ...], init: str | None = None) -> Symbol:
    """A parameter variable with the hints Gluon's export writes (0 = deferred dimension)."""
    return S.Variable(name, shape=shape, dtype="float32", lr_mult=1.0, wd_mult=1.0,
                      init=init, stype="default")


def _conv(x: Symbol, scope: _GluonScope, channels: int, kernel: int, stride: int,
          in_channels: int = 0, bias: bool = False) -> Symbol:
    name = scope.name("conv")
    inputs = [x, _gluon_param(f"{name}_weight", (channels, in_channels, kernel, kernel))]
    if bias:
        inputs.append(_gluon_param(f"{name}_bias", (channels,), "zeros"))
    pad = kernel // 2
    return S.Convolution(*inputs, name=f"{name}_fwd", kernel=(kernel, kernel),
                         stride=(stride, stride), dilate=(1, 1), pad=(pad, pad),
                         num_filter=channels, num_group=1, layout="NCHW", no_bias=not bias)


def _batchnorm(x: Symbol, scope: _GluonScope) -> Symbol:
    name = scope.name("batchnorm")
    stats = [_gluon_param(f"{name}_{p}", (0,), init) for p, init in
             (("gamma", "ones"), ("beta", "zeros"), ("running_mean", "zeros"),
              ("running_var", "ones"))]
    return S.BatchNorm(x, *stats, name=f"{name}_fwd", axis=1, eps=1e-05, momentum=0.9,
                       fix_gamma=False, use_global_stats=False)


def _relu(x: Symbol, scope: _GluonScope) -> Symbol:
    return S.Activation(x, act_type="relu", name=f"{scope.name('relu')}_fwd")


def _basic_block(x: Symbol, scope: _GluonScope, channels: int, stride: int,
                 in_channels: int) -> Symbol:
    """Gluon's BasicBlockV1: two 3x3 convs; a 1x1 projection when the shape changes."""
    body = _relu(_batchnorm(_conv(x, scope, channels, 3, stride, in_channels), scope), scope)
    body = _batchnorm(_conv(body, scope, channels, 3, 1, channels), scope)
    residual = x
    if channels != in_channels:
        residual = _batchnorm(_conv(x, scope, channels, 1, stride, in_channels), scope)
    summed = S.elemwise_add(residual, body, name=scope.name("_plus"))
    return S.Activation(summed, act_type="relu", name=scope.name("activation"))


def _bottleneck(x: Symbol, scope: _GluonScope, channels: int, stride: int,
                in_channels: int) -> Symbol:
    """Gluon's BottleneckV1: 1x1 (carrying the stride, with bias), 3x3, 1x1 (with bias)."""
    mid = channels // 4
    body = _relu(_batchnorm(_conv(x, scope, mid, 1, stride, bias=True), scope), scope)
    body = _relu(_batchnorm(_conv(body, scope, mid, 3, 1, mid), scope), scope)
    body = _batchnorm(_conv(body, scope, channels, 1, 1, bias=True), scope)
    residual = x
    if channels != in_channels:
        residual = _batchnorm(_conv(x, scope, channels, 1, stride, in_channels), scope)
    summed = S.elemwise_add(body, residual, name=scope.name("_plus"))
    return S.Activation(summed, act_type="relu", name=scope.name("activation"))


def _resnet_v1(block: Callable, layers: tuple[int, ...], channels: tuple[int, ...],
               classes: int = 1000) -> Symbol:
    top = _GluonScope("resnetv10_")
    x = _relu(_batchnorm(_conv(S.Variable("data"), top, channels[0], 7, 2), top), top)
    x = S.Pooling(x, name=f"{top.name('pool')}_fwd", kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                  pool_type="max", pooling_convention="valid", global_pool=False,
                  layout="NCHW")
    for stage, count in enumerate(layers, start=1):
        scope = _GluonScope(f"{top.prefix}stage{stage}_")
        stride = 1 if stage == 1 else 2
        for k in range(count):
            x = block(x, scope, channels[stage], stride if k == 0 else 1,
                      channels[stage - 1] if k == 0 else channels[stage])
    x = S.Pooling(x, name=f"{top.name('pool')}_fwd", kernel=(1, 1), stride=(1, 1), pad=(0, 0),
                  pool_type="avg", pooling_convention="full", global_pool=True, layout="NCHW")
    dense = top.name("dense")
    weight = _gluon_param(f"{dense}_weight", (classes, channels[-1]))
    bias = _gluon_param(f"{dense}_bias", (classes,), "zeros")
    return S.FullyConnected(x, weight, bias, name=f"{dense}_fwd", num_hidden=classes,
                            no_bias=False, flatten=True)


def resnet18_v1() -> Symbol:
    """Gluon's ``resnet18_v1``: BasicBlockV1 x (2, 2, 2, 2)."""
    return _resnet_v1(_basic_block, (2, 2, 2, 2), (64, 64, 128, 256, 512))


def resnet50_v1() -> Symbol:
    """Gluon's ``resnet50_v1``: BottleneckV1 x (3, 4, 6, 3)."""
    return _resnet_v1(_bottleneck, (3, 4, 6, 3), (64, 256, 512, 1024, 2048))


# -- LSTM language model ------------------------------------------------------------------------
_LSTM_STEPS, _LSTM_LAYERS, _LSTM_HIDDEN, _LSTM_VOCAB = 16, 2, 128, 1000


def _lstm_cell(x: Symbol, state: tuple[Symbol, Symbol] | None, weights: dict[str, Symbol],
               prefix: str) -> tuple[Symbol, Symbol]:
    """One LSTM step as MXNet's LSTMCell unrolls it. At the first step the begin state is
    zero, so the h2h product and the forget term are left out (they would add zeros)."""
    gates = S.FullyConnected(x, weights["i2h_weight"], weights["i2h_bias"],
                             num_hidden=4 * _LSTM_HIDDEN, name=f"{prefix}i2h")
    if state is not None:
        h2h = S.FullyConnected(state[0], weights["h2h_weight"], weights["h2h_bias"],
                               num_hidden=4 * _LSTM_HIDDEN, name=f"{prefix}h2h")
        gates = S.elemwise_add(gates, h2h, name=f"{prefix}gates")
    sliced = S.SliceChannel(gates, num_outputs=4, name=f"{prefix}slice")
    acts = [S.Activation(sliced[k], act_type=act, name=f"{prefix}{gate}")
            for k, (gate, act) in enumerate((("in", "sigmoid"), ("forget", "sigmoid"),
                                             ("transform", "tanh"), ("out", "sigmoid")))]
    in_gate, forget_gate, transform, out_gate = acts
    cell = S.elemwise_mul(in_gate, transform, name=f"{prefix}write")
    if state is not None:
        kept = S.elemwise_mul(forget_gate, state[1], name=f"{prefix}keep")
        cell = S.elemwise_add(kept, cell, name=f"{prefix}c")
    squashed = S.Activation(cell, act_type="tanh", name=f"{prefix}c_tanh")
    return S.elemwise_mul(out_gate, squashed, name=f"{prefix}h"), cell


def lstm() -> Symbol:
    """Embedding -> 2 LSTM layers unrolled over 16 steps -> FullyConnected over the vocabulary
    -> SoftmaxOutput per step (``preserve_shape``: label (N, T), output (N, T, vocab))."""
    embed = S.Embedding(S.Variable("data"), input_dim=_LSTM_VOCAB, output_dim=_LSTM_HIDDEN,
                        name="embed")
    steps = S.SliceChannel(embed, num_outputs=_LSTM_STEPS, axis=1, squeeze_axis=True,
                           name="steps")
    seq = [steps[t] for t in range(_LSTM_STEPS)]
    for layer in range(_LSTM_LAYERS):
        prefix = f"lstm_l{layer}_"
        weights = {w: S.Variable(prefix + w) for w in
                   ("i2h_weight", "i2h_bias", "h2h_weight", "h2h_bias")}
        state = None
        for t, x in enumerate(seq):
            state = _lstm_cell(x, state, weights, f"{prefix}t{t}_")
            seq[t] = state[0]
    hidden = S.stack(*seq, axis=1, name="hidden")
    pred = S.FullyConnected(hidden, num_hidden=_LSTM_VOCAB, flatten=False, name="pred")
    return S.SoftmaxOutput(pred, S.Variable("softmax_label"), preserve_shape=True,
                           name="softmax")


# -- pointwise-heavy transformer MLP ------------------------------------------------------------
_BLOCKS, _WIDTH, _EXPANSION = 4, 256, 4


def _gelu_tanh(x: Symbol, prefix: str) -> Symbol:
    """GELU's tanh approximation spelled out as eight elementwise nodes."""
    cube = S._power_scalar(x, scalar=3.0, name=f"{prefix}cube")
    inner = S.elemwise_add(x, S._mul_scalar(cube, scalar=0.044715, name=f"{prefix}c1"),
                           name=f"{prefix}inner")
    scaled = S._mul_scalar(inner, scalar=math.sqrt(2.0 / math.pi), name=f"{prefix}c2")
    gate = S._plus_scalar(S.tanh(scaled, name=f"{prefix}tanh"), scalar=1.0, name=f"{prefix}one")
    half = S._mul_scalar(gate, scalar=0.5, name=f"{prefix}half")
    return S.elemwise_mul(x, half, name=f"{prefix}out")


def pointwise() -> Symbol:
    """Four pre-norm MLP blocks ``x + gamma * fc2(gelu(fc1(layernorm(x))))`` on (N, S, 256)
    tokens, then a final LayerNorm; even blocks use LeakyReLU's GELU, odd ones the explicit
    tanh formula."""
    x = S.Variable("data")
    for b in range(_BLOCKS):
        p = f"blk{b}_"
        h = S.LayerNorm(x, axis=-1, eps=1e-5, name=f"{p}ln")
        h = S.FullyConnected(h, num_hidden=_EXPANSION * _WIDTH, flatten=False, name=f"{p}fc1")
        h = (S.LeakyReLU(h, act_type="gelu", name=f"{p}gelu") if b % 2 == 0
             else _gelu_tanh(h, f"{p}gelu_"))
        h = S.FullyConnected(h, num_hidden=_WIDTH, flatten=False, name=f"{p}fc2")
        scaled = S.broadcast_mul(h, S.Variable(f"{p}scale_gamma", shape=(_WIDTH,)),
                                 name=f"{p}scale")
        x = S.elemwise_add(x, scaled, name=f"{p}residual")
    return S.LayerNorm(x, axis=-1, eps=1e-5, name="ln_out")


# -- the registry -------------------------------------------------------------------------------
ZOO: dict[str, ZooModel] = {m.name: m for m in (
    ZooModel("mlp", "784-512-512-10 perceptron (FullyConnected + relu, SoftmaxOutput)", mlp,
             {"data": (32, 784), "softmax_label": (32,)}, ("softmax_label",)),
    ZooModel("lenet", "LeNet: 2 x (conv 5x5, tanh, max pool), fc 500, fc 10, SoftmaxOutput",
             lenet, {"data": (32, 1, 28, 28), "softmax_label": (32,)}, ("softmax_label",)),
    ZooModel("resnet18_v1", "Gluon model-zoo ResNet-18 v1 (names as Gluon's export), 224x224",
             resnet18_v1, {"data": (1, 3, 224, 224)}),
    ZooModel("resnet50_v1", "Gluon model-zoo ResNet-50 v1 (names as Gluon's export), 224x224",
             resnet50_v1, {"data": (1, 3, 224, 224)}),
    ZooModel("lstm", f"LSTM language model: {_LSTM_LAYERS} layers x {_LSTM_STEPS} unrolled "
             f"steps, hidden {_LSTM_HIDDEN}, vocabulary {_LSTM_VOCAB}", lstm,
             {"data": (32, _LSTM_STEPS), "softmax_label": (32, _LSTM_STEPS)},
             ("softmax_label",)),
    ZooModel("pointwise", f"{_BLOCKS} transformer MLP blocks (LayerNorm, FC, GELU, scaled "
             f"residual) on {_WIDTH}-wide tokens: large elementwise regions", pointwise,
             {"data": (8, 64, _WIDTH)}),
)}


def zoo_names() -> list[str]:
    """The built-in model names, in registry order."""
    return list(ZOO)


def get_zoo_model(name: str) -> ZooModel:
    """The :class:`ZooModel` called ``name``; an unknown name raises
    :class:`UnknownModelError` listing the known ones."""
    try:
        return ZOO[name]
    except KeyError:
        raise UnknownModelError(f"no built-in model {name!r}; built-in models are: "
                                f"{', '.join(ZOO)}") from None


def build_zoo_model(name: str) -> Symbol:
    """The Symbol of built-in model ``name`` (see :data:`ZOO` for its default inputs)."""
    return get_zoo_model(name).build()
