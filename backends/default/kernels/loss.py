"""Native kernels of the loss heads. Forward only: SoftmaxOutput is a softmax, the
regression outputs the identity (a sigmoid for LogisticRegressionOutput), MakeLoss and
make_loss the identity. The label matters to the gradient only."""
from __future__ import annotations

from functools import partial

from .base import kernel, special
from .nn import softmax_fn


@kernel("SoftmaxOutput")
def softmax_output(call):
    """softmax over axis 1 of the data flattened to (batch, -1); over axis 1 of the data as
    it is with multi_output; over the last axis with preserve_shape (MXNet's three modes)."""
    p, x, out = call.params, call.inputs[0], call.outputs[0]
    if p.preserve_shape:
        return softmax_fn(call.xp, x, out, x.ndim - 1)
    if p.multi_output:
        return softmax_fn(call.xp, x, out, 1)
    return softmax_fn(call.xp, x, out, tuple(range(1, x.ndim)))


@kernel("LogisticRegressionOutput")
def logistic_regression_output(call):
    return partial(special(call.xp).expit, call.inputs[0], out=call.outputs[0])


@kernel("LinearRegressionOutput", "MAERegressionOutput", "MakeLoss", "make_loss")
def identity(call):
    return partial(call.xp.copyto, call.outputs[0], call.inputs[0])
