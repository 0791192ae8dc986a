"""Reference data for the `seq` family (RNN, sequence ops, attention helpers, ranges, sorting, ...).

    MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=1 nice -n 10 /path/to/mxvenv/bin/python make_seq.py

(common.py is the shared harness; it writes seq.json and seq.npz next to it.)
"""
import sys
import os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa

F = Family("seq")
f32 = np.float32


def R(name):
    return rng_for(name)


# ============================================================================ RNN
GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def rnn_layout(mode, I, H, L, D, P=None):
    """MXNet's flat parameter layout: all weights (layer-major, then direction, then i2h, h2h[, h2r]),
    then all biases (layer-major, then direction, then i2h, h2h)."""
    G = GATES[mode]
    out_h = P if P else H
    entries, off = [], 0
    for l in range(L):
        for d in range(D):
            isz = I if l == 0 else D * out_h
            for nm, shp in [("i2h_weight", (G * H, isz)), ("h2h_weight", (G * H, out_h))] + \
                    ([("h2r_weight", (P, H))] if P else []):
                n = int(np.prod(shp))
                entries.append({"name": "l%d_d%d_%s" % (l, d, nm), "offset": off, "shape": list(shp)})
                off += n
    for l in range(L):
        for d in range(D):
            for nm in ["i2h_bias", "h2h_bias"]:
                entries.append({"name": "l%d_d%d_%s" % (l, d, nm), "offset": off, "shape": [G * H]})
                off += G * H
    return entries, off


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_rnn(mode, x, params, h0, c0, H, L, D, P=None, seqlen=None, clip=None, clip_nan=False):
    """float64 numpy re-implementation used to verify the layout and semantics."""
    x = x.astype(np.float64)
    params = params.astype(np.float64)
    T, N, I = x.shape
    ent, tot = rnn_layout(mode, I, H, L, D, P)
    assert tot == params.size, (tot, params.size)
    W = {e["name"]: params[e["offset"]:e["offset"] + int(np.prod(e["shape"]))].reshape(e["shape"]) for e in ent}
    inp = x
    hys, cys = [], []
    lens = np.full(N, T) if seqlen is None else np.asarray(seqlen).astype(int)
    for l in range(L):
        outs = []
        for d in range(D):
            k = l * D + d
            h = h0[k].astype(np.float64).copy()
            c = c0[k].astype(np.float64).copy() if c0 is not None else None
            wi, wh = W["l%d_d%d_i2h_weight" % (l, d)], W["l%d_d%d_h2h_weight" % (l, d)]
            bi, bh = W["l%d_d%d_i2h_bias" % (l, d)], W["l%d_d%d_h2h_bias" % (l, d)]
            wr = W.get("l%d_d%d_h2r_weight" % (l, d))
            out = np.zeros((T, N, h.shape[-1]))
            hfin = h.copy()
            cfin = c.copy() if c is not None else None
            for n in range(N):
                hn = h[n].copy()
                cn = c[n].copy() if c is not None else None
                steps = range(lens[n]) if d == 0 else range(lens[n] - 1, -1, -1)
                for t in steps:
                    xi = inp[t, n] @ wi.T + bi
                    hh = hn @ wh.T + bh
                    if mode == "rnn_relu":
                        hn = np.maximum(xi + hh, 0)
                    elif mode == "rnn_tanh":
                        hn = np.tanh(xi + hh)
                    elif mode == "lstm":
                        g = xi + hh
                        i_, f_, g_, o_ = np.split(g, 4)
                        cn = sigmoid(f_) * cn + sigmoid(i_) * np.tanh(g_)
                        if clip is not None:
                            cn = np.clip(cn, clip[0], clip[1])
                        hn = sigmoid(o_) * np.tanh(cn)
                        if wr is not None:
                            hn = hn @ wr.T
                    elif mode == "gru":
                        xr, xz, xn = np.split(xi, 3)
                        hr, hz, hn_ = np.split(hh, 3)
                        r = sigmoid(xr + hr)
                        z = sigmoid(xz + hz)
                        nn_ = np.tanh(xn + r * hn_)
                        hn = (1 - z) * nn_ + z * hn
                    out[t, n] = hn
                hfin[n] = hn
                if cfin is not None:
                    cfin[n] = cn
            outs.append(out)
            hys.append(hfin)
            if cfin is not None:
                cys.append(cfin)
        inp = np.concatenate(outs, axis=-1)
    return inp, np.stack(hys), (np.stack(cys) if cys else None)


def rnn_case(cname, mode, T=3, N=2, I=4, H=5, L=1, D=1, P=None, state_outputs=True, seqlen=None,
             clip=None, clip_nan=None, arange_params=False, notes="", check_np=True, seqlen_dtype=np.int32):
    r = R(cname)
    ent, tot = rnn_layout(mode, I, H, L, D, P)
    x = r.uniform(-1, 1, (T, N, I)).astype(f32)
    params = (np.arange(tot, dtype=f32) * 0.01 - tot * 0.005).astype(f32) if arange_params else \
        r.uniform(-0.5, 0.5, tot).astype(f32)
    hsz = P if P else H
    h0 = r.uniform(-0.5, 0.5, (L * D, N, hsz)).astype(f32)
    c0 = r.uniform(-0.5, 0.5, (L * D, N, H)).astype(f32) if mode == "lstm" else None
    attrs = dict(state_size=H, num_layers=L, mode=mode, bidirectional=(D == 2), state_outputs=state_outputs)
    if P:
        attrs["projection_size"] = P
    if clip:
        attrs["lstm_state_clip_min"], attrs["lstm_state_clip_max"] = clip
    if clip_nan is not None:
        attrs["lstm_state_clip_nan"] = clip_nan
    inputs = [("data", x), ("parameters", params), ("state", h0)]
    if c0 is not None:
        inputs.append(("state_cell", c0))
    if seqlen is not None:
        attrs["use_sequence_length"] = True
        inputs.append(("sequence_length", np.asarray(seqlen, dtype=seqlen_dtype)))
    rec = F.case(cname, "RNN", inputs, attrs, partial=[{"in0": x.shape}], notes=notes)
    if rec is None or "outputs" not in rec:
        return rec
    rec["param_layout"] = {"entries": ent, "total": tot}
    if check_np:
        ref_o, ref_h, ref_c = np_rnn(mode, x, params, h0, c0, H, L, D, P, seqlen, clip)
        got = [F.arrays["%s/out%d" % (cname, i)] for i in range(len(rec["outputs"]))]
        chk = {"out0": float(np.abs(got[0] - ref_o).max())}
        if state_outputs:
            chk["out1"] = float(np.abs(got[1] - ref_h).max())
            if ref_c is not None:
                chk["out2"] = float(np.abs(got[2] - ref_c).max())
        rec["numpy_reference_max_abs_diff"] = chk
        rec["numpy_reference_agrees"] = bool(max(chk.values()) < 1e-4)
        print("    numpy reference diff", chk)
        if seqlen is not None or clip is not None:
            # what MXNet actually computed: the same RNN without sequence_length / without clipping
            ref_o, ref_h, ref_c = np_rnn(mode, x, params, h0, c0, H, L, D, P, None, None)
            chk2 = {"out0": float(np.abs(got[0] - ref_o).max())}
            if state_outputs:
                chk2["out1"] = float(np.abs(got[1] - ref_h).max())
                if ref_c is not None:
                    chk2["out2"] = float(np.abs(got[2] - ref_c).max())
            key = "ignoring_sequence_length" if seqlen is not None else "ignoring_clip"
            rec["numpy_reference_" + key + "_max_abs_diff"] = chk2
            print("    numpy reference", key, chk2)
            if max(chk2.values()) < 1e-4:
                rec["notes"] = (rec["notes"] + " MXNet 1.9.1 CPU silently IGNORES %s: outputs equal an RNN without it "
                                "(numpy reference with the documented semantics disagrees)." %
                                ("sequence_length" if seqlen is not None else "lstm_state_clip_min/max")).strip()
    return rec


rnn_case("rnn_relu_l1", "rnn_relu")
rnn_case("rnn_tanh_l2_bidir", "rnn_tanh", L=2, D=2)
rnn_case("rnn_tanh_no_state_outputs", "rnn_tanh", state_outputs=False,
         notes="with MXNET_MKLDNN_ENABLED=0 MXNet's native CPU RNN leaves out0 unwritten (zeros/garbage) when "
               "state_outputs=False; the recorded data is the default (oneDNN) path, verified by the numpy reference")
rnn_case("lstm_l1", "lstm")
rnn_case("lstm_l2_bidir", "lstm", L=2, D=2, T=4)
rnn_case("lstm_projection", "lstm", P=3, notes="projection_size=3: hidden/state outputs have size 3, cell state 5")
rnn_case("lstm_projection_l2_bidir", "lstm", P=3, L=2, D=2)
rnn_case("lstm_state_clip", "lstm", clip=(-0.15, 0.15), clip_nan=True,
         notes="lstm_state_clip_min/max clip the cell state after the update, before tanh for h")
rnn_case("lstm_state_clip_nan_false", "lstm", clip=(-0.3, 0.25), clip_nan=False)
rnn_case("gru_l1", "gru")
rnn_case("gru_l2_bidir", "gru", L=2, D=2)
rnn_case("lstm_seqlen", "lstm", T=4, N=3, seqlen=[4, 1, 2],
         notes="use_sequence_length=True with int32 sequence_length")
rnn_case("gru_seqlen_bidir", "gru", T=4, N=3, D=2, seqlen=[2, 4, 3])
rnn_case("rnn_tanh_seqlen", "rnn_tanh", T=3, N=2, seqlen=[3, 1])
rnn_case("lstm_layout_arange", "lstm", T=2, N=1, I=2, H=2,
         arange_params=True, notes="parameters = arange(48)*0.01-0.24: documents the flat layout (see param_layout)")
rnn_case("gru_layout_arange", "gru", T=2, N=1, I=2, H=2, arange_params=True)

F.error_case("rnn_data_rank2", "RNN", [("data", (3, 4), "float32"), ("parameters", (220,), "float32"),
                                       ("state", (1, 2, 5), "float32"), ("state_cell", (1, 2, 5), "float32")],
             dict(state_size=5, num_layers=1, mode="lstm"))
F.error_case("rnn_wrong_param_size", "RNN", [("data", (3, 2, 4), "float32"), ("parameters", (100,), "float32"),
                                             ("state", (1, 2, 5), "float32"), ("state_cell", (1, 2, 5), "float32")],
             dict(state_size=5, num_layers=1, mode="lstm"))
F.error_case("rnn_projection_gru", "RNN", [("data", (3, 2, 4), "float32"), ("parameters", (165,), "float32"),
                                           ("state", (1, 2, 5), "float32")],
             dict(state_size=5, num_layers=1, mode="gru", projection_size=3))
F.error_case("rnn_bad_mode", "RNN", [("data", (3, 2, 4), "float32"), ("parameters", (165,), "float32"),
                                     ("state", (1, 2, 5), "float32")],
             dict(state_size=5, num_layers=1, mode="transformer"))
F.error_case("rnn_float_seqlen", "RNN", [("data", (3, 2, 4), "float32"), ("parameters", (165,), "float32"),
                                         ("state", (1, 2, 5), "float32"), ("sequence_length", (2,), "float32", [3, 1])],
             dict(state_size=5, num_layers=1, mode="gru", use_sequence_length=True))
F.error_case("rnn_seqlen_too_long", "RNN", [("data", (3, 2, 4), "float32"), ("parameters", (165,), "float32"),
                                            ("state", (1, 2, 5), "float32"), ("sequence_length", (2,), "int32", [5, 1])],
             dict(state_size=5, num_layers=1, mode="gru", use_sequence_length=True),
             notes="sequence_length larger than T")

# ============================================================================ _rnn_param_concat
r = R("rpc")
F.case("rnn_param_concat_1d", "_internal._rnn_param_concat",
       [r.randn(6).astype(f32), r.randn(4).astype(f32), r.randn(3).astype(f32)], dict(dim=0, num_args=3),
       partial=[{"in0": (6,), "in1": (4,)}])
F.case("rnn_param_concat_2d_dim1", "_internal._rnn_param_concat",
       [r.randn(2, 3).astype(f32), r.randn(2, 5).astype(f32)], dict(dim=1, num_args=2),
       partial=[{"in0": (2, 3)}, {"in1": (2, 5)}])
F.error_case("rnn_param_concat_mismatch", "_internal._rnn_param_concat",
             [(None, (2, 3), "float32"), (None, (3, 5), "float32")], dict(dim=1, num_args=2))
# backward shape inference: an input with an unknown dim inferred from the known output (the reason this op exists).
# Legacy shape semantics: a dim of 0 = unknown dim; a missing shape = unknown ndim.
bi = {}
for opn, op in [("_rnn_param_concat", mx.sym._internal._rnn_param_concat), ("Concat", mx.sym.Concat)]:
    a, b = mx.sym.var("in0"), mx.sym.var("in1")
    for label, dim, given, outshape in [
            ("1d_in0_dim_unknown_via_RNN", 0, {"in0": (0,), "in1": (40,)}, None),
            ("1d_in0_missing_via_RNN", 0, {"in1": (40,)}, None),
            ("2d_dim1_in1_dim_unknown", 1, {"in0": (2, 3), "in1": (2, 0)}, (2, 8)),
            ("2d_dim1_in1_missing", 1, {"in0": (2, 3)}, (2, 8))]:
        c = op(a, b, dim=dim, num_args=2)
        if outshape is None:
            # the concat result feeds RNN's parameters input; RNN infers it as (220,) from data (3,2,4), lstm H=5
            t = mx.sym.RNN(data=mx.sym.var("data"), parameters=c, state=mx.sym.var("h"), state_cell=mx.sym.var("c"),
                           state_size=5, num_layers=1, mode="lstm")
            g = dict(given, data=(3, 2, 4))
        else:
            t = mx.sym.elemwise_add(c, mx.sym.var("out_shape"))
            g = dict(given, out_shape=outshape)
        res = infer_partial(t, g)
        res["note"] = "0 in a given/inferred shape = unknown dim (legacy shape semantics); null = unknown shape"
        bi["%s/%s" % (opn, label)] = res
F.extra["rnn_param_concat_backward_infer"] = bi
F.extra["rnn_param_concat_backward_infer_summary"] = (
    "_rnn_param_concat infers an input whose concat-axis dim is unknown (0) from the known output shape "
    "(e.g. in0 (0,) -> (180,) when RNN fixes the concat to (220,)); Concat leaves it 0. With the input shape "
    "entirely missing, both treat it as empty and infer a wrong output (sum of the known inputs), which then "
    "conflicts with the consumer: a legacy-shape quirk of MXNet 1.9.1.")

# ============================================================================ SequenceMask / Last / Reverse
r = R("seqops")
d3 = r.randn(4, 3, 2).astype(f32)
d3b = r.randn(3, 4, 2).astype(f32)
lens = np.array([1, 4, 2], dtype=f32)
lens_b = np.array([2, 3, 1], dtype=f32)
F.case("seqmask_no_len", "SequenceMask", [d3], dict())
F.case("seqmask_axis0", "SequenceMask", [d3, lens], dict(use_sequence_length=True), nograd=(1,))
F.case("seqmask_axis0_value", "SequenceMask", [d3, lens], dict(use_sequence_length=True, value=-1.5))
F.case("seqmask_axis1", "SequenceMask", [d3b, lens_b], dict(use_sequence_length=True, axis=1, value=7.0))
F.case("seqmask_int_len", "SequenceMask", [d3, lens.astype(np.int32)], dict(use_sequence_length=True),
       notes="int32 sequence_length")
F.case("seqmask_len0_and_over", "SequenceMask", [d3, np.array([0, 6, 3], f32)], dict(use_sequence_length=True),
       notes="length 0 masks everything; length > T masks nothing")
F.case("seqlast_no_len", "SequenceLast", [d3], dict())
F.case("seqlast_axis0", "SequenceLast", [d3, lens], dict(use_sequence_length=True))
F.case("seqlast_axis1", "SequenceLast", [d3b, lens_b], dict(use_sequence_length=True, axis=1))
F.case("seqlast_axis1_no_len", "SequenceLast", [d3b], dict(axis=1))
F.case("seqlast_4d", "SequenceLast", [r.randn(3, 2, 2, 2).astype(f32), np.array([3, 2], f32)],
       dict(use_sequence_length=True))
F.case("seqrev_no_len", "SequenceReverse", [d3], dict())
F.case("seqrev_axis0", "SequenceReverse", [d3, lens], dict(use_sequence_length=True))
F.case("seqrev_int_len", "SequenceReverse", [d3, np.array([3, 2, 4], np.int32)], dict(use_sequence_length=True))
F.error_case("seqrev_axis1", "SequenceReverse", [(None, (3, 4, 2), "float32"), (None, (3,), "float32", [1, 2, 3])],
             dict(use_sequence_length=True, axis=1), notes="SequenceReverse only supports axis 0")
F.error_case("seqmask_bad_len_shape", "SequenceMask", [(None, (4, 3, 2), "float32"), (None, (4,), "float32", [1, 2, 3, 4])],
             dict(use_sequence_length=True))
F.error_case("seqlast_len0", "SequenceLast", [(None, (4, 3, 2), "float32"), (None, (3,), "float32", [0, 2, 3])],
             dict(use_sequence_length=True), notes="sequence_length 0 -> index -1")
F.error_case("seqmask_axis2", "SequenceMask", [(None, (4, 3, 2), "float32"), (None, (3,), "float32", [1, 2, 3])],
             dict(use_sequence_length=True, axis=2))

# ============================================================================ interleaved attention matmuls
r = R("interleaved")
T, B, Hh, Dh = 4, 2, 2, 3
qkv = r.randn(T, B, 3 * Hh * Dh).astype(f32)
att = r.rand(B * Hh, T, T).astype(f32)
F.case("selfatt_qk", "contrib.interleaved_matmul_selfatt_qk", [qkv], dict(heads=Hh),
       notes="out[b*heads+h, i, j] = q_i.k_j / sqrt(head_dim); q,k,v interleaved per head in the last axis")
F.case("selfatt_qk_heads1", "contrib.interleaved_matmul_selfatt_qk", [r.randn(3, 2, 12).astype(f32)], dict(heads=1))
F.case("selfatt_valatt", "contrib.interleaved_matmul_selfatt_valatt", [qkv, att], dict(heads=Hh))
Tq, Tk = 3, 4
q = r.randn(Tq, B, Hh * Dh).astype(f32)
kv = r.randn(Tk, B, 2 * Hh * Dh).astype(f32)
att2 = r.rand(B * Hh, Tq, Tk).astype(f32)
F.case("encdec_qk", "contrib.interleaved_matmul_encdec_qk", [q, kv], dict(heads=Hh))
F.case("encdec_valatt", "contrib.interleaved_matmul_encdec_valatt", [kv, att2], dict(heads=Hh))
F.case("encdec_qk_heads3", "contrib.interleaved_matmul_encdec_qk",
       [r.randn(2, 1, 6).astype(f32), r.randn(5, 1, 12).astype(f32)], dict(heads=3))
F.error_case("selfatt_qk_bad_heads", "contrib.interleaved_matmul_selfatt_qk", [(None, (4, 2, 18), "float32")],
             dict(heads=4), notes="last dim not divisible by 3*heads")
F.error_case("selfatt_qk_rank2", "contrib.interleaved_matmul_selfatt_qk", [(None, (4, 18), "float32")], dict(heads=2))
F.error_case("encdec_valatt_bad_att", "contrib.interleaved_matmul_encdec_valatt",
             [(None, (4, 2, 12), "float32"), (None, (4, 3, 5), "float32")], dict(heads=2))

F.case("div_sqrt_dim_3d", "contrib.div_sqrt_dim", [r.randn(2, 3, 4).astype(f32)])
F.case("div_sqrt_dim_2d", "contrib.div_sqrt_dim", [r.randn(5, 16).astype(f32)])

# ============================================================================ ranges
F.case("arange_basic", "_internal._arange", [], dict(start=0, stop=5))
F.case("arange_step_repeat", "_internal._arange", [], dict(start=1, stop=7, step=1.5, repeat=2))
F.case("arange_stop_none", "_internal._arange", [], dict(start=5), notes="stop omitted: range [0, start)")
F.case("arange_int32", "_internal._arange", [], dict(start=-3, stop=4, step=2, dtype="int32"))
F.case("arange_float64", "_internal._arange", [], dict(start=-1, stop=1, step=0.3, dtype="float64"))
F.case("arange_negative_step", "_internal._arange", [], dict(start=3, stop=-2, step=-1.25))
F.case("arange_int64_repeat3", "_internal._arange", [], dict(start=0, stop=3, repeat=3, dtype="int64"))
# infer_range: stop taken from the consumer's shape
ext = {}
for nm, kw in [("infer_range_start2", dict(start=2, step=1, infer_range=True)),
               ("infer_range_step_half", dict(start=0.5, step=0.5, infer_range=True)),
               ("infer_range_repeat2", dict(start=0, step=1, repeat=2, infer_range=True))]:
    try:
        s = mx.sym._internal._arange(**kw)
        tied = mx.sym.elemwise_add(s, mx.sym.var("like"))
        rr = infer_partial(tied, {"like": (6,)})
        s_alone = infer_partial(s, {})
        exe = tied.simple_bind(mx.cpu(), grad_req="null", like=(6,))
        exe.arg_dict["like"][:] = 0
        o = exe.forward()[0].asnumpy()
        ext[nm] = {"attrs": op_node_attrs(s)[1], "alone": s_alone, "tied_to_shape_6": rr, "values_plus_zero": o.tolist()}
        F.arrays["%s/out0" % nm] = o
    except Exception as e:
        ext[nm] = {"attrs": kw, "error": "%s: %s" % (type(e).__name__, clean_msg(e))}
F.extra["arange_infer_range"] = ext
F.error_case("arange_step0", "_internal._arange", [], dict(start=0, stop=5, step=0))
F.error_case("arange_empty", "_internal._arange", [], dict(start=5, stop=0, step=1), notes="start > stop with step>0")
F.error_case("arange_repeat0", "_internal._arange", [], dict(start=0, stop=5, repeat=0))

r = R("arange_like")
dl = r.randn(2, 3, 4).astype(f32)
F.case("arange_like_full", "contrib.arange_like", [dl], dict())
F.case("arange_like_axis1_start_step", "contrib.arange_like", [dl], dict(axis=1, start=2, step=0.5))
F.case("arange_like_axis_neg_repeat", "contrib.arange_like", [dl], dict(axis=-1, repeat=2, start=1))
F.case("arange_like_full_repeat3", "contrib.arange_like", [r.randn(2, 3).astype(f32)], dict(repeat=3, step=-1))
F.case("arange_like_int_input", "contrib.arange_like", [r.randint(0, 5, (3, 2)).astype(np.int32)], dict(axis=0))
F.error_case("arange_like_bad_axis", "contrib.arange_like", [(None, (2, 3), "float32")], dict(axis=2))

r = R("shape")
F.case("shape_array_f32", "shape_array", [r.randn(2, 3, 4).astype(f32)], notes="int64 output")
F.case("shape_array_int", "shape_array", [r.randint(0, 5, (5,)).astype(np.int32)])
F.case("size_array_f32", "size_array", [r.randn(2, 3, 4).astype(f32)])
F.case("size_array_f64", "size_array", [r.randn(3, 1).astype(np.float64)])

lhs = r.randn(2, 3, 4).astype(f32)
F.case("reshape_like_full", "reshape_like", [lhs, r.randn(6, 4).astype(f32)])
F.case("reshape_like_ranges", "reshape_like", [lhs, r.randn(12, 5).astype(f32)],
       dict(lhs_begin=1, lhs_end=3, rhs_begin=0, rhs_end=1))
F.case("reshape_like_neg", "reshape_like", [r.randn(2, 3, 4).astype(f32), r.randn(5, 6, 2, 7).astype(f32)],
       dict(lhs_begin=-2, rhs_begin=1, rhs_end=3), notes="negative lhs_begin, lhs_end None")
F.case("reshape_like_prefix", "reshape_like", [r.randn(6, 4).astype(f32), r.randn(2, 3, 9).astype(f32)],
       dict(lhs_begin=0, lhs_end=1, rhs_begin=0, rhs_end=2))
F.error_case("reshape_like_size_mismatch", "reshape_like", [(None, (2, 3, 4), "float32"), (None, (5, 4), "float32")])
F.error_case("reshape_like_bad_range", "reshape_like", [(None, (2, 3, 4), "float32"), (None, (6, 4), "float32")],
             dict(lhs_begin=2, lhs_end=1))

# ============================================================================ topk / sort / argsort
r = R("topk")
tk = r.permutation(24).reshape(4, 6).astype(f32) * 0.5 - 3  # no ties
tk3 = r.permutation(24).reshape(2, 3, 4).astype(f32)
for rt in ["value", "indices", "mask", "both"]:
    F.case("topk_%s_k2" % rt, "topk", [tk], dict(k=2, ret_typ=rt))
F.case("topk_ascend_k3", "topk", [tk], dict(k=3, is_ascend=True, ret_typ="both"))
F.case("topk_axis0", "topk", [tk3], dict(k=2, axis=0, ret_typ="both"))
F.case("topk_axis1_mask", "topk", [tk3], dict(k=2, axis=1, ret_typ="mask"))
F.case("topk_axis_none", "topk", [tk3], dict(k=5, axis=None, ret_typ="both"), notes="axis=None: flattened")
F.case("topk_axis_none_mask", "topk", [tk3], dict(k=3, axis=None, ret_typ="mask"))
F.case("topk_indices_int32", "topk", [tk], dict(k=2, ret_typ="indices", dtype="int32"))
F.case("topk_both_float64_idx", "topk", [tk], dict(k=2, ret_typ="both", dtype="float64"))
F.case("topk_indices_int64", "topk", [tk], dict(k=2, ret_typ="indices", dtype="int64"))
F.case("topk_k0_all", "topk", [tk], dict(k=0, ret_typ="both"), notes="k<1: full sort")
F.case("topk_ties", "topk", [np.array([[1, 3, 3, 2, 3, 1]], f32)], dict(k=3, ret_typ="both"),
       notes="ties: which index wins")
F.case("topk_int_input", "topk", [r.randint(0, 100, (3, 5)).astype(np.int32)], dict(k=2, ret_typ="both", dtype="int32"))
F.error_case("topk_k_too_big", "topk", [(None, (4, 6), "float32")], dict(k=7))
F.error_case("topk_bad_axis", "topk", [(None, (4, 6), "float32")], dict(k=2, axis=2))
F.error_case("topk_bad_ret_typ", "topk", [(None, (4, 6), "float32")], dict(k=2, ret_typ="foo"))
F.error_case("topk_mask_int_dtype", "topk", [(None, (4, 6), "float32")], dict(k=2, ret_typ="mask", dtype="int32"))

F.case("sort_last", "sort", [tk], notes="axis not given: forward fine, but backward raises (the _backward_topk node gets "
                                      "axis=\"\" from sort's default attrs): MXNet bug; see sort_last_explicit_axis")
F.case("sort_last_explicit_axis", "sort", [tk], dict(axis=-1), notes="same as sort_last with axis=-1 spelled out: backward works")
F.case("sort_axis0_desc", "sort", [tk3], dict(axis=0, is_ascend=False))
F.case("sort_axis_none", "sort", [tk3], dict(axis=None))
F.case("argsort_last", "argsort", [tk])
F.case("argsort_axis1_desc_int32", "argsort", [tk3], dict(axis=1, is_ascend=False, dtype="int32"))
F.case("argsort_axis_none", "argsort", [tk3], dict(axis=None))
F.case("argsort_ties", "argsort", [np.array([[2, 1, 2, 1, 2, 0, 1]], f32)], dict(), notes="ties: stability")
F.case("argsort_ties_desc", "argsort", [np.array([[2, 1, 2, 1, 2, 0, 1]], f32)], dict(is_ascend=False))
F.case("sort_nan", "sort", [np.array([[1, np.nan, -2, 3]], f32)], grad=False, notes="NaN placement")
F.error_case("sort_bad_axis", "sort", [(None, (4, 6), "float32")], dict(axis=-3))

# ============================================================================ batch_take / index_array
r = R("batch_take")
F.case("batch_take_int32", "batch_take", [r.randn(4, 5).astype(f32), np.array([0, 4, 2, 1], np.int32)])
rec = F.case("batch_take_3d", "batch_take", [r.randn(3, 2, 4).astype(f32), np.array([0, 3, 2, 1, 3, 0], np.int32)],
             notes="a is 3-D: shape inference wants one index per row of the last axis (6), but the kernel "
                   "strides rows by a.size/a.shape[0] (=8): out[k] = a.flat[k*8 + idx[k]], reading out of bounds "
                   "for k>=3. out0 here is GARBAGE past element 2 (not reproducible); MXNet misbehaviour.")
if rec:
    # drop the garbage: out0 beyond element 2 and the gradient (out-of-bounds scatter) are not reproducible
    for k in [k for k in F.arrays if k.startswith("batch_take_3d/") and not k.startswith("batch_take_3d/in")]:
        F.arrays.pop(k)
    rec["unreliable_outputs"] = ["out0", "grad0"]
    rec["notes"] += " Arrays out0/grad0 are not stored."
F.error_case("batch_take_float_idx", "batch_take", [(None, (2, 3), "float32"), (None, (2,), "float32", [2, 1])],
             notes="float indices")
F.error_case("batch_take_int64_idx", "batch_take", [(None, (2, 3), "float32"), (None, (2,), "int64", [2, 1])],
             notes="int64 indices")
F.error_case("batch_take_oob", "batch_take", [(None, (4, 5), "float32"), (None, (4,), "int32", [0, 5, -1, 7])],
             notes="out of range indices")
F.error_case("batch_take_len_mismatch", "batch_take", [(None, (4, 5), "float32"), (None, (3,), "int32", [0, 1, 2])])

r = R("index_array")
F.case("index_array_all", "contrib.index_array", [r.randn(2, 3).astype(f32)], notes="int64 output (..., ndim)")
F.case("index_array_axes1", "contrib.index_array", [r.randn(2, 3, 2).astype(f32)], dict(axes=(1,)))
F.case("index_array_axes_neg0", "contrib.index_array", [r.randint(0, 3, (2, 3, 2)).astype(np.int32)], dict(axes=(-1, 0)))
F.error_case("index_array_bad_axis", "contrib.index_array", [(None, (2, 3), "float32")], dict(axes=(2,)))

# ============================================================================ linspace / eye / cumsum
F.case("linspace_endpoint", "_internal._linspace", [], dict(start=0, stop=1, num=5))
F.case("linspace_no_endpoint", "_internal._linspace", [], dict(start=-2, stop=2, num=4, endpoint=False))
F.case("linspace_int32", "_internal._linspace", [], dict(start=0, stop=10, num=4, dtype="int32"))
F.case("linspace_num1", "_internal._linspace", [], dict(start=3, stop=7, num=1))
F.case("linspace_float64", "_internal._linspace", [], dict(start=1, stop=0, num=6, dtype="float64"))
F.error_case("linspace_num_neg", "_internal._linspace", [], dict(start=0, stop=1, num=-1))
F.case("eye_3", "_internal._eye", [], dict(N=3))
F.case("eye_3x4_k1", "_internal._eye", [], dict(N=3, M=4, k=1))
F.case("eye_4x3_kneg2", "_internal._eye", [], dict(N=4, M=3, k=-2))
F.case("eye_int32_k5", "_internal._eye", [], dict(N=2, M=3, k=5, dtype="int32"), notes="k beyond M: all zeros")
F.case("eye_float64", "_internal._eye", [], dict(N=2, dtype="float64"))
F.error_case("eye_negative_N", "_internal._eye", [], dict(N=-1))

r = R("cumsum")
c3 = r.randn(2, 3, 4).astype(f32)
F.case("cumsum_flat", "cumsum", [c3], dict(), notes="axis None: flattened; canonical op name _np_cumsum")
F.case("cumsum_axis1", "cumsum", [c3], dict(axis=1))
F.case("cumsum_axis2_f64", "cumsum", [c3], dict(axis=2, dtype="float64"))
F.case("cumsum_axis_neg", "cumsum", [c3], dict(axis=-1), notes="negative axis")
F.case("cumsum_int32", "cumsum", [r.randint(-5, 5, (3, 4)).astype(np.int32)], dict(axis=0))
F.case("cumsum_int32_to_f32", "cumsum", [r.randint(-5, 5, (3, 4)).astype(np.int32)], dict(axis=1, dtype="float32"))
F.error_case("cumsum_bad_axis", "cumsum", [(None, (2, 3), "float32")], dict(axis=3))

F.save()
