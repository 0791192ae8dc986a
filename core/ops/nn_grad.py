"""Gradients of the nn and conv families: their backward operators (``_backward_<Op>``) and
one gradient rule per forward operator (the loss heads' live in ``loss``).

Every backward operator reads what MXNet 1.9.1's backward node reads, in its order (checked
with ``exe.debug_str()``), carries the forward operator's attributes, and writes the gradient
of the forward node's input k as output k (shapes and dtypes come from the forward inputs:
``backward`` trait). Monitor names are ``<node>_backward_input<k>`` / ``_output<k>``.
"""
from __future__ import annotations

from typing import Callable

from ..ir.graph import Entry
from .common import OpDef, register_op
from .conv import pool_outputs
from .registry import get_op

__all__ = ["backward_op", "grad_names"]


def grad_names(count: int) -> list[str]:
    """Output names of a backward operator with ``count`` outputs (MXNet's monitor names)."""
    return [f"output{k}" for k in range(count)] if count > 1 else ["output"]


def backward_op(name: str, forward: str, inputs, outputs, inplace=()) -> OpDef:
    """Declare ``name`` with the attribute schema of the operator ``forward``; ``inputs`` /
    ``outputs`` are names or functions of the params, ``outputs`` also a count; ``inplace``:
    (input, output) pairs that may share memory."""
    if isinstance(outputs, int):
        outputs = grad_names(outputs)
    params = dict(get_op(forward).schema.fields)
    return register_op(OpDef(name, params=params, inputs=inputs, outputs=outputs,
                             traits=("backward",), named_inputs=False, inplace=inplace))


def _rule(op_name: str, build: Callable) -> Callable:
    """A rule making one ``op_name`` node from ``build(node, ograds)`` (its input entries)
    whose outputs are the gradients of the forward inputs, in order (None past them)."""
    def rule(g, node, ograds):
        bw = g.backward_node(node, op_name, build(node, ograds))
        grads: list = g.outputs(bw)
        return grads + [None] * (len(node.inputs) - len(grads))
    return rule


def _out(node, k: int = 0) -> Entry:
    return Entry(node, k)


# -- input lists of the backward nodes (MXNet's order) --------------------------------------
def _activation_inputs(node, og):
    ins = [og[0], _out(node)]
    return ins if node.params.act_type == "relu" else ins + [node.inputs[0]]


def _lrelu_inputs(node, og):
    kind = node.params.act_type
    if kind == "prelu":
        return [og[0], *node.inputs[:2], _out(node)]
    if kind == "rrelu":
        return [og[0], og[1], node.inputs[0], _out(node), _out(node, 1)]
    return [og[0], node.inputs[0], _out(node)]


def _softmax_inputs(node, og):
    if node.params.use_length:
        return [og[0], *node.inputs[:2], _out(node)]
    return [og[0], _out(node)]


def _pool_inputs(node, og):
    if len(pool_outputs(node.params)) > 1:  # max pooling keeps its argmax workspace
        return [og[0], og[1], node.inputs[0], _out(node), _out(node, 1)]
    return [og[0], node.inputs[0], _out(node)]


_RULES = {
    "FullyConnected": lambda node, og: [og[0], *node.inputs[:2]],
    "Activation": _activation_inputs,
    "LeakyReLU": _lrelu_inputs,
    "Dropout": lambda node, og: [og[0], _out(node, 1)],
    "softmax": _softmax_inputs,
    "log_softmax": lambda node, og: [og[0], _out(node)],
    "SoftmaxActivation": lambda node, og: [og[0], _out(node)],
    "BatchNorm": lambda node, og: [og[0], _out(node, 1), _out(node, 2), *node.inputs],
    "LayerNorm": lambda node, og: [og[0], *node.inputs[:2], _out(node, 1), _out(node, 2)],
    "Convolution": lambda node, og: [og[0], *node.inputs],
    "Deconvolution": lambda node, og: [og[0], *node.inputs],
    "Pooling": _pool_inputs,
}


# -- backward operator signatures -----------------------------------------------------------
def _with_bias(p) -> list[str]:
    return grad_names(2 if p.no_bias else 3)


_SIGNATURES = {
    "FullyConnected": (("ograd", "data", "weight"), _with_bias),
    "Activation": (lambda p: ["ograd", "out"] + ([] if p.act_type == "relu" else ["data"]), 1),
    "LeakyReLU": (lambda p: {"prelu": ["ograd", "data", "gamma", "out"],
                             "rrelu": ["ograd", "ograd_mask", "data", "out", "mask"]}.get(
                                 p.act_type, ["ograd", "data", "out"]),
                  lambda p: grad_names(2 if p.act_type == "prelu" else 1)),
    "Dropout": (("ograd", "mask"), 1),
    "softmax": (lambda p: ["ograd", "data", "length", "out"] if p.use_length
                else ["ograd", "out"], lambda p: grad_names(2 if p.use_length else 1)),
    "log_softmax": (("ograd", "out"), 1),
    "SoftmaxActivation": (("ograd", "out"), 1),
    "BatchNorm": (("ograd", "mean", "var", "data", "gamma", "beta", "moving_mean",
                   "moving_var"), 3),
    "LayerNorm": (("ograd", "data", "gamma", "mean", "std"), 3),
    "Convolution": (lambda p: ["ograd", "data", "weight"] + ([] if p.no_bias else ["bias"]),
                    _with_bias),
    "Deconvolution": (lambda p: ["ograd", "data", "weight"] + ([] if p.no_bias else ["bias"]),
                      _with_bias),
    "Pooling": (lambda p: ["ograd", "ograd_workspace", "data", "out", "workspace"]
                if len(pool_outputs(p)) > 1 else ["ograd", "data", "out"], 1),
}


# backward ops whose data gradient may overwrite the output gradient (their kernels read all
# of it first)
_INPLACE = frozenset(("Activation", "LeakyReLU", "Dropout", "softmax", "log_softmax",
                      "SoftmaxActivation", "BatchNorm", "LayerNorm"))


def _declare() -> None:
    for name, (inputs, outputs) in _SIGNATURES.items():
        backward_op(f"_backward_{name}", name, inputs, outputs,
                    ((0, 0),) if name in _INPLACE else ())
        get_op(name).gradient = _rule(f"_backward_{name}", _RULES[name])


_declare()
