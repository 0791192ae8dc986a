"""Shape rules, error paths and MXNet reference outputs of the tensor, slicing, matrix,
reduce and indexing operator families. Expected shapes were read off MXNet 1.9.1; the
reference arrays in tests/data/tensor come from tests/data/tensor/generate.py."""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import graphexec as gx

S = gx.sym
DATA = pathlib.Path(__file__).parent / "data" / "tensor"
REFERENCE = json.loads((DATA / "reference.json").read_text())
x, y, z = S.var("x"), S.var("y"), S.var("z")


def out_shapes(sym, **shapes):
    return sym.infer_shape(**shapes)[1]


def shape_error(sym, **shapes) -> str:
    with pytest.raises(gx.ShapeInferenceError) as info:
        sym.infer_shape(**shapes)
    return str(info.value)


# -- MXNet reference outputs ----------------------------------------------------------------
@pytest.fixture(scope="module")
def reference_arrays():
    with np.load(DATA / "reference.npz") as npz:
        return dict(npz)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_matches_mxnet_reference(name, reference_arrays):
    meta = REFERENCE[name]
    sym = gx.sym.load_json(meta["symbol"])
    args = {f"in{i}": reference_arrays[f"{name}:in{i}"] for i in range(meta["inputs"])}
    outs = sym.bind(gx.cpu(), args).forward()
    assert len(outs) == meta["outputs"]
    for i, got in enumerate(outs):
        want = reference_arrays[f"{name}:out{i}"]
        assert got.shape == want.shape and got.dtype == want.dtype, name
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=name)


# -- Reshape --------------------------------------------------------------------------------
@pytest.mark.parametrize("in_shape,attrs,expected", [
    ((2, 6, 4), {"shape": (-1, 0)}, (8, 6)),
    ((2, 6, 4), {"shape": (-1, 0), "reverse": True}, (12, 4)),
    ((10, 5, 4), {"shape": (-1, 0), "reverse": True}, (50, 4)),
    ((2, 3, 4), {"shape": (4, 0, 2)}, (4, 3, 2)),
    ((2, 3, 4), {"shape": (2, 0, 0)}, (2, 3, 4)),
    ((2, 3, 4), {"shape": (6, 1, -1)}, (6, 1, 4)),
    ((2, 3, 4), {"shape": (3, -1, 8)}, (3, 1, 8)),
    ((2, 3, 4), {"shape": (-1,)}, (24,)),
    ((2, 3, 4), {"shape": (-2,)}, (2, 3, 4)),
    ((2, 3, 4), {"shape": (2, -2)}, (2, 3, 4)),
    ((2, 3, 4), {"shape": (-2, 1, 1)}, (2, 3, 4, 1, 1)),
    ((2, 3, 4, 5), {"shape": (-3, -3)}, (6, 20)),
    ((2, 3, 4), {"shape": (0, -3)}, (2, 12)),
    ((2, 3, 4, 5), {"shape": (-3, -2)}, (6, 4, 5)),
    ((2, 3, 4), {"shape": (-4, 1, 2, -2)}, (1, 2, 3, 4)),
    ((2, 3, 4), {"shape": (2, -4, -1, 3, -2)}, (2, 1, 3, 4)),
    ((2, 3, 4), {"shape": (-4, -1, 1, -2)}, (2, 1, 3, 4)),
    ((2, 3, 4), {"shape": (-1, -2)}, (2, 3, 4)),
    ((4, 3, 2), {"shape": (-2, -3), "reverse": True}, (4, 6)),
    ((2, 3, 4), {"target_shape": (0, 6)}, (4, 6)),
    ((2, 3, 4), {"target_shape": (6, 0)}, (6, 4)),
    ((2, 3, 4), {"target_shape": (3, 0), "keep_highest": True}, (2, 12)),
])
def test_reshape_codes(in_shape, attrs, expected):
    assert out_shapes(S.Reshape(x, **attrs), x=in_shape) == [expected]


def test_reshape_partial_shapes_stay_unknown():
    # MXNet: (0,6,4) with (-1,0) -> (0,6); (2,0,4) with (0,-3) -> (2,0)
    assert S.Reshape(x, shape=(-1, 0)).infer_shape_partial(x=(0, 6, 4))[1] == [(0, 6)]
    assert S.Reshape(x, shape=(0, -3)).infer_shape_partial(x=(2, 0, 4))[1] == [(2, 0)]


@pytest.mark.parametrize("in_shape,attrs,words", [
    ((2, 3), {"shape": (4, 2)}, "6 elements"),           # MXNet silently accepts this
    ((2, 3), {"shape": (4, -1)}, "cannot infer"),        # MXNet gives (4, 1)
    ((2, 3, 4, 5), {"shape": (-3, 4)}, "120 elements"),  # MXNet gives (6, 4)
    ((2, 3), {"shape": (-1, -1)}, "more than one -1"),
    ((2, 3), {"shape": (0, 0, 0)}, "only 2"),
    ((2, 3, 4), {"shape": (-3, -3)}, "only 3"),
    ((2, 3, 4), {"shape": (-4, 2, 3, -2)}, "-4 splits input dimension 2"),
    ((2, 3, 4), {"shape": (-4, -1, -1, 4)}, "one of which may be -1"),
    ((2, 3, 4), {"shape": (0, 0, -4, 2, 2), "reverse": True}, "-4"),
    ((2, 3, 4), {}, "give the shape attribute"),
])
def test_reshape_errors(in_shape, attrs, words):
    msg = shape_error(S.Reshape(x, name="r", **attrs), x=in_shape)
    assert "Error in operator r: Reshape:" in msg and words in msg


# -- other shape rules ----------------------------------------------------------------------
@pytest.mark.parametrize("build,shapes,expected", [
    (lambda: S.Flatten(x), {"x": (5,)}, [(5, 1)]),
    (lambda: S.flatten(x), {"x": (2, 3, 4)}, [(2, 12)]),
    (lambda: S.transpose(x), {"x": (2, 3, 4)}, [(4, 3, 2)]),
    (lambda: S.SwapAxis(x, dim1=-1, dim2=0), {"x": (2, 3, 4)}, [(4, 3, 2)]),
    (lambda: S.expand_dims(x, axis=-3), {"x": (2, 3)}, [(1, 2, 3)]),
    (lambda: S.squeeze(x), {"x": (1, 3, 1, 4)}, [(3, 4)]),
    (lambda: S.squeeze(x), {"x": (1, 1)}, [(1,)]),
    (lambda: S.squeeze(x, axis=(0, -2)), {"x": (1, 3, 1, 4)}, [(3, 4)]),
    (lambda: S.tile(x, reps=(2, 1, 1, 2)), {"x": (2, 3, 4)}, [(2, 2, 3, 8)]),
    (lambda: S.repeat(x, repeats=2), {"x": (2, 3, 4)}, [(48,)]),
    (lambda: S.broadcast_to(x, shape=(0, 3, 4)), {"x": (2, 1, 1)}, [(2, 3, 4)]),
    (lambda: S.broadcast_like(x, y, lhs_axes=(0,), rhs_axes=(2,)),
     {"x": (1, 3, 1), "y": (2, 3, 4)}, [(4, 3, 1)]),
    (lambda: S.broadcast_axis(x, axis=(0, 2), size=(2, 4)), {"x": (1, 3, 1)}, [(2, 3, 4)]),
    (lambda: S.Concat(x, y, dim=-1), {"x": (2, 3), "y": (2, 4)}, [(2, 7)]),
    (lambda: S.stack(x, y, axis=-1), {"x": (2, 3, 4), "y": (2, 3, 4)}, [(2, 3, 4, 2)]),
    (lambda: S.split(x, num_outputs=3, axis=0, squeeze_axis=True), {"x": (3, 4)},
     [(4,), (4,), (4,)]),
    (lambda: S.slice(x, begin=(0, None, None), end=(None, None, None), step=(1, 2, -2)),
     {"x": (2, 3, 4)}, [(2, 2, 2)]),
    (lambda: S.slice(x, begin=(0, 5), end=(2, 1)), {"x": (2, 3, 4)}, [(2, 0, 4)]),
    (lambda: S.slice_axis(x, axis=1, begin=-2), {"x": (2, 3, 4)}, [(2, 2, 4)]),
    (lambda: S.slice_like(x, y, axes=(-1,)), {"x": (4, 5, 6), "y": (2, 3, 4)}, [(4, 5, 4)]),
    (lambda: S.Pad(x, mode="reflect", pad_width=(0, 0, 0, 0, 1, 1, 1, 1, 1, 1)),
     {"x": (2, 3, 4, 5, 6)}, [(2, 3, 6, 7, 8)]),
    (lambda: S.UpSampling(x, y, scale=2, sample_type="nearest"),
     {"x": (2, 3, 4, 4), "y": (2, 2, 2, 2)}, [(2, 5, 8, 8)]),
    (lambda: S.dot(x, y), {"x": (4,), "y": (4,)}, [(1,)]),
    (lambda: S.dot(x, y, transpose_a=True), {"x": (2, 3, 4), "y": (2, 5)}, [(3, 4, 5)]),
    (lambda: S.dot(x, y, transpose_a=True, transpose_b=True), {"x": (2, 3, 4), "y": (4, 2)},
     [(3, 4, 4)]),
    (lambda: S.batch_dot(x, y), {"x": (6, 2, 3, 4), "y": (6, 2, 4, 5)}, [(6, 2, 3, 5)]),
    (lambda: S.sum(x), {"x": (2, 3, 4)}, [(1,)]),
    (lambda: S.sum(x, axis=()), {"x": (2, 3, 4)}, [(1,)]),
    (lambda: S.sum(x, axis=(0, 1, 2), exclude=True), {"x": (2, 3, 4)}, [(2, 3, 4)]),
    (lambda: S.mean(x, axis=(0, -1), exclude=True, keepdims=True), {"x": (2, 3, 4)},
     [(2, 1, 4)]),
    (lambda: S.norm(x, axis=1, keepdims=True), {"x": (2, 3, 4)}, [(2, 1, 4)]),
    (lambda: S.argmax(x), {"x": (2, 3, 4)}, [(1,)]),
    (lambda: S.argmin(x, keepdims=True), {"x": (2, 3, 4)}, [(1, 1, 1)]),
    (lambda: S.argmax_channel(x), {"x": (2, 3, 4)}, [(2, 4)]),
    (lambda: S.one_hot(x, depth=4), {"x": (2, 3)}, [(2, 3, 4)]),
    (lambda: S.take(x, y, axis=-1), {"x": (5, 3), "y": (2, 4)}, [(5, 2, 4)]),
    (lambda: S.pick(x, y, keepdims=True), {"x": (2, 3), "y": (2,)}, [(2, 1)]),
    (lambda: S.pick(x, y), {"x": (2, 3), "y": (2, 1)}, [(2,)]),
    (lambda: S.gather_nd(x, y), {"x": (3, 4, 5), "y": (2, 6)}, [(6, 5)]),
])
def test_output_shapes(build, shapes, expected):
    assert out_shapes(build(), **shapes) == expected


def test_split_names_its_outputs():
    sym = S.split(x, num_outputs=2, name="sp")
    assert sym.list_outputs() == ["sp_output0", "sp_output1"]
    assert S.SliceChannel(x, num_outputs=1, name="one").list_outputs() == ["one_output0"]


def test_embedding_infers_and_types_its_weight():
    emb = S.Embedding(x, input_dim=10, output_dim=4, name="emb")
    assert emb.list_arguments() == ["x", "emb_weight"]
    assert emb.infer_shape(x=(2, 3)) == ([(2, 3), (10, 4)], [(2, 3, 4)], [])
    assert emb.infer_type(x="int32")[:2] == ([np.int32, np.float32], [np.float32])
    assert emb.infer_type(x="float32", emb_weight="float16")[1] == [np.float16]
    wide = S.Embedding(x, input_dim=10, output_dim=4, dtype="float64", name="e64")
    assert wide.infer_type(x="int32")[1] == [np.float64]
    msg = shape_error(emb, x=(2, 3), emb_weight=(10, 5))
    assert "emb_weight" in msg or "weight" in msg


def test_partial_and_backward_inference():
    args, outs, _ = S.Concat(x, y).infer_shape_partial(x=(2, 3))
    assert args == [(2, 3), (2, 0)] and outs == [(2, 0)]
    # the output fixes the one unknown concat size (MXNet cannot do this one)
    assert (S.Concat(x, y) + z).infer_shape(x=(2, 3), z=(2, 7))[0] == [(2, 3), (2, 4), (2, 7)]
    assert (S.split(x, num_outputs=2)[0] * z).infer_shape(z=(3, 2))[0] == [(3, 4), (3, 2)]
    assert (S.transpose(x, axes=(1, 2, 0)) + z).infer_shape(z=(3, 4, 2))[0][0] == (2, 3, 4)
    assert (S.stack(x, y, axis=1) + z).infer_shape(z=(2, 2, 3))[0][:2] == [(2, 3), (2, 3)]
    assert S.pick(x, y).infer_shape_partial(x=(2, 3))[0] == [(2, 3), (2,)]


@pytest.mark.parametrize("sym,dtypes,expected", [
    (S.argmax(x, axis=1), {"x": "float64"}, np.float64),
    (S.argmax(x), {"x": "int32"}, np.int32),
    (S.one_hot(x, depth=3), {"x": "float64"}, np.float32),
    (S.one_hot(x, depth=3, dtype="int32"), {"x": "float32"}, np.int32),
    (S.norm(x, out_dtype="float64"), {"x": "float32"}, np.float64),
    (S.take(x, y), {"x": "float64", "y": "int32"}, np.float64),
    (S.broadcast_like(x, y), {"x": "float64", "y": "int32"}, np.float64),
    (S.sum(x), {"x": "int32"}, np.int32),
])
def test_output_dtypes(sym, dtypes, expected):
    assert sym.infer_type(**dtypes)[1] == [expected]


def test_attribute_strings_survive_json():
    sym = S.slice(x, begin=(0, None), end=(None, 2), step=(1, -1), name="s")
    assert sym.list_attr() == {"begin": "(0, None)", "end": "(None, 2)", "step": "(1, -1)"}
    again = gx.sym.load_json(S.Reshape(x, shape=(0, -1), reverse=True, name="r").tojson())
    assert again.list_attr() == {"shape": "(0, -1)", "reverse": "True"}
    assert out_shapes(again, x=(2, 3, 4)) == [(3, 8)]
    assert S.Concat(x, y, name="c").list_attr() == {"num_args": "2"}


# -- error paths ----------------------------------------------------------------------------
@pytest.mark.parametrize("build,shapes,words", [
    (lambda: S.Concat(x, y, name="op"), {"x": (2, 3), "y": (3, 4)},
     ["Concat", "[3,4]", "except dim 1", "expected [2,?]"]),
    (lambda: S.Concat(x, y, name="op"), {"x": (2, 3), "y": (2, 4, 1)}, ["arg1", "[2,4,1]"]),
    (lambda: S.dot(x, y, name="op"), {"x": (3, 4), "y": (5, 6)},
     ["dot shape error: [3,4] X [5,6]"]),
    (lambda: S.dot(x, y, transpose_a=True, name="op"), {"x": (4,), "y": (4,)},
     ["cannot transpose vectors"]),
    (lambda: S.batch_dot(x, y, name="op"), {"x": (2, 3, 4), "y": (3, 4, 5)},
     ["batch_dot shape error: [2,3,4] X [3,4,5]", "batch dimensions"]),
    (lambda: S.batch_dot(x, y, name="op"), {"x": (2, 3, 4), "y": (2, 5, 6)},
     ["[2,3,4] X [2,5,6]", "4 and 5"]),
    (lambda: S.batch_dot(x, y, name="op"), {"x": (2, 3, 4), "y": (4, 5)}, ["at least 3"]),
    (lambda: S.transpose(x, axes=(0, 0, 1), name="op"), {"x": (2, 3, 4)}, ["twice"]),
    (lambda: S.transpose(x, axes=(0, 1), name="op"), {"x": (2, 3, 4)}, ["3 dimensions"]),
    (lambda: S.SwapAxis(x, dim1=3, name="op"), {"x": (2, 3, 4)}, ["out of range"]),
    (lambda: S.expand_dims(x, axis=3, name="op"), {"x": (2, 3)}, ["[-3, 2]"]),
    (lambda: S.squeeze(x, axis=1, name="op"), {"x": (1, 3, 1, 4)}, ["axis 1", "size 3"]),
    (lambda: S.split(x, num_outputs=4, name="op"), {"x": (3, 6)}, ["4 equal parts"]),
    (lambda: S.split(x, num_outputs=2, squeeze_axis=True, name="op"), {"x": (3, 4)},
     ["squeeze_axis"]),
    (lambda: S.slice(x, begin=(0,), end=(2,), step=(0,), name="op"), {"x": (2, 3)},
     ["step[0] cannot be 0"]),
    (lambda: S.slice(x, begin=(0, 0, 0), end=(1, 1, 1), name="op"), {"x": (2, 3)},
     ["3 entries"]),
    (lambda: S.slice_axis(x, axis=1, begin=2, end=1, name="op"), {"x": (2, 3, 4)},
     ["begin=2, end=1"]),
    (lambda: S.slice_axis(x, axis=1, begin=0, end=5, name="op"), {"x": (2, 3, 4)},
     ["size 3"]),
    (lambda: S.slice_like(x, y, name="op"), {"x": (4, 5, 6), "y": (5, 3, 4)}, ["larger"]),
    (lambda: S.tile(x, reps=(-1,), name="op"), {"x": (2,)}, ["negative"]),
    (lambda: S.Pad(x, mode="constant", pad_width=(0, 0, 0, 0, 1, 1), name="op"),
     {"x": (2, 3, 4)}, ["4-D and 5-D"]),
    (lambda: S.Pad(x, mode="edge", pad_width=(0, 0, 1, 0, 1, 1, 1, 1), name="op"),
     {"x": (2, 3, 4, 5)}, ["first two axes"]),
    (lambda: S.Pad(x, mode="reflect", pad_width=(0, 0, 0, 0, 4, 4, 1, 1), name="op"),
     {"x": (2, 3, 4, 5)}, ["reflect"]),
    (lambda: S.UpSampling(x, scale=2, sample_type="bilinear", num_filter=2, name="op"),
     {"x": (1, 3, 4, 4)}, ["3 channels", "num_filter is 2"]),
    (lambda: S.UpSampling(x, y, scale=2, sample_type="nearest", name="op"),
     {"x": (2, 3, 4, 4), "y": (2, 2, 3, 3)}, ["3x3", "8x8"]),
    (lambda: S.UpSampling(x, y, scale=2, sample_type="nearest", multi_input_mode="sum",
                          name="op"), {"x": (2, 3, 4, 4), "y": (2, 2, 2, 2)}, ["channels"]),
    (lambda: S.broadcast_to(x, shape=(2, 3, 4), name="op"), {"x": (2, 2, 1)},
     ["[2,2,1]", "broadcast"]),
    (lambda: S.broadcast_axis(x, axis=1, size=4, name="op"), {"x": (1, 3, 1)}, ["size 1"]),
    (lambda: S.sum(x, axis=3, name="op"), {"x": (2, 3, 4)}, ["out of range"]),
    (lambda: S.sum(x, axis=(1, -2), name="op"), {"x": (2, 3, 4)}, ["twice"]),
    (lambda: S.norm(x, ord=3, name="op"), {"x": (2, 3)}, ["only ord=1 and ord=2"]),
    (lambda: S.argmax_channel(x, name="op"), {"x": (5,)}, ["channel axis"]),
    (lambda: S.pick(x, y, name="op"), {"x": (2, 3), "y": (3,)}, ["[3]", "[2]"]),
    (lambda: S.gather_nd(x, y, name="op"), {"x": (3, 4, 5), "y": (2,)}, ["2 dimensions"]),
    (lambda: S.gather_nd(x, y, name="op"), {"x": (3, 4, 5), "y": (4, 2)}, ["4 dimensions"]),
])
def test_shape_errors_name_node_and_shapes(build, shapes, words):
    msg = shape_error(build(), **shapes)
    assert "Error in operator op:" in msg
    for w in words:
        assert w in msg, (w, msg)


def test_pick_rejects_axis_none_from_json():
    pick = {"op": "pick", "name": "op", "attrs": {"axis": "None"}, "inputs": [[0, 0, 0], [1, 0, 0]]}
    doc = {"nodes": [{"op": "null", "name": "x", "inputs": []},
                     {"op": "null", "name": "y", "inputs": []}, pick],
           "arg_nodes": [0, 1], "node_row_ptr": [0, 1, 2, 3], "heads": [[2, 0, 0]],
           "attrs": {"mxnet_version": ["int", 10901]}}
    msg = shape_error(gx.sym.load_json(json.dumps(doc)), x=(2, 3), y=(2,))
    assert "Error in operator op: pick: axis=None is not supported" in msg


def test_index_out_of_bounds_raises_at_forward():
    data = np.arange(15, dtype="f4").reshape(5, 3)
    exe = S.take(x, y, mode="raise", name="t").bind(
        gx.cpu(), {"x": data, "y": np.array([0, 4.5], "f4")})
    with pytest.raises(gx.GraphexecError, match="node 't'.*out of bounds"):
        exe.forward()
    exe = S.gather_nd(x, y, name="g").bind(gx.cpu(), {"x": data, "y": np.array([[-6.0]], "f4")})
    with pytest.raises(gx.GraphexecError, match="out of bounds"):
        exe.forward()


def test_kernels_follow_rebound_inputs():
    """Views made at bind time must see new input values on the next forward."""
    exe = S.transpose(S.slice(x, begin=(None, 1), end=(None, None)), name="t").bind(
        gx.cpu(), {"x": np.zeros((2, 3), "f4")})
    exe.forward(x=np.arange(6, dtype="f4").reshape(2, 3))
    np.testing.assert_array_equal(exe.outputs[0], [[1, 4], [2, 5]])
