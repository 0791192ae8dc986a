"""Transformer helpers of MXNet's contrib namespace: the interleaved attention matmuls and
``_contrib_div_sqrt_dim``.

Projections are interleaved per head: ``queries_keys_values`` (T, N, 3E) is (T, N, heads,
3, E / heads) with queries, keys and values of one head side by side, ``keys_values`` (T, N,
2E) likewise with keys and values, ``queries`` (T, N, E) is (T, N, heads, E / heads).
Attention maps are (N * heads, T_query, T_key), batch n and head h at n * heads + h.

- ``selfatt_qk(qkv)`` = Q K^T / sqrt(E / heads); ``selfatt_valatt(qkv, att)`` = att V,
  back in (T, N, E);
- ``encdec_qk(queries, keys_values)`` and ``encdec_valatt(keys_values, att)`` likewise with
  the keys and values of another sequence;
- ``div_sqrt_dim(x)`` = x / sqrt(x.shape[-1]) (its gradient is the same op on the output
  gradient, as MXNet builds it).

Each matmul's backward operator (``_backward_interleaved_matmul_*``) reads the output
gradient and the forward inputs and writes their gradients (zero where an input part is not
used: the values of ``selfatt_qk``, the queries and keys of ``selfatt_valatt``).

On purpose unlike MXNet 1.9.1: a ``heads`` that does not divide the projection size is an
error here (MXNet accepts it and reads past the heads).
"""
from __future__ import annotations

from .common import InferError, Int, OpDef, assign, fmt, register_op, same_shape, same_type
from .tensor_grad import backward_op, forward_params

__all__ = ["head_dim"]


def head_dim(p, width: int, parts: int, what: str) -> int:
    """The size of one head's part, for a projection of ``width`` = parts * E."""
    if width < 0:
        return -1
    if width % parts or (width // parts) % p.heads:
        raise InferError(f"{what} has {width} features: expected {parts} x heads={p.heads} "
                         f"x head size")
    return width // parts // p.heads


def _three_d(shape, what: str) -> tuple:
    if len(shape) != 3:
        raise InferError(f"{what} must be 3-D (sequence length, batch, projection), got "
                         f"{fmt(shape)}")
    return shape


def _selfatt_qk(p, ins, outs):
    if ins[0] is None:
        return
    seq, batch, width = _three_d(ins[0], "queries_keys_values")
    head_dim(p, width, 3, "queries_keys_values")
    assign(outs, 0, (batch * p.heads if batch >= 0 else -1, seq, seq), "out")


def _selfatt_valatt(p, ins, outs):
    qkv, att = ins
    if qkv is None:
        return
    seq, batch, width = _three_d(qkv, "queries_keys_values")
    hd = head_dim(p, width, 3, "queries_keys_values")
    assign(ins, 1, (batch * p.heads if batch >= 0 else -1, seq, seq))
    assign(outs, 0, (seq, batch, hd * p.heads if hd >= 0 else -1), "out")


def _encdec_qk(p, ins, outs):
    q, kv = ins
    if q is None or kv is None:
        return
    q_seq, batch, width = _three_d(q, "queries")
    kv_seq, kv_batch, kv_width = _three_d(kv, "keys_values")
    hd = head_dim(p, width, 1, "queries")
    if min(hd, kv_width) >= 0 and kv_width != 2 * width:
        raise InferError(f"keys_values has {kv_width} features, expected 2 x {width} (twice "
                         f"the queries')")
    if min(batch, kv_batch) >= 0 and batch != kv_batch:
        raise InferError(f"queries {fmt(q)} and keys_values {fmt(kv)} disagree on the batch")
    assign(outs, 0, (batch * p.heads if batch >= 0 else -1, q_seq, kv_seq), "out")


def _encdec_valatt(p, ins, outs):
    kv, att = ins
    if kv is None or att is None:
        return
    kv_seq, batch, width = _three_d(kv, "keys_values")
    hd = head_dim(p, width, 2, "keys_values")
    if len(att) != 3:
        raise InferError(f"attention must be 3-D (batch * heads, query length, key length), "
                         f"got {fmt(att)}")
    want = (batch * p.heads if batch >= 0 else -1, att[1], kv_seq)
    try:
        assign(ins, 1, want)
    except InferError:
        raise InferError(f"attention has shape {fmt(att)}, expected {fmt(want)} (batch * "
                         f"heads, query length, key length)") from None
    assign(outs, 0, (att[1], batch, hd * p.heads if hd >= 0 else -1), "out")


def _div_sqrt_dim_gradient(g, node, ograds):
    return [g.outputs(g.make("_contrib_div_sqrt_dim", f"{node.name}_backward", [ograds[0]],
                             control_deps=[node]))[0]]


_MATMULS = {
    "selfatt_qk": (("queries_keys_values",), _selfatt_qk),
    "selfatt_valatt": (("queries_keys_values", "attention"), _selfatt_valatt),
    "encdec_qk": (("queries", "keys_values"), _encdec_qk),
    "encdec_valatt": (("keys_values", "attention"), _encdec_valatt),
}


def _matmul_gradient(g, node, ograds):
    name = node.op.name.replace("_contrib_", "_backward_")
    return g.outputs(g.backward_node(node, name, [ograds[0], *node.inputs]))


def _declare() -> None:
    for short, (inputs, rule) in _MATMULS.items():
        name = f"_contrib_interleaved_matmul_{short}"
        register_op(OpDef(name, params={"heads": Int()}, inputs=inputs, infer_shape=rule,
                          infer_type=same_type, gradient=_matmul_gradient))
        backward_op(f"_backward_interleaved_matmul_{short}", inputs=("ograd",) + inputs,
                    outputs=len(inputs), params=forward_params(name))
    register_op(OpDef("_contrib_div_sqrt_dim", infer_shape=same_shape, infer_type=same_type,
                      gradient=_div_sqrt_dim_gradient, traits=("elementwise", "unary"),
                      inplace=((0, 0),)))


_declare()
