"""Tensor-manipulation converters: shape changes (from the inferred output shape), transpose,
Concat, SliceChannel, dot / batch_dot, reductions, slice_axis."""
from __future__ import annotations

from . import ConvertCall, converter


def _reshape_to_output(c: ConvertCall) -> None:
    """MXNet's special codes (0, -1, -2, -3, -4) resolved: the known output shape."""
    c.b.one("Reshape", [c.x, c.b.ints(c.out_shapes[0], c.hint("shape"))], c.out)


converter("Reshape", "Flatten", "expand_dims", "squeeze")(_reshape_to_output)


@converter("transpose")
def _transpose(c: ConvertCall) -> None:
    perm = list(c.p.axes) or list(reversed(range(len(c.in_shapes[0]))))
    c.b.one("Transpose", [c.x], c.out, perm=[a % len(perm) for a in perm])


@converter("Concat")
def _concat(c: ConvertCall) -> None:
    c.b.one("Concat", list(c.inputs), c.out, axis=c.p.dim)


@converter("SliceChannel")
def _slice_channel(c: ConvertCall) -> None:
    p, shape = c.p, c.in_shapes[0]
    axis = p.axis % len(shape)
    n = p.num_outputs
    sizes = c.b.ints([shape[axis] // n] * n, c.hint("split"))
    if not p.squeeze_axis:
        c.b.add("Split", [c.x, sizes], list(c.outputs), axis=axis)
        return
    parts = c.b.add("Split", [c.x, sizes], [c.b.fresh(c.hint("part")) for _ in range(n)],
                    axis=axis)
    axes = c.b.ints([axis], c.hint("axis"))
    for part, out in zip(parts, c.outputs):
        c.b.one("Squeeze", [part, axes], out)


def _transposed(c: ConvertCall, name: str, flag: bool, perm: list[int]) -> str:
    return c.b.one("Transpose", [name], hint=c.hint("T"), perm=perm) if flag else name


def _dot_supports(node, shapes) -> "bool | str":
    if any(s is None or len(s) != 2 for s in shapes[:2]):
        return "dot is converted for 2-D operands only"
    return True


@converter("dot", supports=_dot_supports)
def _dot(c: ConvertCall) -> None:
    a = _transposed(c, c.inputs[0], c.p.transpose_a, [1, 0])
    b = _transposed(c, c.inputs[1], c.p.transpose_b, [1, 0])
    c.b.one("MatMul", [a, b], c.out)


@converter("batch_dot")
def _batch_dot(c: ConvertCall) -> None:
    a = _transposed(c, c.inputs[0], c.p.transpose_a, [0, 2, 1])
    b = _transposed(c, c.inputs[1], c.p.transpose_b, [0, 2, 1])
    c.b.one("MatMul", [a, b], c.out)


_REDUCE = {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin",
           "prod": "ReduceProd"}


def _reduce_axes(p, ndim: int) -> list[int]:
    if p.axis is None or p.axis == ():
        axes = set(range(ndim)) if not p.exclude else set()
    else:
        given = p.axis if isinstance(p.axis, (tuple, list)) else (p.axis,)
        axes = {a % ndim for a in given}
        if p.exclude:
            axes = set(range(ndim)) - axes
    return sorted(axes)


def _reduction(onnx_op: str):
    def convert(c: ConvertCall) -> None:
        """Reduce keeping dims, then reshape to MXNet's output shape ((1,) when full)."""
        axes = _reduce_axes(c.p, len(c.in_shapes[0]))
        if not axes:
            c.b.one("Identity", [c.x], c.out)
            return
        if onnx_op == "ReduceSum":
            red = c.b.one(onnx_op, [c.x, c.b.ints(axes, c.hint("axes"))], hint=c.hint("red"),
                          keepdims=1)
        else:
            red = c.b.one(onnx_op, [c.x], hint=c.hint("red"), axes=axes, keepdims=1)
        c.b.one("Reshape", [red, c.b.ints(c.out_shapes[0], c.hint("shape"))], c.out)
    return convert


for _name, _op in _REDUCE.items():
    converter(_name)(_reduction(_op))


@converter("slice_axis")
def _slice_axis(c: ConvertCall) -> None:
    p, shape = c.p, c.in_shapes[0]
    axis = p.axis % len(shape)
    end = shape[axis] if p.end is None else p.end
    c.b.one("Slice", [c.x, c.b.ints([p.begin], c.hint("begin")), c.b.ints([end], c.hint("end")),
                      c.b.ints([axis], c.hint("axis"))], c.out)
