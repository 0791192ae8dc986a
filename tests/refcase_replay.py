"""Replay an MXNet 1.9.1 reference case (tests/data/refcases/<case>) as its meta.json describes
and collect the results under the keys of expected.npz."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import graphexec as gx

DATA = Path(__file__).parent / "data" / "refcases"


def case_names() -> list[str]:
    """Every case folder that has a replay recipe."""
    return sorted(p.name for p in DATA.iterdir()
                  if (p / "meta.json").exists() and "binds" in json.loads((p / "meta.json").read_text()))


def load_case(name: str) -> tuple[dict, dict]:
    folder = DATA / name
    meta = json.loads((folder / "meta.json").read_text())
    expected = dict(np.load(folder / "expected.npz"))
    return meta, expected


def _npz(folder: Path, fname: str | None) -> dict:
    return dict(np.load(folder / fname)) if fname else {}


def _arg_arrays(sym, inputs: dict) -> tuple[dict, dict]:
    args = {n: inputs[n].copy() for n in sym.list_arguments()}
    aux = {n: inputs[n].copy() for n in sym.list_auxiliary_states()}
    return args, aux


class Replay:
    """Runs every bind of a case; ``results`` maps expected.npz keys to arrays.

    ``backward=False`` replays forward calls only (backward calls are skipped, and keys that
    depend on a backward are not produced)."""

    def __init__(self, name: str, backward: bool = True, reshape: bool = True):
        self.folder = DATA / name
        self.meta = json.loads((self.folder / "meta.json").read_text())
        self.backward = backward
        self.reshape = reshape
        self.results: dict[str, np.ndarray] = {}
        self.execs: dict[str, gx.Executor] = {}
        self.buffers: dict[str, dict] = {}
        self.skipped_backward = False
        for b in self.meta["binds"]:
            if b["method"] == "reshape" and not reshape:
                continue
            self._run_bind(b)

    def _run_bind(self, b: dict) -> None:
        sym = gx.sym.load(str(self.folder / b["symbol"]))
        inputs = _npz(self.folder, b["inputs"])
        head_grads = _npz(self.folder, b.get("head_grads"))
        exe = self._make_exec(b, sym, inputs)
        self.execs[b["id"]] = exe
        prefix = b.get("prefix", "")
        trained = did_backward = False
        for call in b["calls"]:
            if call["call"] == "forward":
                exe.forward(is_train=call["is_train"])
                trained |= call["is_train"]
            else:
                if not self.backward:
                    self.skipped_backward = True
                    continue
                exe.backward(self._out_grads(call["out_grads"], head_grads, exe))
                did_backward = True
            if "record" in call:
                self._snapshot(exe, prefix + call["record"], trained, did_backward)
        self._snapshot(exe, prefix, trained, did_backward)

    def _make_exec(self, b: dict, sym, inputs: dict) -> gx.Executor:
        ctx = gx.cpu()
        if not self.backward:  # forward-only replay: no gradient buffers, no backward graph
            b = dict(b, grad_req={n: "null" for n in b["grad_req"]})
        if b["method"] == "bind":
            args, aux = _arg_arrays(sym, inputs)
            grads = {n: np.zeros_like(a) for n, a in args.items()
                     if b["grad_req"].get(n, "null") != "null"}
            return sym.bind(ctx, args=args, args_grad=grads or None, grad_req=b["grad_req"],
                            aux_states=aux)
        if b["method"] == "simple_bind":
            shapes = {n: inputs[n].shape for n in b["shape_from_inputs"]}
            shared = b.get("shared_buffer")
            exe = sym.simple_bind(
                ctx, grad_req=b["grad_req"], shared_exec=self.execs.get(b.get("shared_exec")),
                shared_arg_names=b.get("shared_arg_names"),
                shared_buffer=self.buffers.setdefault(shared, {}) if shared else None, **shapes)
        else:
            exe = self.execs[b["reshape_of"]].reshape(
                b["partial_shaping"], b["allow_up_sizing"], **{k: tuple(v) for k, v in b["shapes"].items()})
        for n, arr in exe.arg_dict.items():
            if n in inputs:
                arr[...] = inputs[n]
        for n, arr in exe.aux_dict.items():
            if n in inputs:
                arr[...] = inputs[n]
        return exe

    @staticmethod
    def _out_grads(spec, head_grads: dict, exe):
        if spec is None:
            return None
        keys = sorted(head_grads, key=lambda k: int(k[3:]))
        if spec == "all":
            return [head_grads[k] for k in keys]
        only = spec["only"]
        return [head_grads[k] if i == only else np.zeros_like(head_grads[k])
                for i, k in enumerate(keys)]

    def _snapshot(self, exe, prefix: str, trained: bool, did_backward: bool) -> None:
        for i, out in enumerate(exe.outputs):
            self.results[f"{prefix}out{i}"] = np.array(out)
        if did_backward:
            for n, g in exe.grad_dict.items():
                if g is not None:
                    self.results[f"{prefix}grad:{n}"] = np.array(g)
        if trained and (did_backward or not self.skipped_backward):
            for n, a in exe.aux_dict.items():
                self.results[f"{prefix}aux:{n}"] = np.array(a)
        if self.backward:
            for n, a in exe.arg_dict.items():
                self.results[f"{prefix}arg:{n}"] = np.array(a)


def tolerance(meta: dict, key: str) -> tuple[float, float]:
    tol = meta["tolerances"]
    per = tol.get("per_key", {}).get(key)
    if per:
        return per["rtol"], per["atol"]
    return tol.get("rtol", 1e-5), tol.get("atol", 1e-6)
