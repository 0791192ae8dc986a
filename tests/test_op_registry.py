"""Every registered operator against its numpy twin, across dtypes (tests/opcases)."""
from __future__ import annotations

import numpy as np
import pytest
from opcases import all_cases

import graphexec as gx
from graphexec.core.ops import all_ops
from graphexec.core.symbol.symbol import create_op_symbol

CASES = all_cases()


def _params(case):
    for dtype in case.dtypes:
        yield pytest.param(case, dtype, id=f"{case.name}-{dtype}")


@pytest.mark.parametrize("case,dtype", [p for c in CASES for p in _params(c)])
def test_forward_matches_twin(case, dtype):
    rng = np.random.default_rng(0)
    inputs = case.make_inputs(rng, dtype)
    names = [f"in{i}" for i in range(len(inputs))]
    sym = create_op_symbol(case.op, [gx.sym.Variable(n) for n in names], dict(case.attrs))
    args = dict(zip(names, inputs))
    arg_names = sym.list_arguments()
    assert sym.list_inputs() == names, f"{case.op}: unexpected implicit inputs {sym.list_inputs()}"
    aux = {n: a for n, a in args.items() if n in sym.list_auxiliary_states()}
    exe = sym.bind(gx.cpu(), {n: args[n] for n in arg_names}, aux_states=aux or None)
    outs = exe.forward(is_train=case.is_train)
    if case.check is not None:
        case.check([np.asarray(o) for o in outs], inputs, **case.attrs)
        return
    expected = case.twin(*inputs, **case.attrs)
    if not isinstance(expected, (list, tuple)):
        expected = [expected]
    rtol, atol = case.tolerance(dtype)
    assert len(outs) == len(expected)
    for got, want in zip(outs, expected):
        want = np.asarray(want)
        assert got.shape == want.shape, f"{case.name}: shape {got.shape} != {want.shape}"
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=rtol, atol=atol, err_msg=case.name)


def test_every_op_has_a_case():
    covered = {gx.core.ops.get_op(c.op).name for c in CASES}
    # backward ops are checked by the gradient tests, region ops by the subgraph tests,
    # control flow (nested graphs) by tests/test_control_flow.py
    internal = {name for name, op in all_ops().items()
                if op.traits & {"backward", "subgraph", "control_flow"}}
    missing = sorted(set(all_ops()) - covered - internal)
    assert not missing, f"operators without a test case in tests/opcases: {missing}"
