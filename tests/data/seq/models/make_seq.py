"""Sequence-model reference exports (family 'seq', plus the benchmark-size LSTM LM in 'seq_large').

    MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=2 nice -n 10 /path/to/mxvenv/bin/python make_seq.py [case ...]

(see common.py for the venv and where the files go)
"""
import collections
import sys

from common import *  # noqa: F401,F403  (sets env vars before importing mxnet)
from common import Case, run_cases, seed_all, seed_of
import numpy as np
import mxnet as mx
from mxnet import gluon

FAM = "seq"
T, N, C, H = 5, 3, 4, 6


def rs(name):
    return np.random.RandomState(seed_of(name + "/inputs"))


def perturb_params(net, name):
    """Non-trivial biases / norm affine params (default inits are zeros / ones)."""
    rng = np.random.RandomState(seed_of(name + "/perturb"))
    for pname, p in sorted(net.collect_params().items()):
        if p.grad_req == "null":
            continue
        if pname.endswith("bias") or pname.endswith("beta"):
            p.set_data(mx.nd.array(rng.uniform(-0.1, 0.1, p.shape)))
        elif pname.endswith("gamma"):
            p.set_data(mx.nd.array(1 + rng.uniform(-0.1, 0.1, p.shape)))


def gluon_export(case, net, args, perturb=None):
    """args: list of np arrays (or None) or nested lists of them, flattened in order as Gluon does.
    One imperative forward (finishes deferred init), optional perturb_params, hybridize, one forward, export.
    Returns OrderedDict of MXNet input name -> array (Gluon names inputs data / data<i> over the flattened
    argument list, None entries included)."""
    flat = []

    def fl(a):
        if isinstance(a, (list, tuple)):
            for x in a:
                fl(x)
        else:
            flat.append(a)
    for a in args:
        fl(a)

    def to_nd(a):
        if a is None:
            return None
        if isinstance(a, (list, tuple)):
            return [to_nd(x) for x in a]
        return mx.nd.array(a, dtype=a.dtype)
    net(*[to_nd(a) for a in args])
    mx.nd.waitall()
    if perturb:
        perturb_params(net, perturb)
    net.hybridize()
    out = net(*[to_nd(a) for a in args])
    mx.nd.waitall()
    net.export(case.prefix, epoch=0)
    names = ["data"] if len(flat) == 1 else ["data%d" % i for i in range(len(flat))]
    return collections.OrderedDict((n, a) for n, a in zip(names, flat) if a is not None), out

# ----------------------------------------------------------------------------------------- gluon.rnn layers
def rnn_layer_case(name, mode, *, layout="TNC", num_layers=1, bidir=False, states=True, proj=None,
                   seqlen=False, train=True, notes=None, activation=None):
    def build():
        seed_all(name)
        D = 2 if bidir else 1
        kw = dict(num_layers=num_layers, layout=layout, bidirectional=bidir, input_size=C,
                  i2h_bias_initializer=mx.init.Uniform(0.1), h2h_bias_initializer=mx.init.Uniform(0.1))
        if seqlen:
            kw["use_sequence_length"] = True
        if mode == "lstm":
            if proj:
                kw["projection_size"] = proj
            layer = gluon.rnn.LSTM(H, prefix=name + "_", **kw)
        elif mode == "gru":
            layer = gluon.rnn.GRU(H, prefix=name + "_", **kw)
        else:
            layer = gluon.rnn.RNN(H, activation=activation, prefix=name + "_", **kw)
        layer.initialize(mx.init.Xavier())
        return layer, D
    case = Case(FAM, name, build)
    layer, D = build()
    r = rs(name)
    x = r.uniform(-1, 1, (T, N, C) if layout == "TNC" else (N, T, C)).astype(np.float32)
    args = [x]
    if not states and seqlen:
        raise ValueError("seqlen case needs states")
    if not states:
        args.append(None)
    if states:
        hsz = proj if proj else H
        st = [r.uniform(-0.5, 0.5, (num_layers * D, N, hsz)).astype(np.float32)]
        if mode == "lstm":
            st.append(r.uniform(-0.5, 0.5, (num_layers * D, N, H)).astype(np.float32))
        args.append(st)
    if seqlen:
        if not states:
            raise ValueError("seqlen case needs states")
        args.append(np.array([T, 2, 4][:N], dtype=np.float32))
    inputs, _ = gluon_export(case, layer, args)
    inote = {"data0" if "data0" in inputs else "data": "input sequence, layout " + layout}
    if states:
        inote["data1"] = "begin state h (L*D, N, %s)" % ("P" if proj else "H")
        if mode == "lstm":
            inote["data2"] = "begin state c (L*D, N, H)"
    if seqlen:
        inote["data%d" % (len(inputs) - 1)] = "sequence_length (N,), float32"
    case.record(inputs, train=train, notes=notes, input_notes=inote,
                extra={"case_args": dict(mode=mode, layout=layout, num_layers=num_layers, bidirectional=bidir,
                                         explicit_begin_states=states, projection_size=proj,
                                         use_sequence_length=seqlen, activation=activation,
                                         T=T, N=N, input_size=C, hidden_size=H),
                       "gluon_layer": {"lstm": "gluon.rnn.LSTM", "gru": "gluon.rnn.GRU"}.get(mode, "gluon.rnn.RNN")})


def seq_cases():
    cs = collections.OrderedDict()
    seqlen_note = ("MXNet 1.9.1 CPU quirk: RNN use_sequence_length is silently ignored by the float32 oneDNN kernel "
                   "(outputs equal a full-length run); the float64 native kernel raises 'only available for cuDNN'. "
                   "expected.npz is what MXNet produces, i.e. the full-length result.")
    cs["lstm_tnc_2l"] = lambda: rnn_layer_case("lstm_tnc_2l", "lstm", num_layers=2)
    cs["lstm_ntc_bidir_2l"] = lambda: rnn_layer_case("lstm_ntc_bidir_2l", "lstm", layout="NTC", num_layers=2, bidir=True)
    cs["gru_tnc_bidir_2l"] = lambda: rnn_layer_case("gru_tnc_bidir_2l", "gru", num_layers=2, bidir=True)
    cs["gru_ntc"] = lambda: rnn_layer_case("gru_ntc", "gru", layout="NTC")
    cs["rnn_relu_tnc_bidir_2l"] = lambda: rnn_layer_case("rnn_relu_tnc_bidir_2l", "rnn_relu", num_layers=2, bidir=True,
                                                         activation="relu")
    cs["rnn_tanh_ntc_2l"] = lambda: rnn_layer_case("rnn_tanh_ntc_2l", "rnn_tanh", layout="NTC", num_layers=2,
                                                   activation="tanh")
    cs["rnn_relu_ntc"] = lambda: rnn_layer_case("rnn_relu_ntc", "rnn_relu", layout="NTC", activation="relu")
    cs["rnn_tanh_tnc_bidir"] = lambda: rnn_layer_case("rnn_tanh_tnc_bidir", "rnn_tanh", bidir=True, activation="tanh")
    cs["lstmp_tnc_2l"] = lambda: rnn_layer_case(
        "lstmp_tnc_2l", "lstm", num_layers=2, proj=4,
        notes="LSTM with projection_size=4 (LSTMP). MXNet 1.9.1 has no CPU training support for projection "
              "('No training support for LSTM with projection on CPU currently'): inference only.")
    cs["lstmp_ntc_bidir"] = lambda: rnn_layer_case("lstmp_ntc_bidir", "lstm", layout="NTC", bidir=True, proj=3,
                                                   notes="LSTMP bidirectional; inference only (see lstmp_tnc_2l)")
    cs["lstm_seqlen_tnc"] = lambda: rnn_layer_case("lstm_seqlen_tnc", "lstm", seqlen=True, notes=seqlen_note)
    # gluon.rnn.GRU/RNN(use_sequence_length=True) cannot be hybridized in 1.9.1 (Gluon passes state_cell to a
    # non-LSTM RNN: "Symbol.ComposeKeyword argument name state_cell not found"), so build it with mx.sym.RNN
    cs["gru_seqlen_bidir_sym"] = lambda: sym_rnn_seqlen_case("gru_seqlen_bidir_sym", "gru", bidir=True, notes=seqlen_note)
    cs["rnn_tanh_seqlen_sym"] = lambda: sym_rnn_seqlen_case("rnn_tanh_seqlen_sym", "rnn_tanh", num_layers=2,
                                                            notes=seqlen_note)
    cs["fused_rnn_cell_lstm"] = fused_rnn_cell_case
    cs["lstm_bucketing_lm"] = bucketing_lm_case
    cs["bert_12_768_12"] = bert_base_case
    cs["bert_small_mlm_nsp"] = bert_small_case
    cs["transformer_small"] = transformer_case
    cs["standard_lstm_lm"] = standard_lm_case
    cs["awd_lstm_lm"] = awd_lm_case
    cs["lstm_lm_650"] = lstm_lm_650_case
    return cs


def sym_rnn_seqlen_case(name, mode, *, num_layers=1, bidir=False, notes=None):
    def build():
        seed_all(name)
        D = 2 if bidir else 1
        data = mx.sym.Variable("data")  # (T, N, C)
        params = mx.sym.Variable(name + "_parameters")
        state = mx.sym.Variable("state")  # (L*D, N, H)
        seqlen = mx.sym.Variable("sequence_length")  # (N,)
        sym = mx.sym.RNN(data=data, parameters=params, state=state, sequence_length=seqlen, state_size=H,
                         num_layers=num_layers, bidirectional=bidir, mode=mode, state_outputs=True,
                         use_sequence_length=True, name=name)
        arg_shapes, _, _ = sym.infer_shape(data=(T, N, C), state=(num_layers * D, N, H), sequence_length=(N,))
        rng = np.random.RandomState(seed_of(name + "/params"))
        shp = dict(zip(sym.list_arguments(), arg_shapes))[name + "_parameters"]
        arg_params = {name + "_parameters": mx.nd.array(rng.uniform(-0.4, 0.4, shp).astype(np.float32))}
        return sym, arg_params, D
    case = Case(FAM, name, build)
    sym, arg_params, D = build()
    mx.model.save_checkpoint(case.prefix, 0, sym, arg_params, {})
    r = rs(name)
    inputs = collections.OrderedDict(
        data=r.uniform(-1, 1, (T, N, C)).astype(np.float32),
        state=r.uniform(-0.5, 0.5, (num_layers * D, N, H)).astype(np.float32),
        sequence_length=np.array([T, 2, 4][:N], dtype=np.float32))
    case.record(inputs, train=True, nograd=("sequence_length",), notes=notes,
                extra={"case_args": dict(mode=mode, num_layers=num_layers, bidirectional=bidir, T=T, N=N,
                                         input_size=C, hidden_size=H, use_sequence_length=True, layout="TNC")},
                input_notes={"data": "(T, N, C) layout TNC", "state": "begin state (L*D, N, H)",
                             "sequence_length": "(N,) float32"})


# ----------------------------------------------------------------------------------------- mx.rnn (symbolic)
def fused_rnn_cell_case():
    name = "fused_rnn_cell_lstm"

    def build():
        seed_all(name)
        data = mx.sym.Variable("data")  # (T, N, C)
        cell = mx.rnn.FusedRNNCell(H, num_layers=2, mode="lstm", bidirectional=True, get_next_state=True,
                                   prefix="fused_")
        outputs, states = cell.unroll(T, inputs=data, layout="TNC", merge_outputs=True)
        sym = mx.sym.Group([outputs] + list(states))
        # random parameters: the fused 'fused_parameters' vector (flat), sized by shape inference
        arg_shapes, _, _ = sym.infer_shape(data=(T, N, C))
        rng = np.random.RandomState(seed_of(name + "/params"))
        arg_params = {n: mx.nd.array(rng.uniform(-0.3, 0.3, s).astype(np.float32))
                      for n, s in zip(sym.list_arguments(), arg_shapes) if n != "data"}
        return sym, arg_params
    case = Case(FAM, name, build)
    sym, arg_params = build()
    mx.model.save_checkpoint(case.prefix, 0, sym, arg_params, {})
    x = rs(name).uniform(-1, 1, (T, N, C)).astype(np.float32)
    case.record(collections.OrderedDict(data=x), train=True,
                notes="mx.rnn.FusedRNNCell(6, num_layers=2, mode='lstm', bidirectional=True, get_next_state=True)"
                      ".unroll(5, layout='TNC', merge_outputs=True); begin states are _zeros nodes generated by "
                      "FusedRNNCell.begin_state; outputs = [output, h_n, c_n]; params: one flat vector "
                      "'fused_parameters' (RNN packed layout), uniform(-0.3,0.3)")


BUCKETS = [10, 5, 20]  # first = default (<name>-symbol.json); others saved as <name>_T<len>-symbol.json
LM_V, LM_E, LM_H, LM_L, LM_N = 30, 8, 10, 2, 3


def bucketing_lm_case():
    name = "lstm_bucketing_lm"

    def build():
        seed_all(name)
        stack = mx.rnn.SequentialRNNCell()
        for i in range(LM_L):
            stack.add(mx.rnn.LSTMCell(num_hidden=LM_H, prefix="lstm_l%d_" % i))

        def sym_gen(seq_len):
            data = mx.sym.Variable("data")
            label = mx.sym.Variable("softmax_label")
            embed = mx.sym.Embedding(data=data, input_dim=LM_V, output_dim=LM_E, name="embed")
            stack.reset()
            outputs, states = stack.unroll(seq_len, inputs=embed, merge_outputs=True)  # layout NTC
            pred = mx.sym.Reshape(outputs, shape=(-1, LM_H))
            pred = mx.sym.FullyConnected(data=pred, num_hidden=LM_V, name="pred")
            label = mx.sym.Reshape(label, shape=(-1,))
            pred = mx.sym.SoftmaxOutput(data=pred, label=label, name="softmax")
            return pred, ("data",), ("softmax_label",)
        return sym_gen
    case = Case(FAM, name, build)
    sym_gen = build()
    # parameters: shared by every bucket; shapes from the default bucket
    sym0, _, _ = sym_gen(BUCKETS[0])
    arg_shapes, _, _ = sym0.infer_shape(data=(LM_N, BUCKETS[0]), softmax_label=(LM_N, BUCKETS[0]))
    rng = np.random.RandomState(seed_of(name + "/params"))
    arg_params = {n: mx.nd.array(rng.uniform(-0.3, 0.3, s).astype(np.float32))
                  for n, s in zip(sym0.list_arguments(), arg_shapes) if n not in ("data", "softmax_label")}
    mx.model.save_checkpoint(case.prefix, 0, sym0, arg_params, {})
    for L in BUCKETS[1:]:
        s, _, _ = sym_gen(L)
        s.save("%s_T%d-symbol.json" % (case.prefix, L))
    for i, L in enumerate(BUCKETS):
        r = rs(name + "/T%d" % L)
        inputs = collections.OrderedDict(
            data=r.randint(0, LM_V, (LM_N, L)).astype(np.float32),
            softmax_label=r.randint(0, LM_V, (LM_N, L)).astype(np.float32))
        case.record(inputs, train=True, nograd=("data", "softmax_label"), sym_suffix="" if i == 0 else "_T%d" % L,
                    extra={"bucket_key": L, "default_bucket_key": BUCKETS[0],
                           "bucket_symbols": ["%s-symbol.json" % name] +
                                             ["%s_T%d-symbol.json" % (name, b) for b in BUCKETS[1:]]},
                    notes="mx.rnn bucketing LM (2 stacked mx.rnn.LSTMCell, unrolled, merge_outputs=True, layout NTC). "
                          "Begin states are _zeros(shape=(0, %d)) nodes generated by LSTMCell.begin_state. All bucket "
                          "symbols share %s-0000.params. SoftmaxOutput ignores head gradients in backward "
                          "(gradient = softmax - onehot(label))." % (LM_H, name),
                    input_notes={"data": "token ids (N, T) as float32", "softmax_label": "next-token ids (N, T) float32"})


# ----------------------------------------------------------------------------------------- GluonNLP
def make_bert_vocab(size):
    import gluonnlp
    # BERTVocab adds [UNK] [PAD] [CLS] [SEP] [MASK]
    counter = collections.Counter({"tok%d" % i: size - i for i in range(size - 5)})
    v = gluonnlp.vocab.BERTVocab(counter)
    assert len(v) == size, len(v)
    return v


def bert_inputs(name, B, L, V, M):
    r = rs(name)
    ids = r.randint(5, V, (B, L)).astype(np.float32)
    tt = np.zeros((B, L), np.float32)
    tt[:, L // 2:] = 1
    vl = np.array([L, L - 5][:B], np.float32)
    mp = np.stack([r.choice(int(v), M, replace=False) for v in vl]).astype(np.float32)
    return [ids, tt, vl, mp]


BERT_INOTE = {"data0": "token ids (B, L) float32", "data1": "token types (B, L) float32",
              "data2": "valid_length (B,) float32", "data3": "masked_positions (B, M) float32"}


def bert_base_case():
    name = "bert_12_768_12"

    def build():
        import gluonnlp
        seed_all(name)
        vocab = make_bert_vocab(1000)
        net, _ = gluonnlp.model.get_model("bert_12_768_12", dataset_name=None, vocab=vocab, pretrained=False,
                                          use_pooler=True, use_decoder=True, use_classifier=True)
        net.initialize(mx.init.Normal(0.02))
        return net
    case = Case(FAM, name, build)
    net = build()
    inputs, _ = gluon_export(case, net, bert_inputs(name, 2, 16, 1000, 3))
    case.record(inputs, train=False, input_notes=BERT_INOTE,
                notes="gluonnlp bert_12_768_12 architecture, random init Normal(0.02), vocab of 1000 tokens "
                      "(BERTVocab of 995 dummy tokens + 5 specials), dropout 0.1 (inert in inference). Outputs: "
                      "sequence (B,L,768), pooled (B,768), NSP logits (B,2), MLM logits (B,M,1000). Inference only.")


def bert_small_case():
    name = "bert_small_mlm_nsp"

    def build():
        import gluonnlp
        from gluonnlp.model import BERTEncoder, BERTModel
        seed_all(name)
        enc = BERTEncoder(num_layers=2, units=64, hidden_size=128, max_length=32, num_heads=2, dropout=0.0,
                          output_attention=False, output_all_encodings=False, activation="gelu",
                          layer_norm_eps=1e-12)
        net = BERTModel(enc, vocab_size=100, token_type_vocab_size=2, units=64, embed_size=64,
                        use_pooler=True, use_decoder=True, use_classifier=True)
        net.initialize(mx.init.Normal(0.02))
        return net
    case = Case(FAM, name, build)
    net = build()
    inputs, _ = gluon_export(case, net, bert_inputs(name, 2, 12, 100, 3), perturb=name)
    case.record(inputs, train=True, nograd=("data0", "data1", "data2", "data3"), input_notes=BERT_INOTE,
                notes="small BERT (2 layers, units 64, 2 heads, ffn 128, vocab 100, dropout 0) with pooler, NSP "
                      "classifier and MLM decoder (decoder weight tied to word embedding). Outputs: seq (B,L,64), "
                      "pooled (B,64), NSP (B,2), MLM (B,M,100).")


def transformer_case():
    name = "transformer_small"

    def build():
        import gluonnlp
        from gluonnlp.model.transformer import get_transformer_encoder_decoder
        from mxnet.gluon import nn, HybridBlock
        seed_all(name)

        class Seq2SeqTransformer(HybridBlock):
            """NMTModel.forward (a non-hybrid Block in gluonnlp) re-expressed as a HybridBlock: encoder over the
            source embedding, memory mask from src_valid_length, decoder over the target embedding, projection."""

            def __init__(self, src_vocab=40, tgt_vocab=50, units=32, **kw):
                super().__init__(**kw)
                with self.name_scope():
                    self.encoder, self.decoder, _ = get_transformer_encoder_decoder(
                        num_layers=2, num_heads=2, units=units, hidden_size=64, dropout=0.0,
                        max_src_length=20, max_tgt_length=20, scaled=True, prefix="transformer_")
                    self.src_embed = nn.Embedding(src_vocab, units, prefix="src_embed_")
                    self.tgt_embed = nn.Embedding(tgt_vocab, units, prefix="tgt_embed_")
                    self.tgt_proj = nn.Dense(tgt_vocab, flatten=False, prefix="tgt_proj_")

            def hybrid_forward(self, F, src, tgt, src_valid_length, tgt_valid_length):
                enc_out, _ = self.encoder(self.src_embed(src), None, src_valid_length)
                steps = F.contrib.arange_like(enc_out, axis=1)
                mem_mask = F.broadcast_lesser(steps.reshape((1, -1)), src_valid_length.reshape((-1, 1)))
                out, _, _ = self.decoder(self.tgt_embed(tgt), [enc_out, mem_mask], tgt_valid_length)
                return self.tgt_proj(out)
        net = Seq2SeqTransformer(prefix="nmt_")
        net.initialize(mx.init.Xavier())
        return net
    case = Case(FAM, name, build)
    net = build()
    r = rs(name)
    B, Ls, Lt = 2, 7, 6
    args = [r.randint(0, 40, (B, Ls)).astype(np.float32), r.randint(0, 50, (B, Lt)).astype(np.float32),
            np.array([7, 4], np.float32), np.array([6, 3], np.float32)]
    inputs, _ = gluon_export(case, net, args, perturb=name)
    case.record(inputs, train=True, nograd=("data0", "data1", "data2", "data3"),
                input_notes={"data0": "src ids (B, Ls)", "data1": "tgt ids (B, Lt)", "data2": "src_valid_length (B,)",
                             "data3": "tgt_valid_length (B,)"},
                notes="gluonnlp get_transformer_encoder_decoder(num_layers=2, num_heads=2, units=32, hidden_size=64, "
                      "dropout=0) wrapped in a HybridBlock equivalent of NMTModel.forward (NMTModel itself is a plain "
                      "Block and cannot be exported). Output: target logits (B, Lt, 50).")


def lm_inputs(name, T_, N_, V, states):
    r = rs(name)
    return [r.randint(0, V, (T_, N_)).astype(np.float32), states(r)]


def standard_lm_case():
    name = "standard_lstm_lm"
    V, E, Hh, L = 60, 16, 16, 2

    def build():
        import gluonnlp
        seed_all(name)
        # standard_lstm_lm_200 architecture (2-layer LSTM, tied weights) at a small size
        net = gluonnlp.model.StandardRNN("lstm", vocab_size=V, embed_size=E, hidden_size=Hh, num_layers=L,
                                         dropout=0.0, tie_weights=True)
        net.initialize(mx.init.Xavier())
        return net
    case = Case(FAM, name, build)
    net = build()
    Tn, Nn = 7, 3
    args = lm_inputs(name, Tn, Nn, V, lambda r: [r.uniform(-.5, .5, (L, Nn, Hh)).astype(np.float32),
                                                 r.uniform(-.5, .5, (L, Nn, Hh)).astype(np.float32)])
    inputs, _ = gluon_export(case, net, args, perturb=name)
    case.record(inputs, train=True, nograd=("data0",),
                input_notes={"data0": "token ids (T, N) float32, layout TNC", "data1": "begin h (L, N, H)",
                             "data2": "begin c (L, N, H)"},
                notes="gluonnlp.model.StandardRNN('lstm', vocab 60, embed 16, hidden 16, 2 layers, dropout 0, "
                      "tie_weights=True) = standard_lstm_lm_200 architecture at small size. Outputs: logits (T,N,V), h_n, c_n.")


def awd_lm_case():
    name = "awd_lstm_lm"
    V, E, Hh, L = 60, 12, 20, 3

    def build():
        import gluonnlp
        seed_all(name)
        net = gluonnlp.model.AWDRNN("lstm", vocab_size=V, embed_size=E, hidden_size=Hh, num_layers=L,
                                    tie_weights=True, dropout=0.0, weight_drop=0.0, drop_h=0.0, drop_i=0.0,
                                    drop_e=0.0)
        net.initialize(mx.init.Xavier())
        return net
    case = Case(FAM, name, build)
    net = build()
    Tn, Nn = 6, 2

    def st(r):
        out = []
        for i in range(L):
            hs = E if i == L - 1 else Hh  # last layer's hidden = embed size (tied weights)
            out.append([r.uniform(-.5, .5, (1, Nn, hs)).astype(np.float32),
                        r.uniform(-.5, .5, (1, Nn, hs)).astype(np.float32)])
        return out
    args = lm_inputs(name, Tn, Nn, V, st)
    inputs, _ = gluon_export(case, net, args, perturb=name)
    inote = {"data0": "token ids (T, N) float32"}
    for i in range(L):
        inote["data%d" % (1 + 2 * i)] = "layer %d begin h (1, N, H_l)" % i
        inote["data%d" % (2 + 2 * i)] = "layer %d begin c (1, N, H_l)" % i
    case.record(inputs, train=True, input_notes=inote, nograd=("data0",),
                notes="gluonnlp.model.AWDRNN('lstm', vocab 60, embed 12, hidden 20, 3 layers, tie_weights=True, all "
                      "dropouts 0). One gluon.rnn.LSTM per layer (last layer hidden = embed size). Outputs: logits, "
                      "then (h, c) per layer.")


def lstm_lm_650_case():
    name = "lstm_lm_650"
    V, E, Hh, L, Tn, Nn = 10000, 650, 650, 2, 35, 32

    def build():
        import gluonnlp
        seed_all(name)
        # standard_lstm_lm_650 architecture (PTB medium): tied weights, dropout disabled for determinism
        net = gluonnlp.model.StandardRNN("lstm", vocab_size=V, embed_size=E, hidden_size=Hh, num_layers=L,
                                         dropout=0.0, tie_weights=True)
        net.initialize(mx.init.Uniform(0.05))
        return net
    case = Case("seq_large", name, build)
    net = build()
    args = lm_inputs(name, Tn, Nn, V, lambda r: [r.uniform(-.5, .5, (L, Nn, Hh)).astype(np.float32),
                                                 r.uniform(-.5, .5, (L, Nn, Hh)).astype(np.float32)])
    inputs, _ = gluon_export(case, net, args)
    case.record(inputs, train=False, only_out0=True,
                input_notes={"data0": "token ids (35, 32) float32, layout TNC", "data1": "begin h (2, 32, 650)",
                             "data2": "begin c (2, 32, 650)"},
                notes="benchmark-size LSTM LM: gluonnlp StandardRNN('lstm', vocab 10000, embed 650, hidden 650, 2 "
                      "layers, tie_weights=True, dropout 0) = standard_lstm_lm_650 architecture, Uniform(0.05) init. "
                      "expected.npz holds out0 (logits, 35x32x10000) only.")


if __name__ == "__main__":
    run_cases(FAM, seq_cases(), sys.argv[1:])
