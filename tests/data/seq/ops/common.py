"""Shared harness for the per-operator reference data generators (make_<family>.py).

Every case builds `op(in0, in1, ...)` from mx.sym variables named in0..in{n-1}
(in the op's input order), binds it with a plain `simple_bind` on the CPU and records
outputs, gradients, shape/type inference, float64 comparisons and a oneDNN-off cross-check.

Run a generator with (a venv with mxnet==1.9.1 "numpy<1.24" "scipy<1.12"; the files are
written next to this script):
    MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=1 nice -n 10 /path/to/mxvenv/bin/python make_seq.py
(the environment variables are set by this module before mxnet is imported, if unset).
"""
import os
import sys

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import json
import pickle
import re
import subprocess
import tempfile
import traceback
import zlib

import numpy as np
import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
OUTDIR = HERE
MKLDNN_OFF = os.environ.get("MXNET_MKLDNN_ENABLED", "1") == "0"


def seed_of(name):
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def rng_for(name):
    return np.random.RandomState(seed_of(name))


def clean_msg(msg):
    """Strip MXNet's C++ stack trace from an error message, keep the first meaningful lines."""
    lines = str(msg).splitlines()
    keep = []
    in_args = False
    for ln in lines:
        s = ln.strip()
        if s.startswith("simple_bind error. Arguments:") or s.startswith("infer_shape error. Arguments:") or \
                s.startswith("infer_type error. Arguments:"):
            in_args = True
            continue
        if in_args and re.match(r"^[\w.]+: [\w(),\s<>'.]*$", s) and not s.startswith("MXNetError"):
            continue
        in_args = False
        if s.startswith("Stack trace") or s.startswith("[bt]"):
            break
        if s.startswith("File \"") or s.startswith("Traceback"):
            continue
        keep.append(ln)
    out = "\n".join(keep).strip()
    return out[:1500]


def resolve_op(opname):
    """'topk' -> mx.sym.topk, 'contrib.box_nms' -> mx.sym.contrib.box_nms, '_contrib_box_nms' -> mx.sym._contrib_box_nms"""
    mod = mx.sym
    for part in opname.split("."):
        mod = getattr(mod, part)
    return mod


def is_float(dt):
    return np.dtype(dt).kind == "f"


def dtname(dt):
    return np.dtype(dt).name


def build_symbol(op, inputs, attrs):
    """inputs: list of arrays (positional) or (argname, array) tuples (keyword), or None-free.
    Returns (sym, list of (varname, array))."""
    f = resolve_op(op)
    pos, kw, named = [], {}, []
    for i, item in enumerate(inputs):
        v = mx.sym.var("in%d" % i)
        if isinstance(item, tuple):
            kw[item[0]] = v
            named.append(("in%d" % i, item[1]))
        else:
            pos.append(v)
            named.append(("in%d" % i, item))
    sym = f(*pos, **kw, **(attrs or {}))
    return sym, named


def op_node_attrs(sym):
    js = json.loads(sym.tojson())
    node = js["nodes"][js["heads"][0][0]]
    return node["op"], node.get("attrs", {}), js


def _arr_to_nd(a, dtype=None):
    a = np.asarray(a)
    return mx.nd.array(a, dtype=dtype or a.dtype)


def run_exec(sym, named, *, grad_names, hg_list=None, want_train=True, want_backward=True,
             cast64=False, fwd_train_first=False):
    """Bind + run; returns dict with outputs, train outputs, grads, aux after, error info."""
    res = {}
    args = sym.list_arguments()
    auxs = sym.list_auxiliary_states()
    vals = {}
    for n, a in named:
        a = np.asarray(a)
        if cast64 and is_float(a.dtype):
            a = a.astype(np.float64)
        vals[n] = a
    shapes = {n: vals[n].shape for n in args + auxs if n in vals}
    types = {n: vals[n].dtype for n in args + auxs if n in vals}
    req = {n: ("write" if (n in grad_names and want_backward) else "null") for n in args}
    try:
        exe = sym.simple_bind(mx.cpu(), grad_req=req if req else "null", type_dict=types, **shapes)
    except Exception as e:  # bind failure with grads -> retry without
        res["bind_error_with_grad"] = "%s: %s" % (type(e).__name__, clean_msg(e))
        req = {n: "null" for n in args}
        exe = sym.simple_bind(mx.cpu(), grad_req="null", type_dict=types, **shapes)
        want_backward = False
        res["no_gradient_reason"] = res["bind_error_with_grad"]
    for n in args:
        if n in vals:
            exe.arg_dict[n][:] = _arr_to_nd(vals[n], exe.arg_dict[n].dtype)
    for n in auxs:
        if n in vals:
            exe.aux_dict[n][:] = _arr_to_nd(vals[n], exe.aux_dict[n].dtype)
    outs = exe.forward(is_train=False)
    res["out"] = [o.asnumpy() for o in outs]
    if want_train or want_backward:
        for n in auxs:  # restore aux before the training forward
            if n in vals:
                exe.aux_dict[n][:] = _arr_to_nd(vals[n], exe.aux_dict[n].dtype)
        try:
            touts = exe.forward(is_train=True)
            res["tout"] = [o.asnumpy() for o in touts]
            res["aux_after_train"] = [exe.aux_dict[n].asnumpy() for n in auxs]
        except Exception as e:
            res["train_error"] = "%s: %s" % (type(e).__name__, clean_msg(e))
            res["backward_error"] = "training forward failed: " + res["train_error"]
            want_backward = False
    if want_backward and any(req[n] == "write" for n in args):
        try:
            if hg_list is None:
                exe.backward()
            else:
                hgs = []
                for h, o in zip(hg_list, res["tout"]):
                    h = np.asarray(h)
                    if cast64 and is_float(h.dtype):
                        h = h.astype(np.float64)
                    hgs.append(mx.nd.array(h, dtype=o.dtype))
                exe.backward(out_grads=hgs)
            mx.nd.waitall()
            res["grad"] = {n: exe.grad_dict[n].asnumpy() for n in args if req[n] == "write"}
        except Exception as e:
            res["backward_error"] = "%s: %s" % (type(e).__name__, clean_msg(e))
    return res


def _diff(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return {"shape_mismatch": [list(a.shape), list(b.shape)]}
    if a.size == 0:
        return {"max_abs": 0.0, "max_rel": 0.0}
    fin = np.isfinite(a) & np.isfinite(b)
    nonfin_same = bool(np.all((np.isnan(a) == np.isnan(b)) & (np.isinf(a) == np.isinf(b)) &
                              (~np.isinf(a) | (a == b))))
    d = np.abs(a - b)[fin]
    if d.size == 0:
        return {"max_abs": 0.0, "max_rel": 0.0, "nonfinite_match": nonfin_same}
    rel = d / np.maximum(np.abs(b[fin]), 1e-30)
    return {"max_abs": float(d.max()), "max_rel": float(rel[np.abs(b[fin]) > 1e-6].max()) if np.any(np.abs(b[fin]) > 1e-6) else 0.0,
            "nonfinite_match": nonfin_same}


def suggest_tol(diffs, dtype="float32"):
    """rtol/atol suggestion from f32-vs-f64 evidence."""
    base_r, base_a = (1e-5, 1e-6) if dtype == "float32" else (1e-7, 1e-9)
    if not diffs:
        return {"rtol": base_r * 10, "atol": base_a * 10}
    ma = max([d.get("max_abs", 0.0) for d in diffs.values()] + [0.0])
    return {"rtol": float(max(1e-4, 0.0)), "atol": float(max(1e-5, 4 * ma))}


def _jsonable(x):
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, list):
        return [_jsonable(v) for v in x]
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    return x


def _shp(s):
    # infer_shape_partial reports an unknown shape as () (legacy shape semantics): write null
    return list(s) if (s is not None and len(s) > 0) else None


def infer_partial(sym, shapes):
    try:
        a, o, x = sym.infer_shape_partial(**shapes)
        r = {"given": {k: list(v) for k, v in shapes.items()},
             "arg_shapes": dict(zip(sym.list_arguments(), [_shp(s) for s in a])),
             "out_shapes": [_shp(s) for s in o],
             "aux_shapes": dict(zip(sym.list_auxiliary_states(), [_shp(s) for s in x]))}
    except Exception as e:
        return {"given": {k: list(v) for k, v in shapes.items()},
                "error": "%s: %s" % (type(e).__name__, clean_msg(e))}
    try:
        sym.infer_shape(**shapes)
        r["complete"] = True
    except Exception as e:
        r["complete"] = False
        r["infer_shape_error"] = "%s: %s" % (type(e).__name__, clean_msg(e))[:600]
    return r


class Family:
    def __init__(self, name):
        self.name = name
        self.cases = {}
        self.arrays = {}
        self.errors = {}
        self.ops = {}
        self.extra = {}
        self.skipped = {}
        self.case_specs = []  # for the oneDNN cross-check replay

    # ------------------------------------------------------------------ normal cases
    def case(self, cname, op, inputs, attrs=None, *, grad=True, nograd=(), f64=True,
             partial=None, out_partial=True, notes="", hg_scale=1.0, hg=None, no_hg=False,
             check_mkldnn=True, store_f64=False, skip_in_replay=False, want_train=True):
        """Record one case. inputs: arrays or (argname, array) tuples in op input order."""
        assert cname not in self.cases, cname
        key = cname
        rec = {"op_call": op, "notes": notes}
        try:
            sym, named = build_symbol(op, inputs, attrs)
        except Exception as e:
            rec["build_error"] = "%s: %s" % (type(e).__name__, clean_msg(e))
            self.cases[key] = rec
            print("  [%s] build error: %s" % (cname, rec["build_error"][:200]))
            return None
        opname, jattrs, js = op_node_attrs(sym)
        rec["op"] = opname
        rec["attrs"] = jattrs
        rec["symbol_json"] = sym.tojson()
        self.ops.setdefault(opname, []).append(cname)
        args = sym.list_arguments()
        auxs = sym.list_auxiliary_states()
        rec["list_arguments"] = args
        rec["list_auxiliary_states"] = auxs
        rec["list_outputs"] = sym.list_outputs()
        rec["inputs"] = [{"name": n, "shape": list(np.shape(a)), "dtype": dtname(np.asarray(a).dtype),
                          "role": "aux" if n in auxs else ("arg" if n in args else "unused")}
                         for n, a in named]
        for n, a in named:
            self.arrays["%s/%s" % (key, n)] = np.asarray(a)
        shapes = {n: np.shape(a) for n, a in named}
        types = {n: np.asarray(a).dtype for n, a in named}
        # shape / type inference
        try:
            a_s, o_s, x_s = sym.infer_shape(**shapes)
            rec["infer_shape"] = {"arg_shapes": [list(s) for s in a_s], "out_shapes": [list(s) for s in o_s],
                                  "aux_shapes": [list(s) for s in x_s]}
        except Exception as e:
            rec["infer_shape"] = {"error": "%s: %s" % (type(e).__name__, clean_msg(e))}
        try:
            a_t, o_t, x_t = sym.infer_type(**types)
            rec["infer_type"] = {"arg_types": [dtname(t) if t is not None else None for t in a_t],
                                 "out_types": [dtname(t) if t is not None else None for t in o_t],
                                 "aux_types": [dtname(t) if t is not None else None for t in x_t]}
        except Exception as e:
            rec["infer_type"] = {"error": "%s: %s" % (type(e).__name__, clean_msg(e))}
        # partial shape inference
        pl = []
        if partial:
            for p in partial:
                pl.append(infer_partial(sym, p))
        if out_partial and "error" not in rec["infer_shape"]:
            # backward inference from the output shape(s): tie every output to a known-shape var
            try:
                outs = [sym[i] for i in range(len(sym.list_outputs()))]
                o_shapes = rec["infer_shape"]["out_shapes"]
                tied = [mx.sym.elemwise_add(o, mx.sym.var("__out%d_shape" % i)) for i, o in enumerate(outs)]
                g = mx.sym.Group(tied)
                given = {"__out%d_shape" % i: tuple(s) for i, s in enumerate(o_shapes)}
                r = infer_partial(g, given)
                r["mode"] = "outputs_only"
                if "arg_shapes" in r:
                    r["arg_shapes"] = {k: v for k, v in r["arg_shapes"].items() if not k.startswith("__out")}
                pl.append(r)
            except Exception as e:
                pl.append({"mode": "outputs_only", "error": "%s: %s" % (type(e).__name__, clean_msg(e))})
        rec["partial_infer_shape"] = pl
        # execution
        grad_names = set()
        if grad:
            for i, (n, a) in enumerate(named):
                if n in args and is_float(np.asarray(a).dtype) and i not in nograd:
                    grad_names.add(n)
        if "error" in rec["infer_shape"] or "error" in rec["infer_type"]:
            rec["exec_error"] = "not run: " + (rec["infer_shape"].get("error") or rec["infer_type"].get("error"))
            print("  [%s] inference error: %s" % (cname, rec["exec_error"][:300]))
            self.cases[key] = rec
            return rec
        try:
            o_shapes = rec["infer_shape"].get("out_shapes")
            o_types = rec["infer_type"].get("out_types")
            hgl = None
            if grad_names and not no_hg:
                if hg is not None:
                    hgl = hg
                else:
                    r = rng_for(cname + "/hg")
                    hgl = [(r.randn(*s) * hg_scale).astype(t if is_float(t) else np.float32)
                           for s, t in zip(o_shapes, o_types)]
            try:
                res = run_exec(sym, named, grad_names=grad_names, hg_list=hgl, want_backward=bool(grad_names),
                               want_train=want_train)
            except Exception as e:
                if not grad_names:
                    raise
                err = "%s: %s" % (type(e).__name__, clean_msg(e))
                print("  [%s] failed with gradients (%s); retrying inference only" % (cname, err[:200]))
                res = run_exec(sym, named, grad_names=set(), want_backward=False, want_train=False)
                res["backward_error"] = "with grad_req=write: " + err
                rec["inference_only"] = True
        except Exception as e:
            rec["exec_error"] = "%s: %s" % (type(e).__name__, clean_msg(e))
            print("  [%s] exec error: %s" % (cname, rec["exec_error"][:300]))
            self.cases[key] = rec
            return None
        rec["outputs"] = [{"shape": list(o.shape), "dtype": dtname(o.dtype)} for o in res["out"]]
        for i, o in enumerate(res["out"]):
            self.arrays["%s/out%d" % (key, i)] = o
        rec["is_train"] = [False]
        if "train_error" in res:
            rec["train_forward_error"] = res["train_error"]
        if "tout" in res:
            differs = any(not np.array_equal(a, b, equal_nan=True) if a.shape == b.shape else True
                          for a, b in zip(res["out"], res["tout"]))
            rec["train_differs"] = bool(differs)
            if differs:
                rec["is_train"] = [False, True]
                for i, o in enumerate(res["tout"]):
                    self.arrays["%s/tout%d" % (key, i)] = o
            if auxs:
                rec["aux_after_train_forward"] = True
                for n, a in zip(auxs, res["aux_after_train"]):
                    idx = n[2:]
                    self.arrays["%s/aux_after_train%s" % (key, idx)] = a
        if grad_names:
            if rec.get("inference_only"):
                rec["gradient"] = False
                rec["no_gradient_reason"] = res["backward_error"]
                grad_names = set()
            elif "grad" in res:
                rec["gradient"] = True
                rec["grad_inputs"] = sorted(res["grad"].keys(), key=lambda s: int(s[2:]))
                for n, g in res["grad"].items():
                    self.arrays["%s/grad%s" % (key, n[2:])] = g
                if hgl is not None:
                    for i, h in enumerate(hgl):
                        self.arrays["%s/hg%d" % (key, i)] = np.asarray(h)
                    rec["head_grads"] = True
                else:
                    rec["head_grads"] = False
                    rec["notes"] = (rec["notes"] + " backward() called without head grads.").strip()
            else:
                rec["gradient"] = False
                rec["no_gradient"] = True
                rec["no_gradient_reason"] = res.get("backward_error") or res.get("no_gradient_reason")
        else:
            rec["gradient"] = None  # not requested
        # float64 comparison
        if f64 and any(np.asarray(a).dtype == np.float32 for _, a in named):
            try:
                res64 = run_exec(sym, named, grad_names=set(res.get("grad", {}).keys()), hg_list=hgl,
                                 want_backward="grad" in res, want_train=want_train, cast64=True)
                diffs = {}
                for i, (a, b) in enumerate(zip(res["out"], res64["out"])):
                    diffs["out%d" % i] = _diff(a, b)
                    if store_f64:
                        self.arrays["%s/out%d_f64" % (key, i)] = b
                if "tout" in res and rec.get("train_differs"):
                    for i, (a, b) in enumerate(zip(res["tout"], res64["tout"])):
                        diffs["tout%d" % i] = _diff(a, b)
                for n, g in res.get("grad", {}).items():
                    if n in res64.get("grad", {}):
                        diffs["grad" + n[2:]] = _diff(g, res64["grad"][n])
                rec["f64_supported"] = True
                rec["f64_out_dtypes"] = [dtname(o.dtype) for o in res64["out"]]
                rec["f32_vs_f64"] = diffs
                rec["tolerance"] = suggest_tol(diffs)
            except Exception as e:
                rec["f64_supported"] = False
                rec["f64_error"] = "%s: %s" % (type(e).__name__, clean_msg(e))[:600]
                rec["tolerance"] = {"rtol": 1e-4, "atol": 1e-5}
        else:
            rec["tolerance"] = {"rtol": 1e-4, "atol": 1e-5}
        self.cases[key] = rec
        if check_mkldnn and not skip_in_replay:
            self.case_specs.append(dict(cname=cname, op=op, inputs=inputs, attrs=attrs,
                                        grad_names=sorted(grad_names), hg=hgl, want_train=want_train))
        print("  [%s] %s outs=%s grad=%s" % (cname, opname, [tuple(o.shape) for o in res["out"]],
                                             rec.get("gradient")))
        return rec

    def case_env(self, cname, op, inputs, attrs=None, env=None, **kw):
        """Run F.case in a fresh subprocess with extra environment variables (e.g. MXNET_MKLDNN_ENABLED=0)."""
        env = env or {"MXNET_MKLDNN_ENABLED": "0"}
        with tempfile.TemporaryDirectory() as td:
            spec_f = os.path.join(td, "spec.pkl")
            out_f = os.path.join(td, "out.pkl")
            with open(spec_f, "wb") as f:
                pickle.dump(dict(cname=cname, op=op, inputs=inputs, attrs=attrs, kw=kw), f)
            e = dict(os.environ)
            e.update(env)
            p = subprocess.run([sys.executable, os.path.join(HERE, "common.py"), "--case-worker", spec_f, out_f],
                               capture_output=True, text=True, env=e)
            if p.returncode != 0 or not os.path.exists(out_f):
                rec = {"op_call": op, "exec_error": "subprocess failed rc=%s: %s" % (p.returncode, clean_msg(p.stderr[-1500:])),
                       "env_override": env}
                self.cases[cname] = rec
                print("  [%s] subprocess failed rc=%s" % (cname, p.returncode))
                return rec
            with open(out_f, "rb") as f:
                sub = pickle.load(f)
        rec = sub["rec"]
        rec["env_override"] = env
        self.cases[cname] = rec
        self.arrays.update(sub["arrays"])
        if "op" in rec:
            self.ops.setdefault(rec["op"], []).append(cname)
        print("  [%s] (env %s) %s outs=%s grad=%s" % (cname, env, rec.get("op"), [o["shape"] for o in rec.get("outputs", [])],
                                                    rec.get("gradient")))
        return rec

    def imperative_case(self, cname, op, inputs, attrs=None, *, nograd=(), notes=""):
        """For ops whose output shape is data-dependent (simple_bind cannot infer it): record the symbolic
        failure, then run the op imperatively (mx.nd.<op> under autograd) for outputs and gradients."""
        rec = {"op_call": op, "notes": notes, "imperative": True}
        named = [("in%d" % i, (x[1] if isinstance(x, tuple) else x)) for i, x in enumerate(inputs)]
        try:
            sym, named = build_symbol(op, inputs, attrs)
            opname, jattrs, js = op_node_attrs(sym)
            rec.update(op=opname, attrs=jattrs, symbol_json=sym.tojson(), list_arguments=sym.list_arguments(),
                       list_outputs=sym.list_outputs())
            shapes = {n: np.shape(a) for n, a in named}
            rec["partial_infer_shape"] = [infer_partial(sym, shapes)]
            try:
                sym.simple_bind(mx.cpu(), grad_req="null", type_dict={n: np.asarray(a).dtype for n, a in named}, **shapes)
                rec["simple_bind"] = "ok"
            except Exception as e:
                rec["simple_bind_error"] = "%s: %s" % (type(e).__name__, clean_msg(e))[:800]
        except Exception as e:
            rec["symbol_build_error"] = "%s: %s" % (type(e).__name__, clean_msg(e))[:800]
            opname = op.split(".")[-1]
            rec["op"] = opname
            rec["attrs"] = {k: str(v) for k, v in (attrs or {}).items()}
        self.ops.setdefault(opname, []).append(cname)
        rec["inputs"] = [{"name": n, "shape": list(np.shape(a)), "dtype": dtname(np.asarray(a).dtype)} for n, a in named]
        for n, a in named:
            self.arrays["%s/%s" % (cname, n)] = np.asarray(a)
        f = mx.nd
        for part in op.split("."):
            f = getattr(f, part)
        nds = [mx.nd.array(a, dtype=np.asarray(a).dtype) for _, a in named]
        gi = [i for i, (_, a) in enumerate(named) if is_float(np.asarray(a).dtype) and i not in nograd]
        for i in gi:
            nds[i].attach_grad()
        with mx.autograd.record(train_mode=False):
            out = f(*nds, **(attrs or {}))
        outs = out if isinstance(out, (list, tuple)) else [out]
        rec["outputs"] = [{"shape": list(o.shape), "dtype": dtname(o.dtype)} for o in outs]
        for i, o in enumerate(outs):
            self.arrays["%s/out%d" % (cname, i)] = o.asnumpy()
        rec["is_train"] = [False]
        rr = rng_for(cname + "/hg")
        hgs = [rr.randn(*o.shape).astype(o.dtype) for o in outs]
        try:
            mx.autograd.backward(outs, head_grads=[mx.nd.array(h, dtype=h.dtype) for h in hgs])
            mx.nd.waitall()
            rec["gradient"] = True
            rec["grad_inputs"] = ["in%d" % i for i in gi]
            for i in gi:
                self.arrays["%s/grad%d" % (cname, i)] = nds[i].grad.asnumpy()
            for i, h in enumerate(hgs):
                self.arrays["%s/hg%d" % (cname, i)] = h
            rec["head_grads"] = True
        except Exception as e:
            rec["gradient"] = False
            rec["no_gradient"] = True
            rec["no_gradient_reason"] = "%s: %s" % (type(e).__name__, clean_msg(e))
        rec["tolerance"] = {"rtol": 1e-5, "atol": 1e-6}
        self.cases[cname] = rec
        print("  [%s] (imperative) %s outs=%s grad=%s" % (cname, opname, [o["shape"] for o in rec["outputs"]], rec["gradient"]))
        return rec

    # ------------------------------------------------------------------ random ops
    def random_case(self, cname, op, inputs, attrs=None, *, notes="", theory=None, per_row_axis=None,
                    try_grad=True, seed=42, extra_stats=None):
        rec = {"op_call": op, "notes": notes, "random": True}
        sym, named = build_symbol(op, inputs, attrs)
        opname, jattrs, js = op_node_attrs(sym)
        rec.update(op=opname, attrs=jattrs, symbol_json=sym.tojson(), list_arguments=sym.list_arguments(),
                   list_outputs=sym.list_outputs())
        self.ops.setdefault(opname, []).append(cname)
        rec["inputs"] = [{"name": n, "shape": list(np.shape(a)), "dtype": dtname(np.asarray(a).dtype)} for n, a in named]
        for n, a in named:
            self.arrays["%s/%s" % (cname, n)] = np.asarray(a)
        shapes = {n: np.shape(a) for n, a in named}
        types = {n: np.asarray(a).dtype for n, a in named}
        try:
            a_s, o_s, x_s = sym.infer_shape(**shapes)
            rec["infer_shape"] = {"arg_shapes": [list(s) for s in a_s], "out_shapes": [list(s) for s in o_s]}
            a_t, o_t, x_t = sym.infer_type(**types)
            rec["infer_type"] = {"arg_types": [dtname(t) for t in a_t], "out_types": [dtname(t) for t in o_t]}
        except Exception as e:
            rec["infer_error"] = "%s: %s" % (type(e).__name__, clean_msg(e))
        mx.random.seed(seed)
        try:
            gn = {n for n, a in named if is_float(np.asarray(a).dtype)} if try_grad else set()
            o_shapes = rec.get("infer_shape", {}).get("out_shapes")
            hgl = [np.ones(s, dtype=np.float32) for s in o_shapes] if (gn and o_shapes) else None
            res = run_exec(sym, named, grad_names=gn, hg_list=hgl, want_backward=bool(gn), want_train=bool(gn))
        except Exception as e:
            rec["exec_error"] = "%s: %s" % (type(e).__name__, clean_msg(e))
            print("  [%s] exec error: %s" % (cname, rec["exec_error"][:300]))
            self.cases[cname] = rec
            return None
        rec["outputs"] = [{"shape": list(o.shape), "dtype": dtname(o.dtype)} for o in res["out"]]
        stats = []
        for o in res["out"]:
            of = o.astype(np.float64)
            st = {"mean": float(of.mean()) if of.size else None, "var": float(of.var()) if of.size else None,
                  "min": float(of.min()) if of.size else None, "max": float(of.max()) if of.size else None,
                  "n": int(of.size)}
            if per_row_axis is not None and of.ndim > 1:
                ax = tuple(range(per_row_axis, of.ndim))
                st["row_mean"] = of.mean(axis=ax).ravel().tolist()
                st["row_var"] = of.var(axis=ax).ravel().tolist()
            if o.dtype.kind in "iu" or np.all(of == np.round(of)):
                st["integral_values"] = True
            stats.append(st)
        rec["stats"] = stats
        if extra_stats:
            rec["extra_stats"] = _jsonable(extra_stats(res["out"], named))
        if theory is not None:
            rec["theory"] = _jsonable(theory)
        if gn:
            if "grad" in res:
                rec["gradient"] = True
                rec["grad_stats"] = {n: {"all_zero": bool(np.all(g == 0)), "mean": float(np.mean(g)) if g.size else None}
                                     for n, g in res["grad"].items()}
            else:
                rec["gradient"] = False
                rec["no_gradient"] = True
                rec["no_gradient_reason"] = res.get("backward_error") or res.get("no_gradient_reason")
        self.cases[cname] = rec
        print("  [%s] %s outs=%s" % (cname, opname, [tuple(o.shape) for o in res["out"]]))
        return rec

    # ------------------------------------------------------------------ errors
    def error_case(self, cname, op, inputs, attrs=None, notes="", imperative=False):
        """inputs: list of (argname_or_None, shape, dtype[, values]) ; run in a subprocess worker later.
        imperative=True: call mx.nd.<op> instead of binding a symbol (ops with data-dependent shapes)."""
        self.errors[cname] = {"op_call": op, "inputs": inputs, "attrs": attrs or {}, "notes": notes,
                              "imperative": imperative}

    def _run_errors(self):
        names = list(self.errors)
        results = {}
        i = 0
        while i < len(names):
            # one fresh process per error case: an out-of-bounds write in one case must not crash the next one
            specs = [(names[i], self.errors[names[i]])]
            with tempfile.TemporaryDirectory() as td:
                spec_f = os.path.join(td, "spec.pkl")
                out_f = os.path.join(td, "out.jsonl")
                with open(spec_f, "wb") as f:
                    pickle.dump(specs, f)
                try:
                    p = subprocess.run([sys.executable, os.path.join(HERE, "common.py"), "--error-worker", spec_f, out_f],
                                       capture_output=True, text=True, env=dict(os.environ), timeout=120)
                except subprocess.TimeoutExpired as te:
                    results[names[i]] = {"outcome": "hang", "timeout_s": 120,
                                         "stderr_tail": clean_msg((te.stderr or b"")[-1500:].decode("utf-8", "replace")
                                                                  if isinstance(te.stderr, bytes) else (te.stderr or "")[-1500:])}
                    print("  [error %s] HANG (killed after 120 s)" % names[i])
                    i += 1
                    continue
                done = []
                if os.path.exists(out_f):
                    with open(out_f) as f:
                        for ln in f:
                            done.append(json.loads(ln))
                for d in done:
                    results[d["name"]] = d["result"]
                i += len(done)
                if p.returncode != 0:
                    if i < len(names):
                        crashed = names[i]
                        results[crashed] = {"outcome": "segfault" if "Segmentation fault" in p.stderr else
                                            ("abort (heap corruption)" if p.returncode == -6 else "crash"),
                                            "returncode": p.returncode,
                                            "signal": -p.returncode if p.returncode < 0 else None,
                                            "stderr_tail": clean_msg(p.stderr[-1500:])}
                        print("  [error %s] CRASH rc=%s" % (crashed, p.returncode))
                        i += 1
        for n in names:
            spec = self.errors[n]
            r = results.get(n, {"outcome": "missing"})
            rec = {"op_call": spec["op_call"], "attrs_given": _jsonable(spec["attrs"]), "imperative": spec.get("imperative", False),
                   "inputs": [{"name": "in%d" % k, "arg": x[0], "shape": list(x[1]), "dtype": dtname(x[2]),
                               "values": _jsonable(x[3]) if len(x) > 3 else None}
                              for k, x in enumerate(spec["inputs"])],
                   "notes": spec["notes"]}
            rec.update(r)
            self.errors[n] = rec
            print("  [error %s] %s %s" % (n, r.get("outcome"), (r.get("exception_type") or ""), ))

    # ------------------------------------------------------------------ save
    def save(self, mkldnn_check=True):
        os.makedirs(OUTDIR, exist_ok=True)
        if self.errors:
            print("running %d error cases in subprocesses" % len(self.errors))
            self._run_errors()
        if mkldnn_check and self.case_specs:
            print("oneDNN-off cross-check of %d cases" % len(self.case_specs))
            self._mkldnn_check()
        np.savez_compressed(os.path.join(OUTDIR, self.name + ".npz"), **self.arrays)
        meta = {
            "family": self.name,
            "mxnet_version": mx.__version__,
            "numpy_version": np.__version__,
            "env": {k: os.environ.get(k) for k in ("MXNET_SUBGRAPH_BACKEND", "OMP_NUM_THREADS", "MXNET_MKLDNN_ENABLED")},
            "generator": "/work/refgen_ops/make_%s.py" % self.name,
            "key_scheme": "npz keys: <case>/in<i> (inputs, incl. aux), <case>/out<i> (forward is_train=False), "
                          "<case>/tout<i> (forward is_train=True, only when it differs), <case>/hg<i> (head grads), "
                          "<case>/grad<i> (gradient of input i after backward(head grads) following forward(is_train=True)), "
                          "<case>/aux_after_train<i> (aux input i after the training forward)",
            "ops": self.ops,
            "cases": self.cases,
            "errors": self.errors,
            "skipped": self.skipped,
            "extra": self.extra,
        }
        with open(os.path.join(OUTDIR, self.name + ".json"), "w") as f:
            json.dump(_jsonable(meta), f, indent=1, sort_keys=False)
        print("saved %s: %d cases, %d arrays, %d errors" % (self.name, len(self.cases), len(self.arrays), len(self.errors)))

    def _mkldnn_check(self):
        rep = {}
        with tempfile.TemporaryDirectory() as td:
            env = dict(os.environ)
            env["MXNET_MKLDNN_ENABLED"] = "0"
            k = 0
            while k < len(self.case_specs):
                spec_f = os.path.join(td, "spec%d.pkl" % k)
                with open(spec_f, "wb") as f:
                    pickle.dump(self.case_specs[k:], f)
                outdir = os.path.join(td, "out%d" % k)
                os.makedirs(outdir)
                p = subprocess.run([sys.executable, os.path.join(HERE, "common.py"), "--replay-worker", spec_f, outdir],
                                   capture_output=True, text=True, env=env)
                done = sorted(os.listdir(outdir), key=lambda s: int(s.split(".")[0]))
                for fn in done:
                    with open(os.path.join(outdir, fn), "rb") as f:
                        cname, r = pickle.load(f)
                    rep[cname] = r
                k += len(done)
                if p.returncode != 0 and k < len(self.case_specs):
                    cname = self.case_specs[k]["cname"]
                    rep[cname] = {"error": "CRASH with MXNET_MKLDNN_ENABLED=0: rc=%s %s" % (p.returncode, clean_msg(p.stderr[-300:]))}
                    print("  [%s] oneDNN-off replay CRASHED rc=%s" % (cname, p.returncode))
                    k += 1
        for cname, r in rep.items():
            rec = self.cases[cname]
            if "error" in r:
                rec["mkldnn_off"] = {"error": r["error"]}
                continue
            cmp = {}
            for i, o in enumerate(r["out"]):
                a = self.arrays.get("%s/out%d" % (cname, i))
                if a is not None:
                    cmp["out%d" % i] = {"bitwise": bool(np.array_equal(a, o, equal_nan=True)), **_diff(o, a)}
            for n, g in r.get("grad", {}).items():
                a = self.arrays.get("%s/grad%s" % (cname, n[2:]))
                if a is not None:
                    cmp["grad" + n[2:]] = {"bitwise": bool(np.array_equal(a, g, equal_nan=True)), **_diff(g, a)}
            rec["mkldnn_off"] = {"all_bitwise": all(v.get("bitwise") for v in cmp.values()), "per_key": cmp}
            if not rec["mkldnn_off"]["all_bitwise"]:
                print("  [%s] oneDNN on/off differ: %s" % (cname, {k: v.get("max_abs") for k, v in cmp.items() if not v.get("bitwise")}))


# ---------------------------------------------------------------------- workers
def _error_worker(spec_f, out_f):
    with open(spec_f, "rb") as f:
        specs = pickle.load(f)
    for name, spec in specs:
        result = {}
        stage = "build"
        try:
            rng = rng_for(name)
            inputs = []
            for x in spec["inputs"]:
                argname, shape, dtype = x[0], x[1], x[2]
                if len(x) > 3 and x[3] is not None:
                    a = np.asarray(x[3], dtype=dtype).reshape(shape)
                else:
                    a = rng.uniform(0.1, 1.0, size=shape).astype(dtype)
                inputs.append((argname, a) if argname else a)
            if spec.get("imperative"):
                stage = "imperative_call"
                f = mx.nd
                for part in spec["op_call"].split("."):
                    f = getattr(f, part)
                outs = f(*[mx.nd.array(x[1] if isinstance(x, tuple) else x, dtype=(x[1] if isinstance(x, tuple) else x).dtype)
                           for x in inputs], **spec["attrs"])
                outs = outs if isinstance(outs, (list, tuple)) else [outs]
                outs = [o.asnumpy() for o in outs]
                result["outcome"] = "silently accepted"
                result["out_shapes"] = [list(o.shape) for o in outs]
                result["out_sample"] = [o.ravel()[:8].tolist() for o in outs]
                with open(out_f, "a") as f:
                    f.write(json.dumps({"name": name, "result": _jsonable(result)}) + "\n")
                continue
            sym, named = build_symbol(spec["op_call"], inputs, spec["attrs"])
            result["attrs"] = op_node_attrs(sym)[1]
            stage = "infer_shape"
            shapes = {n: np.shape(a) for n, a in named}
            a_s, o_s, x_s = sym.infer_shape(**shapes)
            if a_s is None:
                # MXNet's infer_shape returns None (with a warning) when inference is incomplete
                result["infer_shape_incomplete"] = True
                pa, po, px = sym.infer_shape_partial(**shapes)
                result["partial_out_shapes"] = [_shp(s) for s in po]
                stage = "bind_forward"
                res = run_exec(sym, named, grad_names=set(), want_backward=False, want_train=False)
                mx.nd.waitall()
                result["outcome"] = "silently accepted"
                result["out_shapes"] = [list(o.shape) for o in res["out"]]
                with open(out_f, "a") as f:
                    f.write(json.dumps({"name": name, "result": _jsonable(result)}) + "\n")
                continue
            inferred = dict(zip(sym.list_arguments() + sym.list_auxiliary_states(), list(a_s) + list(x_s)))
            over = {n: [list(shapes[n]), list(inferred[n])] for n in shapes if n in inferred and tuple(inferred[n]) != tuple(shapes[n])}
            if over:
                result["outcome"] = "silently accepted: given shape overridden by shape inference"
                result["overridden_shapes"] = over
                result["out_shapes"] = [list(s) for s in o_s]
                with open(out_f, "a") as f:
                    f.write(json.dumps({"name": name, "result": _jsonable(result)}) + "\n")
                continue
            stage = "infer_type"
            sym.infer_type(**{n: np.asarray(a).dtype for n, a in named})
            stage = "bind_forward"
            res = run_exec(sym, named, grad_names=set(), want_backward=False, want_train=False)
            mx.nd.waitall()
            result["outcome"] = "silently accepted"
            result["out_shapes"] = [list(o.shape) for o in res["out"]]
            result["out_sample"] = [o.ravel()[:8].tolist() for o in res["out"]]
        except Exception as e:
            result["outcome"] = "exception"
            result["stage"] = stage
            result["exception_type"] = type(e).__module__ + "." + type(e).__name__
            result["message"] = clean_msg(e)
        with open(out_f, "a") as f:
            f.write(json.dumps({"name": name, "result": _jsonable(result)}) + "\n")


def _replay_worker(spec_f, outdir):
    with open(spec_f, "rb") as f:
        specs = pickle.load(f)
    for k, s in enumerate(specs):
        try:
            sym, named = build_symbol(s["op"], s["inputs"], s["attrs"])
            res = run_exec(sym, named, grad_names=set(s["grad_names"]), hg_list=s["hg"],
                           want_backward=bool(s["grad_names"]), want_train=s["want_train"])
            r = {"out": res["out"], "grad": res.get("grad", {})}
            if "backward_error" in res:
                r["backward_error"] = res["backward_error"]
        except Exception as e:
            r = {"error": "%s: %s" % (type(e).__name__, clean_msg(e))}
        with open(os.path.join(outdir, "%d.pkl" % k), "wb") as f:
            pickle.dump((s["cname"], r), f)


def _case_worker(spec_f, out_f):
    with open(spec_f, "rb") as f:
        s = pickle.load(f)
    fam = Family("sub")
    kw = dict(s["kw"])
    kw["check_mkldnn"] = False
    fam.case(s["cname"], s["op"], s["inputs"], s["attrs"], **kw)
    with open(out_f, "wb") as f:
        pickle.dump({"rec": fam.cases[s["cname"]], "arrays": fam.arrays}, f)


if __name__ == "__main__":
    if sys.argv[1] == "--case-worker":
        _case_worker(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "--error-worker":
        _error_worker(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "--replay-worker":
        _replay_worker(sys.argv[2], sys.argv[3])
