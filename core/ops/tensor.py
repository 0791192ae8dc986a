"""Shape manipulation: Flatten, Reshape (MXNet's special codes), transpose, SwapAxis,
expand_dims, squeeze, tile, repeat, reverse and the broadcast_to / broadcast_like /
broadcast_axis family. Joining, splitting and slicing live in ``slicing``; dot products in
``matrix``.

Shapes are tuples with -1 for an unknown dimension (see ``common``); every rule accepts
partially known inputs and leaves what it cannot decide unknown.
"""
from __future__ import annotations

from .common import (Bool, InferError, Int, OpDef, OptInt, OptShape, Shape, assign,
                     first_input_type, fmt, normalize_axis, prod, register_op, same_type)


def axes_of(axes, ndim: int, what: str = "axis") -> tuple[int, ...]:
    """Normalise a tuple of (possibly negative) axes; duplicates are an error."""
    out = tuple(normalize_axis(a, ndim, what) for a in axes)
    if len(set(out)) != len(out):
        raise InferError(f"{what} {tuple(axes)} names an axis twice")
    return out


# -- Flatten / Reshape ----------------------------------------------------------------------
def _flatten_shape(p, ins, outs):
    s = ins[0]
    if s is None:
        return
    if not s:
        raise InferError("needs an input of at least 1 dimension, got a scalar")
    assign(outs, 0, (s[0], prod(s[1:])), "out")


class _Codes:
    """Walks Reshape's ``shape`` codes over the input dims (MXNet's left-to-right rules)."""

    def __init__(self, spec: list, data: list, shown: tuple):
        self.spec, self.data, self.shown = spec, data, shown
        self.out: list[int] = []
        self.src = 0
        self.infer_at: int | None = None

    def take(self, n: int, code: int) -> list[int]:
        if self.src + n > len(self.data):
            raise InferError(f"code {code} in shape={self.shown} needs input dimension "
                             f"{self.src + n - 1}, but the input has only {len(self.data)}")
        dims = self.data[self.src:self.src + n]
        self.src += n
        return dims

    def run(self) -> list[int]:
        i, spec = 0, self.spec
        while i < len(spec):
            code = spec[i]
            if code > 0:
                self.out.append(code)
                self.src += 1
            elif code == 0:
                self.out.extend(self.take(1, 0))
            elif code == -1:
                if self.infer_at is not None:
                    raise InferError(f"shape={self.shown} has more than one -1; only "
                                     f"one dimension can be inferred")
                self.infer_at = len(self.out)
                self.out.append(-1)
                self.src += 1
            elif code == -2:
                self.out.extend(self.data[self.src:])
                self.src = len(self.data)
            elif code == -3:
                self.out.append(prod(self.take(2, -3)))
            elif code == -4:
                self.out.extend(self.split(i))
                i += 2
            else:
                raise InferError(f"invalid code {code} in shape={self.shown}; codes are "
                                 f"positive sizes, 0, -1, -2, -3 and -4")
            i += 1
        return self.out

    def split(self, i: int) -> list[int]:
        if i + 2 >= len(self.spec):
            raise InferError(f"code -4 in shape={self.shown} must be followed by the "
                             f"two sizes to split into")
        (d0,), d1, d2 = self.take(1, -4), self.spec[i + 1], self.spec[i + 2]
        if d1 == -1 and d2 == -1 or min(d1, d2) < -1 or 0 in (d1, d2):
            raise InferError(f"-4 in shape={self.shown} splits into {d1}, {d2}; give two "
                             f"positive sizes, one of which may be -1")
        if d0 >= 0 and -1 in (d1, d2):
            known = d1 if d2 == -1 else d2
            if d0 % known:
                raise InferError(f"-4 cannot split input dimension {d0} into parts of "
                                 f"{known} (shape={self.shown})")
            d1, d2 = (d0 // known, d2) if d1 == -1 else (d1, d0 // known)
        elif d0 >= 0 and d1 * d2 != d0:
            raise InferError(f"-4 splits input dimension {d0} into {d1} x {d2} = "
                             f"{d1 * d2} (shape={self.shown})")
        return [d1 if d1 > 0 else -1, d2 if d2 > 0 else -1]


def _fill_inferred(out: list, at: int | None, data, what: str) -> None:
    """Replace the -1 placeholder at ``at`` by the size that keeps the element count."""
    if at is None:
        return
    total, rest = prod(data), prod(out[:at] + out[at + 1:])
    if total < 0 or rest < 0:
        return
    if rest == 0 or total % rest:
        raise InferError(f"cannot infer the -1 in {what}: {total} elements of input "
                         f"{fmt(tuple(data))} do not divide into parts of {rest}")
    out[at] = total // rest


def reshape_target(p, dshape: tuple) -> tuple:
    """Output shape of Reshape for input ``dshape`` (which may hold unknown dims)."""
    if p.shape:
        spec, data = list(p.shape), list(dshape)
        if p.reverse:
            spec.reverse()
            data.reverse()
        walk = _Codes(spec, data, tuple(p.shape))
        out = walk.run()
        _fill_inferred(out, walk.infer_at, data, f"shape={tuple(p.shape)}")
        if p.reverse:
            out.reverse()
    elif p.target_shape:
        out = list(p.target_shape)
        if p.keep_highest:
            out[0] = dshape[0]
        zeros = [i for i, d in enumerate(out) if d == 0]
        if len(zeros) > 1:
            raise InferError(f"target_shape={tuple(p.target_shape)} has more than one "
                             f"0 (inferred dimension)")
        _fill_inferred(out, zeros[0] if zeros else None, dshape,
                       f"target_shape={tuple(p.target_shape)}")
    else:
        raise InferError("the target shape is missing: give the shape attribute, e.g. "
                         "shape=(0, -1)")
    total, got = prod(dshape), prod(out)
    if total >= 0 and got >= 0 and total != got:
        raise InferError(f"cannot reshape an input of shape {fmt(tuple(dshape))} "
                         f"({total} elements) into {fmt(tuple(out))} ({got} elements)")
    return tuple(out)


def _reshape_shape(p, ins, outs):
    s, o = ins[0], outs[0]
    # backward, as MXNet: an input with one unknown dimension takes it from a known output
    if s is not None and o is not None and min(o, default=0) >= 0 and \
            sum(d < 0 for d in s) == 1:
        rest = 1
        for d in s:
            rest *= d if d >= 0 else 1
        total = 1
        for d in o:
            total *= d
        if rest and total % rest == 0:
            assign(ins, 0, tuple(total // rest if d < 0 else d for d in s))
    if ins[0] is not None:
        assign(outs, 0, reshape_target(p, ins[0]), "out")


# -- axis permutations ----------------------------------------------------------------------
def transpose_axes(p, ndim: int) -> tuple[int, ...]:
    """The permutation transpose applies (empty ``axes`` reverses the dimensions)."""
    if not p.axes:
        return tuple(range(ndim - 1, -1, -1))
    if len(p.axes) != ndim:
        raise InferError(f"axes={tuple(p.axes)} has {len(p.axes)} entries for an "
                         f"input of {ndim} dimensions")
    return axes_of(p.axes, ndim, "transpose axes")


def _transpose_shape(p, ins, outs):
    s, o = ins[0], outs[0]
    ndim = len(s) if s is not None else (len(o) if o is not None else None)
    if ndim is None:
        return
    perm = transpose_axes(p, ndim)
    if s is not None:
        assign(outs, 0, tuple(s[a] for a in perm), "out")
    if outs[0] is not None:
        back = [0] * ndim
        for i, a in enumerate(perm):
            back[a] = outs[0][i]
        assign(ins, 0, tuple(back))


def swap_dims(p, ndim: int) -> tuple[int, int]:
    return (normalize_axis(p.dim1, ndim, "SwapAxis dim1"),
            normalize_axis(p.dim2, ndim, "SwapAxis dim2"))


def _swap_shape(p, ins, outs):
    for src, dst, side in ((ins, outs, "out"), (outs, ins, "in")):
        s = src[0]
        if s is not None:
            a, b = swap_dims(p, len(s))
            t = list(s)
            t[a], t[b] = t[b], t[a]
            assign(dst, 0, tuple(t), side)


def _expand_dims_shape(p, ins, outs):
    s = ins[0]
    if s is None:
        return
    n = len(s)
    if not -n - 1 <= p.axis <= n:
        raise InferError(f"axis must be in the range [{-n - 1}, {n}] for an input "
                         f"of shape {fmt(s)} ({p.axis} provided)")
    a = p.axis % (n + 1)
    assign(outs, 0, s[:a] + (1,) + s[a:], "out")


def _squeeze_shape(p, ins, outs):
    s = ins[0]
    if s is None:
        return
    if p.axis is None:
        if any(d < 0 for d in s):
            return
        drop = {i for i, d in enumerate(s) if d == 1}
    else:
        drop = set(axes_of(p.axis, len(s), "squeeze axis"))
        for a in sorted(drop):
            if s[a] not in (1, -1):
                raise InferError(f"axis {a} of input {fmt(s)} has size {s[a]}, only "
                                 f"axes of size 1 can be squeezed out")
    out = tuple(d for i, d in enumerate(s) if i not in drop)
    assign(outs, 0, out or (1,), "out")


# -- repetition -----------------------------------------------------------------------------
def tile_reps(p, ndim: int) -> tuple[tuple, int]:
    """(reps padded to the output rank, number of leading 1s to add to the input shape)."""
    reps = tuple(p.reps)
    if any(r < 0 for r in reps):
        raise InferError(f"reps={reps} must not be negative")
    n = max(ndim, len(reps))
    return (1,) * (n - len(reps)) + reps, n - ndim


def _tile_shape(p, ins, outs):
    s = ins[0]
    if s is None:
        return
    reps, lead = tile_reps(p, len(s))
    full = (1,) * lead + tuple(s)
    assign(outs, 0, tuple(d * r if d >= 0 else -1 for d, r in zip(full, reps)), "out")


def _repeat_shape(p, ins, outs):
    s = ins[0]
    if s is None:
        return
    if p.repeats < 0:
        raise InferError(f"repeats={p.repeats} must not be negative")
    if p.repeats == 0:  # MXNet 1.9.1: an empty 1-D array, whatever the axis
        assign(outs, 0, (0,), "out")
        return
    if p.axis is None:
        n = prod(s)
        assign(outs, 0, (n * p.repeats if n >= 0 else -1,), "out")
        return
    a = normalize_axis(p.axis, len(s), "repeat axis")
    d = s[a] * p.repeats if s[a] >= 0 else -1
    assign(outs, 0, s[:a] + (d,) + s[a + 1:], "out")


def _reverse_shape(p, ins, outs):
    s = ins[0] if ins[0] is not None else outs[0]
    if s is None:
        return
    axes_of(p.axis, len(s), "reverse axis")
    assign(outs, 0, s, "out")
    assign(ins, 0, outs[0])


# -- broadcasting ---------------------------------------------------------------------------
def _broadcast_dims(src: tuple, dst: list) -> tuple:
    for i, (a, b) in enumerate(zip(src, dst)):
        if b < 0:
            dst[i] = a if a != 1 else -1
        elif a >= 0 and a not in (1, b):
            raise InferError(f"an array of shape {fmt(src)} cannot be broadcast to "
                             f"{fmt(tuple(dst))} (dimension {i}: {a} is neither 1 nor {b})")
    return tuple(dst)


def _broadcast_to_shape(p, ins, outs):
    s = ins[0]
    if s is None:
        return
    target = tuple(p.shape)
    if len(s) != len(target):
        raise InferError(f"an array of shape {fmt(s)} cannot be broadcast to "
                         f"{target}: the number of dimensions differs")
    dst = [s[i] if d == 0 else d for i, d in enumerate(target)]
    assign(outs, 0, _broadcast_dims(s, dst), "out")


def _broadcast_like_shape(p, ins, outs):
    lhs, rhs = ins
    if lhs is None or rhs is None:
        return
    if p.lhs_axes is None or p.rhs_axes is None:
        if len(lhs) != len(rhs):
            raise InferError(f"an array of shape {fmt(lhs)} cannot be broadcast "
                             f"like {fmt(rhs)}: the number of dimensions differs")
        assign(outs, 0, _broadcast_dims(lhs, list(rhs)), "out")
        return
    if len(p.lhs_axes) != len(p.rhs_axes):
        raise InferError(f"lhs_axes={tuple(p.lhs_axes)} and rhs_axes="
                         f"{tuple(p.rhs_axes)} must have the same length")
    dst = list(lhs)
    for la, ra in zip(axes_of(p.lhs_axes, len(lhs), "lhs_axes"),
                      axes_of(p.rhs_axes, len(rhs), "rhs_axes")):
        if lhs[la] not in (1, -1, rhs[ra]):
            raise InferError(f"axis {la} of lhs {fmt(lhs)} has size {lhs[la]}, "
                             f"only size 1 can be broadcast (to {rhs[ra]})")
        dst[la] = rhs[ra]
    assign(outs, 0, tuple(dst), "out")


def _broadcast_axis_shape(p, ins, outs):
    s = ins[0]
    if s is None:
        return
    if len(p.axis) != len(p.size):
        raise InferError(f"axis={tuple(p.axis)} and size={tuple(p.size)} must "
                         f"have the same length")
    out = list(s)
    for a, n in zip(axes_of(p.axis, len(s), "broadcast_axis axis"), p.size):
        if s[a] not in (1, -1):
            raise InferError(f"axis {a} of input {fmt(s)} has size {s[a]}; "
                             f"only axes of size 1 can be broadcast")
        out[a] = n
    assign(outs, 0, tuple(out), "out")


def _op(name, shape_rule, aliases=(), params=None, inputs=("data",), named=True, **kw):
    register_op(OpDef(name, aliases=aliases, params=params or {}, inputs=inputs,
                      infer_shape=shape_rule, infer_type=kw.pop("infer_type", same_type),
                      named_inputs=named, **kw))


def _declare() -> None:
    view = ((0, 0),)   # same bytes, new shape: MXNet runs these in place
    _op("Flatten", _flatten_shape, aliases=("flatten",), named=False, inplace=view)
    _op("Reshape", _reshape_shape, aliases=("reshape",), named=False, inplace=view,
        params={"shape": Shape(()), "reverse": Bool(False), "target_shape": Shape(()),
                "keep_highest": Bool(False)})
    _op("expand_dims", _expand_dims_shape, params={"axis": Int()}, named=False, inplace=view)
    _op("squeeze", _squeeze_shape, params={"axis": OptShape(None)}, inplace=view)
    _op("transpose", _transpose_shape, params={"axes": Shape(())}, named=False)
    _op("SwapAxis", _swap_shape, aliases=("swapaxes",),
        params={"dim1": Int(0), "dim2": Int(0)})
    _op("tile", _tile_shape, params={"reps": Shape()})
    _op("repeat", _repeat_shape, params={"repeats": Int(), "axis": OptInt(None)})
    _op("reverse", _reverse_shape, aliases=("flip",), params={"axis": Shape()})
    _op("broadcast_to", _broadcast_to_shape, params={"shape": Shape(())}, named=False)
    _op("broadcast_axis", _broadcast_axis_shape, aliases=("broadcast_axes",), named=False,
        params={"axis": Shape(()), "size": Shape(())})
    _op("broadcast_like", _broadcast_like_shape, inputs=("lhs", "rhs"),
        params={"lhs_axes": OptShape(None), "rhs_axes": OptShape(None)},
        infer_type=first_input_type)


_declare()

__all__ = ["prod", "axes_of", "reshape_target", "transpose_axes", "swap_dims", "tile_reps"]
