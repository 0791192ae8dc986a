"""Gradient check over the operator registry: backward() against central finite differences in
float64 for every differentiable op case in tests/opcases."""
from __future__ import annotations

import numpy as np
import pytest
from opcases import all_cases

import graphexec as gx
from graphexec.core.ops import get_op
from graphexec.core.symbol.symbol import create_op_symbol

# ops whose gradient is zero almost everywhere (steps, comparisons) are checked too: the
# numeric gradient is zero away from the discontinuities the random inputs avoid
CASES = [c for c in all_cases() if "float64" in c.dtypes and c.grad_inputs != ()
         and get_op(c.op).gradient is not None]


def _bind(case, inputs, grad_names):
    names = [f"in{i}" for i in range(len(inputs))]
    sym = create_op_symbol(case.op, [gx.sym.Variable(n) for n in names], dict(case.attrs))
    aux_names = sym.list_auxiliary_states()
    args = {n: a for n, a in zip(names, inputs) if n not in aux_names}
    aux = {n: a for n, a in zip(names, inputs) if n in aux_names}
    grads = {n: np.zeros_like(args[n]) for n in grad_names}
    exe = sym.bind(gx.cpu(), args, args_grad=grads, aux_states=aux or None)
    return exe


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_gradient_matches_finite_differences(case):
    rng = np.random.default_rng(1)
    inputs = case.make_inputs(rng, "float64")
    idx = case.grad_inputs if case.grad_inputs is not None else range(len(inputs))
    grad_names = [f"in{i}" for i in idx]
    exe = _bind(case, inputs, grad_names)
    outs = exe.forward(is_train=True)
    heads = [rng.standard_normal(o.shape) for o in outs]
    exe.backward(heads)
    analytic = {n: exe.grad_dict[n].copy() for n in grad_names}

    def objective():
        res = exe.forward(is_train=True)
        return sum(float((o * h).sum()) for o, h in zip(res, heads))
    eps = 1e-6
    for n in grad_names:
        arr = exe.arg_dict[n]
        numeric = np.zeros_like(arr)
        flat, num = arr.reshape(-1), numeric.reshape(-1)
        for k in range(flat.size):
            orig = flat[k]
            flat[k] = orig + eps
            up = objective()
            flat[k] = orig - eps
            down = objective()
            flat[k] = orig
            num[k] = (up - down) / (2 * eps)
        np.testing.assert_allclose(analytic[n], numeric, rtol=1e-4, atol=1e-6,
                                   err_msg=f"{case.name}: gradient of {n}")
