"""Random one-node ONNX models for the import fuzz tests (tests/test_robust_onnx.py), drawn
from the operator schemas: an op graphexec imports, an opset (sometimes out of range), inputs
(graph inputs of random dtypes and shapes, or initializers, some lying about their size),
attributes of the schema with values from in-range to absurd (huge, negative, NaN, wrong
types), sometimes extra inputs, outputs or attributes. Half the models are "plausible"
(static rank-2..4 float inputs, small attribute values) to get past the first checks."""
from __future__ import annotations

import random

import numpy as np
import onnx
from onnx import AttributeProto as A
from onnx import TensorProto as T
from onnx import defs, helper, numpy_helper

DTYPES = [T.FLOAT, T.FLOAT, T.FLOAT, T.DOUBLE, T.FLOAT16, T.INT64, T.INT32, T.BOOL, T.UINT8,
          T.INT8]
EXTREMES = [0, 1, 2, 3, -1, -2, 5, 7, 2 ** 27, -2 ** 40, 2 ** 63 - 1]
STRINGS = {"mode": ["constant", "reflect", "edge", "nearest", "linear", "cubic", "DCR", "CRD",
                    "wrap"],
           "auto_pad": ["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "BAD"],
           "coordinate_transformation_mode": ["half_pixel", "asymmetric", "align_corners",
                                              "pytorch_half_pixel", "tf_crop_and_resize"],
           "nearest_mode": ["floor", "ceil", "round_prefer_floor"],
           "reduction": ["none", "sum", "mean", "max"], "approximate": ["none", "tanh"],
           "keep_aspect_ratio_policy": ["stretch", "not_larger", "not_smaller"]}


#: second nodes: ops that read a computed value as a shape, axes, indices or a tensor
CONSUMERS = ["Reshape", "Expand", "Tile", "ConstantOfShape", "Range", "Slice", "Gather",
             "Unsqueeze", "Squeeze", "Concat", "Add", "Cast", "Shape", "Size", "Resize", "Pad",
             "Transpose", "Flatten", "MatMul", "Where", "ReduceSum", "OneHot"]


class CaseMaker:
    """Draws one model from ``r`` (a ``random.Random``, e.g. hypothesis' ``st.randoms()``)."""

    def __init__(self, r: random.Random, op_types: list[str]):
        self.r = r
        self.op_types = op_types
        self.plausible = r.random() < 0.5

    def integer(self) -> int:
        r = self.r
        if self.plausible:
            return r.randint(-2, 4)
        return r.choice(EXTREMES) if r.random() < 0.3 else r.randint(-3, 6)

    def shape(self) -> list | None:
        r = self.r
        if self.plausible:
            return [r.randint(1, 4) for _ in range(r.choice([2, 3, 4, 4, 4]))]
        if r.random() < 0.05:
            return None
        dims = []
        for _ in range(r.choice([0, 1, 2, 3, 4, 4, 5])):
            q = r.random()
            dims.append("N" if q < 0.05 else 0 if q < 0.1 else 2 ** 31 if q < 0.12
                        else r.randint(1, 5))
        return dims

    def tensor(self, name: str, dtype: int, shape: list, lie: bool) -> onnx.TensorProto:
        r = self.r
        count = int(np.prod(shape)) if shape else 1
        npdt = np.dtype(helper.tensor_dtype_to_np_dtype(dtype))
        if npdt.kind in "iu":
            wide = npdt.itemsize == 8
            vals = np.array([self.integer() if wide else self.integer() % 100
                             for _ in range(count)]).astype(npdt)
        elif npdt.kind == "b":
            vals = np.array([r.random() < 0.5 for _ in range(count)])
        else:
            with np.errstate(over="ignore"):  # 1e30 is inf in float16, on purpose
                vals = np.array([r.choice([0.5, -1.0, 2.0, float("nan"), float("inf"), 1e30,
                                           3.0]) for _ in range(count)]).astype(npdt)
        t = numpy_helper.from_array(vals.reshape(shape), name)
        if lie and len(t.dims) and r.random() < 0.5:
            t.dims[0] = r.choice([2 ** 40, 0, 1000, 2 ** 62])
        elif lie:
            t.raw_data = t.raw_data[: len(t.raw_data) // 2]
        return t

    def attribute(self, name: str, kind: int) -> onnx.AttributeProto | None:
        r = self.r
        if r.random() < 0.05:  # the wrong type
            kind = r.choice([A.INT, A.FLOAT, A.STRING, A.INTS])
        if kind == A.INT:
            return helper.make_attribute(name, self.integer())
        if kind == A.INTS:
            return helper.make_attribute(name, [self.integer() for _ in range(r.randint(0, 6))],
                                         attr_type=A.INTS)
        if kind == A.FLOAT:
            return helper.make_attribute(name, r.choice([0.0, 1.0, -1.5, 1e-5, float("nan"),
                                                         float("inf"), 1e38, 2.0]))
        if kind == A.FLOATS:
            return helper.make_attribute(name, [r.choice([0.5, 2.0, -1.0, float("nan"), 1e9])
                                                for _ in range(r.randint(0, 5))],
                                         attr_type=A.FLOATS)
        if kind == A.STRING:
            return helper.make_attribute(name, r.choice(STRINGS.get(name, ["x", "", "\xff"])))
        if kind == A.TENSOR:
            return helper.make_attribute(name, self.tensor(name, r.choice(DTYPES),
                                                           [r.randint(0, 3)], r.random() < 0.2))
        return None

    def consumer(self, opset: int, values: list[str]) -> onnx.NodeProto:
        """A node reading ``o0`` (and other values) where a shape, axes or a tensor goes."""
        r = self.r
        op_type = r.choice(CONSUMERS)
        try:
            schema = defs.get_schema(op_type, max(opset, 1))
        except defs.SchemaError:
            schema = defs.get_schema(op_type)
        ins = [r.choice(values) for _ in range(max(schema.min_input, 1))]
        ins[r.randrange(len(ins))] = "o0"
        node = helper.make_node(op_type, ins, ["z0"])
        for name, attr in schema.attributes.items():
            if attr.required or r.random() < 0.3:
                made = self.attribute(name, attr.type)
                if made is not None:
                    node.attribute.append(made)
        return node

    def model(self) -> onnx.ModelProto:
        r = self.r
        op_type = r.choice(self.op_types)
        opset = r.choice([7, 9, 11, 13, 13, 17, 17, 18, 19, 21, 23, 28]) \
            if r.random() > 0.03 else r.choice([0, 10 ** 6, 29])
        try:
            schema = defs.get_schema(op_type, max(opset, 1))
        except defs.SchemaError:
            schema = defs.get_schema(op_type)
        count = r.randint(schema.min_input, min(schema.max_input, schema.min_input + 3))
        count += r.random() < 0.05
        inputs, inits, names = [], [], []
        for k in range(count):
            name = f"i{k}"
            names.append("" if r.random() < 0.05 else name)
            if r.random() < (0.3 if k == 0 else 0.6):
                dtype = T.INT64 if r.random() < 0.6 else r.choice(DTYPES)
                shape = [r.randint(0, 6)] if r.random() < 0.8 else [r.randint(0, 3), 2]
                inits.append(self.tensor(name, dtype, shape, r.random() < 0.1))
            else:
                odd = r.random() < (0.1 if self.plausible else 0.3)
                inputs.append(helper.make_tensor_value_info(
                    name, r.choice(DTYPES) if odd else T.FLOAT, self.shape()))
        node = helper.make_node(op_type, names, [])
        for name, attr in schema.attributes.items():
            if attr.required or r.random() < 0.5:
                made = self.attribute(name, attr.type)
                if made is not None:
                    node.attribute.append(made)
        if r.random() < 0.03:
            node.attribute.append(helper.make_attribute("bogus", 1))
        outs = max(schema.min_output, 1) + (schema.max_output > 1 and r.random() < 0.2)
        node.output.extend(f"o{k}" for k in range(outs))
        nodes = [node]
        if r.random() < 0.3:  # a consumer of the first output: values computed at import
            nodes.append(self.consumer(opset, [n for n in names if n] + ["o0"]))
        graph = helper.make_graph(nodes, "g", inputs,
                                  [helper.make_tensor_value_info(o, T.FLOAT, None)
                                   for o in nodes[-1].output], initializer=inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = r.choice([7, 8, 8, 9, 10]) if r.random() > 0.02 else r.choice([0, 99])
        return model
