"""MXNet 1.9.1 reference cases (tests/data/refcases): forward results, replayed as recorded."""
from __future__ import annotations

import numpy as np
import pytest
from refcase_replay import Replay, case_names, load_case, tolerance


def _compare(name: str, results: dict, expected: dict, meta: dict) -> list[str]:
    checked = []
    for key, want in expected.items():
        if key not in results:
            continue
        got = results[key]
        rtol, atol = tolerance(meta, key)
        assert got.shape == want.shape, f"{name} {key}: shape {got.shape} != {want.shape}"
        assert got.dtype == want.dtype, f"{name} {key}: dtype {got.dtype} != {want.dtype}"
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"{name} {key}")
        checked.append(key)
    return checked


@pytest.mark.parametrize("name", case_names())
def test_forward_matches_mxnet(name):
    meta, expected = load_case(name)
    rep = Replay(name, backward=False, reshape=False)
    checked = _compare(name, rep.results, expected, meta)
    forward_keys = [k for k in expected if "grad:" not in k and "arg:" not in k
                    and not (k.split(":")[0] in ("b4", "b16"))
                    and not (k.startswith("aux:") and rep.skipped_backward)]
    assert sorted(checked) == sorted(forward_keys), f"{name}: unchecked forward keys"


@pytest.mark.parametrize("name", case_names())
def test_symbol_lists_match_mxnet(name):
    from refcase_replay import DATA

    import graphexec as gx
    meta, _ = load_case(name)
    sym = gx.sym.load(str(DATA / name / "symbol.json"))
    assert sym.list_arguments() == meta["list_arguments"]
    assert sym.list_auxiliary_states() == meta["list_auxiliary_states"]
    assert sym.list_outputs() == meta["list_outputs"]


@pytest.mark.parametrize("name", case_names())
def test_full_replay_matches_mxnet(name):
    """Forward, backward, gradients, aux states after backward, grad_req add accumulation."""
    meta, expected = load_case(name)
    rep = Replay(name, backward=True, reshape=True)
    checked = _compare(name, rep.results, expected, meta)
    assert sorted(checked) == sorted(expected), f"{name}: keys not produced: " \
        f"{sorted(set(expected) - set(checked))}"


def test_debug_str_with_backward_matches_mxnet():
    from refcase_replay import DATA
    for name in ("arith", "mlp_softmax", "multi_head"):
        rep = Replay(name, backward=True, reshape=False)
        exe = rep.execs["main"]
        assert exe.debug_str() == (DATA / name / "debug_str.txt").read_text(), name


@pytest.mark.parametrize("name", case_names())
def test_debug_str_tail_reports_memory_like_mxnet(name):
    """`Total N MB allocated`: our planner allocates at most what MXNet's does."""
    meta, _ = load_case(name)
    rep = Replay(name, backward=True, reshape=True)
    for b in meta["binds"]:
        want = b["debug_str_tail"]
        got = rep.execs[b["id"]].debug_str().splitlines()[-2:]
        assert got[1] == want[1]
        ours, theirs = int(got[0].split()[1]), int(want[0].split()[1])
        assert ours <= theirs, f"{name}/{b['id']}: {got[0]} vs MXNet {want[0]}"
