"""Shared harness for the model-level reference data generators (make_<family>.py).

A case is exported to <family dir>/<name>/ as <name>-symbol.json and <name>-0000.params
(exactly as MXNet writes them: HybridBlock.export or mx.model.save_checkpoint).  The files are then
re-loaded (mx.sym.load / mx.nd.load) and run through a plain symbol executor (sym.bind, CPU):

  * inference: grad_req='null', forward(is_train=False)                         -> expected.npz  out<i>
  * training (optional): grad_req='write' on every argument, forward(is_train=True),
    backward(out_grads=head grads)                                               -> expected_train.npz
    (out<i>, grad:<arg>, aux:<name> = aux states after the training forward), head_grads.npz hg<i>
  * float64 check: the same symbol with every float32 dtype attribute rewritten to float64
    ("__dtype__": "0" -> "1", "dtype": "float32" -> "float64"), params and float inputs cast to float64;
    the max abs / rel differences float32 vs float64 go into meta.json["tolerance"].

Run a generator with:
    MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=2 nice -n 10 /path/to/mxvenv/bin/python make_seq.py [case ...]
(a venv with mxnet==1.9.1, gluonnlp==0.10.0, numpy 1.23.5). Family "seq" is written next to this
script (tests/data/seq/models); the large cases (family "seq_large" and bert_12_768_12, too big
for git) under $GRAPHEXEC_REFDATA/<family> (default ~/graphexec-refdata); bert_12_768_12
(350 MB) is in family "seq" but ignored by git (.gitignore here).
(the environment variables are set by this module before mxnet is imported, if unset).
"""
import os
import sys

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
os.environ.setdefault("OMP_NUM_THREADS", "2")

import collections
import inspect
import json
import platform
import re
import shutil
import textwrap
import time
import traceback
import zlib

import numpy as np
import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.expanduser(os.environ.get("GRAPHEXEC_REFDATA", "~/graphexec-refdata"))


def family_dir(family):
    """Where a family's cases go: "seq" next to this script, the others under ROOT."""
    return HERE if family == "seq" else os.path.join(ROOT, family)
ENV_KEYS = ["MXNET_SUBGRAPH_BACKEND", "OMP_NUM_THREADS", "MXNET_MKLDNN_ENABLED", "MXNET_ENGINE_TYPE"]


def seed_of(name):
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def seed_all(name):
    s = seed_of(name)
    mx.random.seed(s % (2 ** 31 - 1))
    np.random.seed(s % (2 ** 32 - 1))
    return s


def env_used():
    return {k: os.environ.get(k) for k in ENV_KEYS if os.environ.get(k) is not None}


def versions():
    v = {"mxnet": mx.__version__, "numpy": np.__version__, "python": platform.python_version()}
    for m in ("gluoncv", "gluonnlp"):
        if m in sys.modules:
            v[m] = sys.modules[m].__version__
    try:
        v["mxnet_features"] = [f.name for f in mx.runtime.Features().values() if f.enabled]
    except Exception:
        pass
    return v


def op_counts_json(js):
    """Counts of op names in a symbol JSON dict, including nodes inside `subgraphs` of control-flow nodes."""
    cnt = collections.Counter()
    sub = collections.Counter()

    def walk(g, in_sub):
        for n in g["nodes"]:
            if n["op"] != "null":
                cnt[n["op"]] += 1
                if in_sub:
                    sub[n["op"]] += 1
            for sg in n.get("subgraphs", []) or []:
                walk(sg, True)
    walk(js, False)
    return dict(sorted(cnt.items())), dict(sorted(sub.items()))


def to64_json(text):
    """Rewrite every float32 dtype attribute of a symbol JSON to float64 (the 'cast the net' of a symbol)."""
    text = re.sub(r'"__dtype__": "0"', '"__dtype__": "1"', text)
    text = re.sub(r'"dtype": "float32"', '"dtype": "float64"', text)
    text = re.sub(r'"dtype": "\'float32\'"', '"dtype": "\'float64\'"', text)
    return text


def _diff(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return {"shape_mismatch": [list(a.shape), list(b.shape)]}
    if a.size == 0:
        return {"max_abs": 0.0, "max_rel": 0.0, "ref_max_abs": 0.0}
    fin = np.isfinite(a) & np.isfinite(b)
    r = {"nonfinite_count_f32": int((~np.isfinite(a)).sum()), "nonfinite_count_f64": int((~np.isfinite(b)).sum())}
    if not fin.any():
        r.update({"max_abs": None, "max_rel": None, "ref_max_abs": None})
        return r
    d = np.abs(a - b)[fin]
    bb = np.abs(b[fin])
    ref = float(bb.max())
    floor = max(ref * 1e-3, 1e-30)
    rel = d / np.maximum(bb, floor)
    r.update({"max_abs": float(d.max()), "ref_max_abs": ref,
              "max_rel": float(rel.max()),  # |a-b| / max(|b|, 1e-3*max|b|)
              "max_abs_over_ref_max": float(d.max() / ref) if ref > 0 else 0.0})
    return r


def summarize_tol(diffs):
    """Worst differences over the entries; entries whose float64 reference is ~0 (max |f64| < 1e-8, e.g.
    analytically-zero gradients that float32 only approximates by rounding noise) are excluded from the
    relative figures and listed in near_zero_refs."""
    vals = {k: d for k, d in diffs.items() if d.get("max_abs") is not None and "shape_mismatch" not in d}
    if not vals:
        return {}
    nz = sorted(k for k, d in vals.items() if d["ref_max_abs"] < 1e-8)
    rel = [d for k, d in vals.items() if k not in nz] or list(vals.values())
    r = {"worst_max_abs": max(d["max_abs"] for d in vals.values()),
         "worst_max_rel": max(d["max_rel"] for d in rel),
         "worst_max_abs_over_ref_max": max(d["max_abs_over_ref_max"] for d in rel)}
    if nz:
        r["near_zero_refs"] = nz
        r["near_zero_refs_max_abs"] = max(vals[k]["max_abs"] for k in nz)
    return r


def fmt_err(e):
    s = str(e)
    keep = []
    for ln in s.splitlines():
        if ln.strip().startswith("Stack trace") or ln.strip().startswith("[bt]"):
            break
        keep.append(ln)
    return ("%s: %s" % (type(e).__name__, "\n".join(keep).strip()))[:1500]


def load_model(prefix, json_text=None):
    sym = mx.sym.load_json(json_text) if json_text is not None else mx.sym.load(prefix + "-symbol.json")
    saved = mx.nd.load(prefix + "-0000.params")
    arg, aux = {}, {}
    for k, v in saved.items():
        tp, n = k.split(":", 1)
        (arg if tp == "arg" else aux)[n] = v
    return sym, arg, aux


def bind_run(sym, arg_params, aux_params, inputs, *, cast64=False, train=False, head_grads=None,
             nograd=()):
    """Plain symbol executor run. Returns dict(out=[...]) or with train: tout, grad, aux_after."""
    ctx = mx.cpu()
    args = sym.list_arguments()
    auxn = sym.list_auxiliary_states()

    def conv(a):
        a = np.asarray(a)
        if cast64 and a.dtype == np.float32:
            a = a.astype(np.float64)
        return mx.nd.array(a, ctx=ctx, dtype=a.dtype)

    argd = {}
    for n in args:
        if n in inputs:
            argd[n] = conv(inputs[n])
        elif n in arg_params:
            argd[n] = conv(arg_params[n].asnumpy())
        else:
            raise KeyError("argument %s neither an input nor a parameter" % n)
    auxd = {n: conv(aux_params[n].asnumpy()) for n in auxn}
    res = {}
    if not train:
        exe = sym.bind(ctx, args=argd, args_grad=None, grad_req="null", aux_states=auxd)
        outs = exe.forward(is_train=False)
        res["out"] = [o.asnumpy() for o in outs]
        return res
    req = {n: ("null" if n in nograd else "write") for n in args}
    grads = {n: mx.nd.zeros(argd[n].shape, ctx=ctx, dtype=argd[n].dtype) for n in args if req[n] == "write"}
    exe = sym.bind(ctx, args=argd, args_grad=grads, grad_req=req, aux_states=auxd)
    outs = exe.forward(is_train=True)
    res["out"] = [o.asnumpy() for o in outs]
    hgs = [mx.nd.array(np.asarray(h).astype(o.dtype), ctx=ctx, dtype=o.dtype) for h, o in zip(head_grads, outs)]
    exe.backward(out_grads=hgs)
    mx.nd.waitall()
    res["grad"] = {n: grads[n].asnumpy() for n in grads}
    res["aux_after"] = {n: exe.aux_dict[n].asnumpy() for n in auxn}
    return res


NMS_OPS = ("_contrib_box_nms", "box_nms", "_contrib_box_non_maximum_suppression")


def nms_inputs_check(json_text, js, argp, auxp, inputs):
    """f32 vs f64 of the tensor entering each box_nms node (detections before suppression), plus a count of tied
    scores among the 100 best valid candidates: ties let float noise reorder / swap the NMS output rows."""
    res = {}
    sym32 = mx.sym.load_json(json_text)
    sym64 = mx.sym.load_json(to64_json(json_text))
    for nid, n in enumerate(js["nodes"]):
        if n["op"] not in NMS_OPS:
            continue
        src = js["nodes"][n["inputs"][0][0]]
        idx = n["inputs"][0][1]
        cands = [src["name"] + "_output", src["name"] + "_output%d" % idx] if src["op"] != "null" else [src["name"]]
        r = {"nms_node": n["name"], "input_entry": cands[0]}
        try:
            outs32 = sym32.get_internals().list_outputs()
            nm = [c for c in cands if c in outs32][0]
            s32 = sym32.get_internals()[nm]
            s64 = sym64.get_internals()[nm]
            a = bind_run(s32, argp, auxp, {k: v for k, v in inputs.items() if k in s32.list_arguments()})["out"][0]
            b = bind_run(s64, argp, auxp, {k: v for k, v in inputs.items() if k in s64.list_arguments()},
                         cast64=True)["out"][0]
            r["f32_vs_f64"] = _diff(a, b)
            at = n.get("attrs", {})
            si = int(at.get("score_index", 1))
            vt = float(at.get("valid_thresh", 0))
            sc = a.reshape(-1, a.shape[-1])[:, si]
            sc = np.sort(sc[sc > vt])[::-1][:100]
            r["top100_valid_scores"] = int(sc.size)
            r["top100_tied_scores"] = int(sc.size - np.unique(sc).size)
        except Exception as e:
            r["error"] = fmt_err(e)
        res[n["name"]] = r
    return res


def file_sizes(d):
    return {f: os.path.getsize(os.path.join(d, f)) for f in sorted(os.listdir(d)) if f != "meta.json"}


class Case:
    """One model case. Usage:

        c = Case("seq", "lstm_2l_bidir", builder_fn)     # builder source goes into meta.json
        ... export into c.prefix (HybridBlock.export(c.prefix) or mx.model.save_checkpoint(c.prefix, 0, ...))
        c.record(inputs, train=True, ...)
    """

    def __init__(self, family, name, build_fn=None, code=None):
        self.family, self.name = family, name
        self.dir = os.path.join(family_dir(family), name)
        if os.path.isdir(self.dir):
            shutil.rmtree(self.dir)
        os.makedirs(self.dir)
        self.prefix = os.path.join(self.dir, name)
        self.code = code if code is not None else (textwrap.dedent(inspect.getsource(build_fn)) if build_fn else "")
        self.t0 = time.time()

    def record(self, inputs, *, train=False, f64=True, f64_train=True, nograd=(), notes=None, extra=None,
               input_notes=None, large_mb=40.0, sym_suffix="", only_out0=False, save_inputs=True):
        """inputs: OrderedDict argname -> np array. sym_suffix: '' for <name>-symbol.json, '_T5' for
        <name>_T5-symbol.json (extra symbols sharing the same params); npz names get the same suffix."""
        sfx = sym_suffix
        sym_file = self.prefix + sfx + "-symbol.json"
        with open(sym_file) as f:
            json_text = f.read()
        js = json.loads(json_text)
        sym, argp, auxp = load_model(self.prefix, json_text)
        meta = {"family": self.family, "name": self.name + sfx, "symbol_file": os.path.basename(sym_file),
                "params_file": os.path.basename(self.prefix) + "-0000.params"}
        meta["inputs"] = {k: {"shape": list(np.shape(v)), "dtype": np.asarray(v).dtype.name} for k, v in inputs.items()}
        if input_notes:
            meta["input_notes"] = input_notes
        meta["list_arguments"] = sym.list_arguments()
        meta["list_auxiliary_states"] = sym.list_auxiliary_states()
        meta["list_outputs"] = sym.list_outputs()
        meta["params"] = {("arg:" if k in argp else "aux:") + k: list(v.shape) for k, v in
                          list(argp.items()) + list(auxp.items())}
        meta["num_params"] = int(sum(int(np.prod(v.shape)) for v in list(argp.values()) + list(auxp.values())))
        unused = sorted(set(argp) - set(sym.list_arguments()))
        if unused:
            meta["params_not_in_symbol"] = unused
        ops, subops = op_counts_json(js)
        meta["ops"] = ops
        meta["num_op_nodes"] = int(sum(ops.values()))
        if subops:
            meta["ops_in_subgraphs"] = subops
        meta["build_code"] = self.code
        meta["env"] = env_used()
        meta["versions"] = versions()
        meta["executor"] = ("sym.bind(mx.cpu(), args=inputs+arg params, aux_states=aux params, grad_req='null'); "
                            "forward(is_train=False)")
        if notes:
            meta["notes"] = notes
        if extra:
            meta.update(extra)

        if save_inputs:
            np.savez(os.path.join(self.dir, "inputs%s.npz" % sfx), **inputs)
        # ---- inference
        r = bind_run(sym, argp, auxp, inputs)
        outs = r["out"]
        if only_out0:
            outs = outs[:1]
            meta["expected_only_out0"] = True
        np.savez(os.path.join(self.dir, "expected%s.npz" % sfx), **{"out%d" % i: o for i, o in enumerate(outs)})
        meta["outputs"] = [{"name": n, "shape": list(o.shape), "dtype": o.dtype.name,
                            "finite": bool(np.isfinite(o).all()) if o.dtype.kind == "f" else True,
                            "absmax": float(np.abs(o).max()) if o.size and o.dtype.kind == "f" else None}
                           for n, o in zip(sym.list_outputs(), r["out"])]
        print("  [%s%s] inference ok: %s" % (self.name, sfx, [tuple(o.shape) for o in r["out"]]), flush=True)
        tol = {}
        if f64:
            try:
                sym64, _, _ = load_model(self.prefix, to64_json(json_text))
                r64 = bind_run(sym64, argp, auxp, inputs, cast64=True)
                diffs = {"out%d" % i: _diff(a, b) for i, (a, b) in enumerate(zip(r["out"], r64["out"]))}
                tol["inference_f32_vs_f64"] = diffs
                tol["inference_summary"] = summarize_tol(diffs)
                tol["f64_output_dtypes"] = [o.dtype.name for o in r64["out"]]
            except Exception as e:
                tol["f64_error"] = fmt_err(e)
            print("  [%s%s] f64: %s" % (self.name, sfx, tol.get("inference_summary", tol.get("f64_error"))), flush=True)
        else:
            tol["f64_skipped"] = f64 if isinstance(f64, str) else "not run"
        if any(n["op"] in NMS_OPS for n in js["nodes"]):
            tol["before_nms"] = nms_inputs_check(json_text, js, argp, auxp, inputs)
            print("  [%s%s] before nms: %s" % (self.name, sfx, {k: (v.get("f32_vs_f64", {}).get("max_abs_over_ref_max"), v.get("top100_tied_scores"), v.get("error", "")[:200]) for k, v in tol["before_nms"].items()}), flush=True)
        # ---- training
        if train:
            rng = np.random.RandomState(seed_of(self.name + sfx + "/head_grads"))
            # output shapes in training mode can differ: get them from a training forward-only bind first
            hg = {}
            try:
                tr0 = bind_run(sym, argp, auxp, inputs, train=True,
                               head_grads=[np.zeros(o.shape, np.float32) for o in r["out"]], nograd=nograd)
                for i, o in enumerate(tr0["out"]):
                    hg["hg%d" % i] = rng.standard_normal(o.shape).astype(np.float32)
                tr = bind_run(sym, argp, auxp, inputs, train=True, head_grads=[hg["hg%d" % i] for i in range(len(hg))],
                              nograd=nograd)
                np.savez(os.path.join(self.dir, "head_grads%s.npz" % sfx), **hg)
                d = {"out%d" % i: o for i, o in enumerate(tr["out"])}
                d.update({"grad:" + k: v for k, v in tr["grad"].items()})
                d.update({"aux:" + k: v for k, v in tr["aux_after"].items()})
                np.savez(os.path.join(self.dir, "expected_train%s.npz" % sfx), **d)
                meta["train"] = {"executor": "sym.bind(..., args_grad=zeros, grad_req='write' for every argument%s); "
                                             "forward(is_train=True); backward(out_grads=[hg<i>])" %
                                             ((" except " + ", ".join(nograd)) if nograd else ""),
                                 "grad_args": sorted(tr["grad"].keys()),
                                 "head_grads": "np.random.RandomState(crc32('%s/head_grads')).standard_normal(shape) per output, float32" % (self.name + sfx),
                                 "aux_entries": "aux:<name> = aux state values after the training forward (BatchNorm moving stats update in place)"}
                print("  [%s%s] train ok" % (self.name, sfx), flush=True)
                if f64 and f64_train and "f64_error" not in tol:
                    try:
                        tr64 = bind_run(sym64, argp, auxp, inputs, cast64=True, train=True,
                                        head_grads=[hg["hg%d" % i] for i in range(len(hg))], nograd=nograd)
                        diffs = {"out%d" % i: _diff(a, b) for i, (a, b) in enumerate(zip(tr["out"], tr64["out"]))}
                        diffs.update({"grad:" + k: _diff(tr["grad"][k], tr64["grad"][k]) for k in tr["grad"]})
                        tol["train_f32_vs_f64"] = diffs
                        tol["train_summary"] = summarize_tol(diffs)
                    except Exception as e:
                        tol["f64_train_error"] = fmt_err(e)
                    print("  [%s%s] f64 train: %s" % (self.name, sfx, tol.get("train_summary", tol.get("f64_train_error"))), flush=True)
            except Exception as e:
                meta["train_error"] = fmt_err(e)
                print("  [%s%s] TRAIN ERROR %s" % (self.name, sfx, meta["train_error"][:300]), flush=True)
        meta["tolerance"] = tol
        meta["tolerance_method"] = ("float64 run = same symbol JSON with float32 dtype attrs rewritten to float64, params "
                                    "and float32 inputs cast to float64; max_rel = max |f32-f64| / max(|f64|, 1e-3*max|f64|)")
        meta["file_sizes"] = file_sizes(self.dir)
        total = sum(meta["file_sizes"].values())
        meta["total_bytes"] = total
        psize = os.path.getsize(self.prefix + "-0000.params")
        meta["large"] = psize > large_mb * 1e6
        meta["generation_seconds"] = round(time.time() - self.t0, 1)
        with open(os.path.join(self.dir, "meta%s.json" % sfx), "w") as f:
            json.dump(meta, f, indent=1, sort_keys=False, default=str)
        print("  [%s%s] done: %.1f MB, %.0fs" % (self.name, sfx, total / 1e6, time.time() - self.t0), flush=True)
        return meta


def fail_record(family, name, err, code=""):
    d = os.path.join(family_dir(family), name)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(family_dir(family), exist_ok=True)
    p = os.path.join(family_dir(family), "_failures.json")
    fails = json.load(open(p)) if os.path.exists(p) else {}
    fails[name] = {"error": err, "code": code}
    json.dump(fails, open(p, "w"), indent=1)


def clear_failure(family, name):
    p = os.path.join(family_dir(family), "_failures.json")
    if os.path.exists(p):
        fails = json.load(open(p))
        if name in fails:
            del fails[name]
            json.dump(fails, open(p, "w"), indent=1)


def reset_names():
    """Fresh MXNet/Gluon name counters, so auto-generated names (bertmodel0_, yolov30_, ...) do not depend on which
    cases ran before in the same process."""
    mx.name.NameManager._current.value = mx.name.NameManager()


def run_cases(family, cases, argv):
    """cases: OrderedDict name -> fn(); argv: selected names (default all)."""
    sel = argv or list(cases)
    for n in sel:
        print("== %s/%s" % (family, n), flush=True)
        try:
            reset_names()
            cases[n]()
            clear_failure(family, n)
        except Exception as e:
            traceback.print_exc()
            fail_record(family, n, fmt_err(e))
