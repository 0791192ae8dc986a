"""ONNX loss importers: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, built from
``pick`` (the target class of each sample), ``take`` (class weights) and sums (see
:mod:`.importer`)."""
from __future__ import annotations

from ..importing import importer, node_attrs, node_error, op


def _nll(ctx, node, log_prob, target: str, weight: str | None, dtype: str):
    """The NLL loss of ``log_prob`` (N, C, ...) for class indices ``target`` (N, ...), with
    ONNX's ignore_index and reduction."""
    attrs = node_attrs(node)
    reduction = attrs.get("reduction", b"mean").decode()
    if reduction not in ("none", "sum", "mean"):
        raise node_error(node, f"reduction {reduction!r} is not one of none, sum, mean")
    t = ctx.sym(target)
    loss = op(ctx, node, "negative", [op(ctx, node, "pick", [log_prob, t], axis=1, mode="clip",
                                         suffix="picked")], suffix="neg")
    w = None
    if weight:
        w = op(ctx, node, "take", [ctx.sym(weight), t], axis=0, mode="clip", suffix="w")
        loss = op(ctx, node, "elemwise_mul", [loss, w], suffix="weighted")
    if "ignore_index" in attrs:
        keep = op(ctx, node, "Cast", [op(ctx, node, "_not_equal_scalar", [t], scalar=float(
            attrs["ignore_index"]), suffix="keep_raw")], dtype=dtype, suffix="keep")
        loss = op(ctx, node, "where", [keep, loss, op(ctx, node, "zeros_like", [loss],
                                                      suffix="zero")], suffix="kept")
        w = keep if w is None else op(ctx, node, "elemwise_mul", [w, keep], suffix="w_kept")
    if reduction == "none":
        return loss
    total = op(ctx, node, "sum", [loss], suffix="loss" if reduction == "sum" else "total")
    if reduction == "sum":
        return total
    if w is None:
        return op(ctx, node, "mean", [loss], suffix="loss")
    return op(ctx, node, "elemwise_div", [total, op(ctx, node, "sum", [w], suffix="w_sum")],
              suffix="loss")


def _check_ranks(ctx, node) -> None:
    """The ranks ONNX's function bodies need (ONNX Runtime expands them and refuses other
    ranks): scores (N, C, ...), a target of one rank less, a (C,) weight."""
    ranks = [ctx.rank(n) if n else None for n in list(node.input) + [""] * 3][:3]
    if ranks[0] is not None and ranks[0] < 2:
        raise node_error(node, f"scores {node.input[0]!r} of rank {ranks[0]}: (N, C, ...) "
                          "is needed")
    if None not in ranks[:2] and ranks[1] != ranks[0] - 1:
        raise node_error(node, f"target {node.input[1]!r} has rank {ranks[1]}; one less than "
                          f"the scores' rank {ranks[0]} is needed")
    scores, target = (ctx.shape(n) for n in node.input[:2])
    if scores is not None and target is not None and len(target) == len(scores) - 1 and any(
            isinstance(a, int) and isinstance(b, int) and a != b
            for a, b in zip(target, scores[:1] + tuple(scores[2:]))):
        raise node_error(node, f"target shape {tuple(target)} does not match the scores' "
                          f"(N, d1, ...) in {tuple(scores)}")
    if ranks[2] is not None and ranks[2] != 1:
        raise node_error(node, f"weight {node.input[2]!r} has rank {ranks[2]}; a (C,) vector "
                          "is needed")


def _float_name(ctx, name: str) -> str:
    dtype = ctx.dtype(name)
    return "float32" if dtype is None else dtype.name


@importer("NegativeLogLikelihoodLoss")
def _nll_loss(ctx, node):
    _check_ranks(ctx, node)
    weight = node.input[2] if len(node.input) > 2 and node.input[2] else None
    return [_nll(ctx, node, ctx.sym(node.input[0]), node.input[1], weight,
                 _float_name(ctx, node.input[0]))]


@importer("SoftmaxCrossEntropyLoss")
def _softmax_cross_entropy(ctx, node):
    """NLL of log_softmax over the class axis; the optional second output is that
    log-probability."""
    _check_ranks(ctx, node)
    weight = node.input[2] if len(node.input) > 2 and node.input[2] else None
    log_prob = op(ctx, node, "log_softmax", [ctx.sym(node.input[0])], axis=1,
                  suffix="log_prob")
    loss = _nll(ctx, node, log_prob, node.input[1], weight, _float_name(ctx, node.input[0]))
    return [loss, log_prob]
