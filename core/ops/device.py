"""``_CrossDeviceCopy``: the copy node context assignment inserts where a value changes
device (host <-> GPU, or between two contexts)."""
from __future__ import annotations

from .common import OpDef, register_op, same_shape, same_type


def _copy_gradient(g, node, ograds):
    return [ograds[0]]


register_op(OpDef("_CrossDeviceCopy", infer_shape=same_shape, infer_type=same_type,
                  gradient=_copy_gradient, traits=("copy",), named_inputs=False))
