"""Joining, splitting, slicing, padding and upsampling: Concat, stack, SliceChannel (split),
slice (crop), slice_axis, slice_like, Pad and UpSampling (nearest)."""
from __future__ import annotations

from .common import (Bool, Enum, Float, InferError, Int, OpDef, OptInt, Shape, assign,
                     first_input_type, fmt, merge, normalize_axis, register_op, same_type)
from .registry import ShapeConflict, get_op
from .resample import upsampling_deconv_attrs
from .tensor import axes_of
from .tensor_grad import backward_op, forward_params, one_backward


def _args(p):
    return [f"arg{i}" for i in range(p.num_args)]


def _ndim(*lists) -> int | None:
    for lst in lists:
        for s in lst:
            if s is not None:
                return len(s)
    return None


# -- Concat / stack -------------------------------------------------------------------------
def _concat_shape(p, ins, outs):
    ndim = _ndim(ins, outs)
    if ndim is None:
        return
    ax = normalize_axis(p.dim, ndim, "Concat dim")

    def at(shape, d):
        return shape[:ax] + (d,) + shape[ax + 1:]
    common = None if outs[0] is None else at(outs[0], -1)
    for i, s in enumerate(ins):
        if s is not None and len(s) != ndim:
            raise InferError(f"input arg{i} has shape {fmt(s)} but the other inputs have "
                             f"{ndim} dimensions")
        try:
            common = merge(common, None if s is None else at(s, -1))
        except ValueError:
            raise InferError(f"input arg{i} has shape {fmt(s)}, but the inputs must "
                             f"agree on every dimension except dim {ax}: expected "
                             f"{fmt(common)}") from None
    sizes = [s[ax] if s is not None else -1 for s in ins]
    for i, d in enumerate(sizes):
        assign(ins, i, at(common, d))
    assign(outs, 0, at(common, sum(sizes) if min(sizes) >= 0 else -1), "out")
    missing = [i for i, d in enumerate(sizes) if d < 0]
    total = outs[0][ax]
    if len(missing) == 1 and total >= 0:
        rest = total - sum(d for d in sizes if d >= 0)
        if rest < 0:
            raise InferError(f"the inputs already span {total - rest} along dim {ax}, more "
                             f"than the output's {total}")
        assign(ins, missing[0], at(common, rest))


def _stack_shape(p, ins, outs):
    s = None
    for i, v in enumerate(ins):
        try:
            s = merge(s, v)
        except ValueError:
            raise InferError(f"input arg{i} has shape {fmt(v)} but the inputs must all have "
                             f"one shape, {fmt(s)}") from None
    o = outs[0]
    if o is not None and len(o) > 0:
        ax = normalize_axis(p.axis, len(o), "stack axis")
        try:
            s = merge(s, o[:ax] + o[ax + 1:])
        except ValueError:
            pass  # the output assignment below reports the conflict
    if s is None:
        return
    ax = normalize_axis(p.axis, len(s) + 1, "stack axis")
    for i in range(len(ins)):
        assign(ins, i, s)
    assign(outs, 0, s[:ax] + (len(ins),) + s[ax:], "out")


# -- SliceChannel ---------------------------------------------------------------------------
def _split_outputs(p):
    return [f"output{i}" for i in range(p.num_outputs)]


def _split_shape(p, ins, outs):
    n = p.num_outputs
    # backward first: a known output tells the input's other dimensions (MXNet infers them)
    o = None
    for i, v in enumerate(outs):   # every part has one shape: the most specific known
        if v is None or o is None:
            o = v if o is None else o
            continue
        try:
            o = merge(o, v)
        except ValueError:
            raise ShapeConflict("out", i, v, o) from None
    if o is not None:
        ax = normalize_axis(p.axis, len(o) + p.squeeze_axis, "SliceChannel axis")
        whole = o[:ax] + (n,) + o[ax:] if p.squeeze_axis else \
            o[:ax] + (o[ax] * n if o[ax] >= 0 else -1,) + o[ax + 1:]
        assign(ins, 0, whole)
    s = ins[0]
    if s is None:
        return
    ax = normalize_axis(p.axis, len(s), "SliceChannel axis")
    d = s[ax]
    if p.squeeze_axis:
        if d >= 0 and d != n:
            raise InferError(f"with squeeze_axis=True the sliced axis {ax} of "
                             f"{fmt(s)} must have size num_outputs={n}")
        part = s[:ax] + s[ax + 1:]
    else:
        if d >= 0 and d % n:
            raise InferError(f"cannot split axis {ax} of {fmt(s)} into "
                             f"num_outputs={n} equal parts")
        part = s[:ax] + (d // n if d >= 0 else -1,) + s[ax + 1:]
    for i in range(n):
        assign(outs, i, part, "out")


# -- slice / slice_axis / slice_like ---------------------------------------------------------
def slice_bounds(p, shape: tuple) -> list[slice]:
    """Python slices for ``slice``'s begin/end/step over ``shape`` (dims beyond begin are kept)."""
    begin, end = tuple(p.begin), tuple(p.end)
    step = tuple(p.step) or (None,) * len(begin)
    if len(end) != len(begin) or len(step) != len(begin):
        raise InferError(f"begin={begin}, end={end} and step={tuple(p.step)} must have "
                         f"the same length")
    if len(begin) > len(shape):
        raise InferError(f"begin={begin} has {len(begin)} entries for an input of shape "
                         f"{fmt(shape)}")
    for i, st in enumerate(step):
        if st == 0:
            raise InferError(f"step[{i}] cannot be 0")
    return [slice(b, e, st) for b, e, st in zip(begin, end, step)]


def _slice_shape(p, ins, outs):
    s = ins[0]
    if s is None:
        return
    sl = slice_bounds(p, s)
    dims = [len(range(*k.indices(d))) if d >= 0 else -1 for k, d in zip(sl, s)]
    assign(outs, 0, tuple(dims) + s[len(sl):], "out")


def slice_axis_bounds(p, shape: tuple) -> tuple[int, int, int]:
    """(axis, begin, end) of slice_axis, normalised and checked against ``shape``."""
    ax = normalize_axis(p.axis, len(shape), "slice_axis axis")
    n = shape[ax]
    if n < 0:
        return ax, -1, -1
    b = p.begin + n if p.begin < 0 else p.begin
    e = n if p.end is None else (p.end + n if p.end < 0 else p.end)
    if not 0 <= b < e <= n:
        raise InferError(f"begin={p.begin}, end={p.end} select nothing valid from "
                         f"axis {ax} of size {n} (need 0 <= begin < end <= {n} after wrapping "
                         f"negative values)")
    return ax, b, e


def _slice_axis_shape(p, ins, outs):
    s = ins[0]
    if s is None:
        return
    ax, b, e = slice_axis_bounds(p, s)
    assign(outs, 0, s[:ax] + (e - b if b >= 0 else -1,) + s[ax + 1:], "out")


def slice_like_axes(p, data: tuple, like: tuple) -> tuple[int, ...]:
    if not p.axes:
        if len(data) != len(like):
            raise InferError(f"without axes the inputs need the same number of "
                             f"dimensions, got {fmt(data)} and {fmt(like)}")
        return tuple(range(len(data)))
    axes = axes_of(p.axes, len(data), "slice_like axes")
    for a in axes:
        if a >= len(like):
            raise InferError(f"axis {a} does not exist in shape_like {fmt(like)}")
    return axes


def _slice_like_shape(p, ins, outs):
    data, like = ins
    if data is None or like is None:
        return
    out = list(data)
    for a in slice_like_axes(p, data, like):
        if data[a] >= 0 and like[a] > data[a]:
            raise InferError(f"axis {a} of shape_like {fmt(like)} is larger than the "
                             f"data's {fmt(data)}")
        out[a] = like[a]
    assign(outs, 0, tuple(out), "out")


# -- Pad / UpSampling -----------------------------------------------------------------------
def _pad_shape(p, ins, outs):
    s = ins[0]
    if s is None:
        return
    pw = tuple(p.pad_width)
    if len(s) not in (4, 5):
        raise InferError(f"only 4-D and 5-D inputs are supported, got {fmt(s)}")
    if len(pw) != 2 * len(s):
        raise InferError(f"pad_width={pw} needs 2 entries per input dimension "
                         f"({2 * len(s)} for {fmt(s)})")
    if any(pw[:4]):
        raise InferError(f"padding of the first two axes must be zero, got pad_width={pw}")
    out = []
    for i, d in enumerate(s):
        before, after = pw[2 * i], pw[2 * i + 1]
        if p.mode == "reflect" and d >= 0 and max(before, after) >= d:
            raise InferError(f"reflect padding of {max(before, after)} on axis {i} needs a "
                             f"larger input than {d} there")
        out.append(d + before + after if d >= 0 else -1)
    assign(outs, 0, tuple(out), "out")


def _upsampling_inputs(p):
    return ["data", "weight"] if p.sample_type == "bilinear" else _args(p)


def _upsampling_shape(p, ins, outs):
    if p.sample_type == "bilinear":
        _bilinear_upsampling_shape(p, ins, outs)
        return
    if any(s is None for s in ins):
        return
    for i, s in enumerate(ins):
        if len(s) != 4:
            raise InferError(f"input arg{i} must be 4-D (batch, channel, y, x), got "
                             f"{fmt(s)}")
    n, _, h, w = ins[0]
    oh, ow = h * p.scale, w * p.scale
    for i, s in enumerate(ins[1:], 1):
        if min(h, w, s[2], s[3]) > 0 and (oh % s[2] or ow % s[3] or oh // s[2] != ow // s[3]):
            raise InferError(f"input arg{i} of size {s[2]}x{s[3]} cannot be scaled by one "
                             f"integer factor to the output size {oh}x{ow}")
    chans = [s[1] for s in ins]
    if p.multi_input_mode == "sum":
        if len({c for c in chans if c >= 0}) > 1:
            raise InferError(f"multi_input_mode='sum' needs inputs with one number "
                             f"of channels, got {chans}")
        c = max(chans)
    else:
        c = sum(chans) if min(chans) >= 0 else -1
    assign(outs, 0, (n, c, oh if h >= 0 else -1, ow if w >= 0 else -1), "out")


def _bilinear_upsampling_shape(p, ins, outs):
    """A grouped Deconvolution (core/ops/legacy.py): one filter per channel, num_filter of
    them; the output is the data scaled by ``scale``."""
    if p.num_filter < 1:
        raise InferError(f"sample_type='bilinear' needs num_filter (the data's channels) >= 1, "
                         f"got {p.num_filter}")
    attrs = upsampling_deconv_attrs(p)
    assign(ins, 1, (p.num_filter, 1, *attrs["kernel"]))
    data = ins[0]
    if data is None:
        return
    if len(data) != 4:
        raise InferError(f"data must be 4-D (batch, channel, y, x), got {fmt(data)}")
    n, c, h, w = data
    if c >= 0 and c != p.num_filter:
        raise InferError(f"sample_type='bilinear' upsamples each channel with its own filter: "
                         f"the data has {c} channels but num_filter is {p.num_filter}")
    assign(outs, 0, (n, p.num_filter, h * p.scale if h >= 0 else -1,
                     w * p.scale if w >= 0 else -1), "out")


def _upsampling_grad(g, node, ograds):
    """Nearest: from the output gradient alone; bilinear: the Deconvolution's backward,
    reading the data and the weight too (gradients of both)."""
    ins = [ograds[0]] + (list(node.inputs) if node.params.sample_type == "bilinear" else [])
    return g.outputs(g.backward_node(node, "_backward_UpSampling", ins))


def _declare() -> None:
    register_op(OpDef("Concat", aliases=("concat",), variadic="num_args", inputs=_args,
                      params={"num_args": Int(), "dim": Int(1)},
                      infer_shape=_concat_shape, infer_type=same_type))
    register_op(OpDef("stack", variadic="num_args", inputs=_args,
                      params={"axis": Int(0), "num_args": Int()},
                      infer_shape=_stack_shape, infer_type=same_type))
    register_op(OpDef("SliceChannel", aliases=("split",), outputs=_split_outputs,
                      params={"num_outputs": Int(), "axis": Int(1), "squeeze_axis": Bool(False)},
                      infer_shape=_split_shape, infer_type=same_type))
    register_op(OpDef("slice", aliases=("crop",), named_inputs=False,
                      params={"begin": Shape(), "end": Shape(), "step": Shape(())},
                      infer_shape=_slice_shape, infer_type=same_type))
    # MXNet marks end as required; None (the default here) means "to the end of the axis"
    register_op(OpDef("slice_axis", named_inputs=False,
                      params={"axis": Int(), "begin": Int(), "end": OptInt(None)},
                      infer_shape=_slice_axis_shape, infer_type=same_type))
    register_op(OpDef("slice_like", inputs=("data", "shape_like"), params={"axes": Shape(())},
                      infer_shape=_slice_like_shape, infer_type=first_input_type))
    register_op(OpDef("Pad", aliases=("pad",), infer_shape=_pad_shape, infer_type=same_type,
                      params={"mode": Enum(("constant", "edge", "reflect")),
                              "pad_width": Shape(), "constant_value": Float(0.0)}))
    register_op(OpDef("UpSampling", variadic="num_args", inputs=_upsampling_inputs,
                      infer_shape=_upsampling_shape, infer_type=same_type,
                      params={"scale": Int(), "num_filter": Int(0),
                              "sample_type": Enum(("bilinear", "nearest")),
                              "multi_input_mode": Enum(("concat", "sum"), "concat"),
                              "num_args": Int(), "workspace": Int(512)}))


def _concat_grad(g, node, ograds):
    """MXNet's _backward_Concat also reads the forward inputs (it splits by their sizes)."""
    return g.outputs(g.backward_node(node, "_backward_Concat", [ograds[0], *node.inputs]))


def _per_arg(p):
    return [f"output{i}" for i in range(p.num_args)]


def _upsampling_grads(p):
    return ["output0", "output1"] if p.sample_type == "bilinear" else _per_arg(p)


def _declare_gradients() -> None:
    backward_op("_backward_Concat", inputs=lambda p: ["ograd", *_args(p)], outputs=_per_arg,
                params=forward_params("Concat"))
    get_op("Concat").gradient = _concat_grad
    backward_op("_backward_SliceChannel", params=forward_params("SliceChannel"),
                inputs=lambda p: [f"ograd{i}" for i in range(p.num_outputs)])
    get_op("SliceChannel").gradient = one_backward("_backward_SliceChannel", every_ograd=True)
    backward_op("_backward_UpSampling", params=forward_params("UpSampling"),
                inputs=lambda p: ["ograd", "data", "weight"] if p.sample_type == "bilinear"
                else ["ograd"], outputs=_upsampling_grads)
    get_op("UpSampling").gradient = _upsampling_grad
    for name, outputs in (("stack", _per_arg), ("slice", 1),
                          ("slice_axis", 1), ("slice_like", 2), ("Pad", 1)):
        backward_op(f"_backward_{name}", outputs=outputs, params=forward_params(name))
        get_op(name).gradient = one_backward(f"_backward_{name}")


_declare()
_declare_gradients()

__all__ = ["slice_bounds", "slice_axis_bounds", "slice_like_axes"]
