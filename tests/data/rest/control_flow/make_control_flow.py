"""Reference data for the control-flow operators (_foreach, _while_loop, _cond), recorded from
MXNet 1.9.1: each case's symbol JSON (as mx.sym.contrib / a hybridized Gluon block writes it),
inputs, forward outputs (is_train=True), head gradients and input gradients.

    MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=2 /path/to/mxnet-1.9.1/bin/python make_control_flow.py

It writes control_flow.json and control_flow.npz next to this script.
"""
import json
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CASES, ARRAYS = {}, {}
rng = np.random.RandomState(7)
f32 = np.float32


def record(name, sym, inputs, grad_names=None, notes=""):
    """bind, forward(is_train=True), backward with random head gradients (bind: MXNet's
    simple_bind fails storage-type inference of some foreach backward graphs)."""
    grad_names = list(inputs) if grad_names is None else grad_names
    req = {n: ("write" if n in grad_names else "null") for n in sym.list_arguments()}
    args = {n: mx.nd.array(a, dtype=a.dtype) for n, a in inputs.items()}
    grads = {n: mx.nd.zeros(a.shape, dtype=a.dtype) for n, a in inputs.items() if n in grad_names}
    exe = sym.bind(mx.cpu(), args, args_grad=grads, grad_req=req)
    outs = [o.asnumpy() for o in exe.forward(is_train=True)]
    hgs = [rng.randn(*o.shape).astype(o.dtype) for o in outs]
    exe.backward([mx.nd.array(h, dtype=h.dtype) for h in hgs])
    case = {"symbol_json": sym.tojson(), "inputs": list(inputs), "grad_inputs": grad_names,
            "list_arguments": sym.list_arguments(), "list_outputs": sym.list_outputs(),
            "out_shapes": [list(o.shape) for o in outs], "notes": notes}
    for n, a in inputs.items():
        ARRAYS[f"{name}/in/{n}"] = a
    for k, (o, h) in enumerate(zip(outs, hgs)):
        ARRAYS[f"{name}/out{k}"] = o
        ARRAYS[f"{name}/hg{k}"] = h
    for n in grad_names:
        ARRAYS[f"{name}/grad/{n}"] = exe.grad_dict[n].asnumpy()
    inf = exe.forward(is_train=False)
    for k, o in enumerate(inf):
        ARRAYS[f"{name}/iout{k}"] = o.asnumpy()
    CASES[name] = case
    print(name, [o.shape for o in outs])


def u(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(f32)


# -- foreach ----------------------------------------------------------------------------------
data, h0, w, b = (mx.sym.var(n) for n in ("data", "h0", "w", "b"))


def rnn_step(x, states):
    h = mx.sym.tanh(x * w + states[0])
    return h * 2 + b, [h]


out, st = mx.sym.contrib.foreach(rnn_step, data, [h0])
record("foreach_rnn", mx.sym.Group([out] + st),
       {"data": u(4, 2, 3), "h0": u(2, 3), "w": u(2, 3), "b": u(2, 3)})



def autograd_foreach_rnn():
    """MXNet's imperative foreach on the same inputs: its gradient of ``b`` sums the steps,
    the symbolic executor's keeps only the first step's (stored as agrad/<name>)."""
    ins = {n: mx.nd.array(ARRAYS["foreach_rnn/in/" + n]) for n in ("data", "h0", "w", "b")}
    for v in ins.values():
        v.attach_grad()
    with mx.autograd.record():
        def step(x, st):
            h = mx.nd.tanh(x * ins["w"] + st[0])
            return h * 2 + ins["b"], [h]
        out, st = mx.nd.contrib.foreach(step, ins["data"], [ins["h0"]])
    mx.autograd.backward([out, st[0]], [mx.nd.array(ARRAYS["foreach_rnn/hg0"]),
                                        mx.nd.array(ARRAYS["foreach_rnn/hg1"])])
    for n, v in ins.items():
        ARRAYS["foreach_rnn/agrad/" + n] = v.grad.asnumpy()


autograd_foreach_rnn()
x1, x2, s1, s2 = (mx.sym.var(n) for n in ("x1", "x2", "s1", "s2"))


def two_step(xs, states):
    a, c = xs
    p, q = states
    np_ = p + a * q
    nq = mx.sym.sigmoid(q - c)
    return [np_ * c, mx.sym.sum(nq)], [np_, nq]


outs, sts = mx.sym.contrib.foreach(two_step, [x1, x2], [s1, s2])
record("foreach_two", mx.sym.Group(list(outs) + list(sts)),
       {"x1": u(3, 2), "x2": u(3, 2), "s1": u(2), "s2": u(2)})

# -- while_loop ---------------------------------------------------------------------------------
i, s, k = (mx.sym.var(n) for n in ("i", "s", "k"))


def wl_cond(i, s):
    return i < 3


def wl_func(i, s):
    return [s * k, i * 2], [i + 1, s + mx.sym.tanh(s * k)]


outs, sts = mx.sym.contrib.while_loop(wl_cond, wl_func, [i, s], max_iterations=5)
record("while_early_stop", mx.sym.Group(list(outs) + list(sts)),
       {"i": np.array([0.0], f32), "s": u(2, 2), "k": u(2, 2)}, grad_names=["s", "k"],
       notes="stops after 3 of max_iterations=5: the step outputs are padded")


def wl_cond2(i, s):
    return i < 100


outs, sts = mx.sym.contrib.while_loop(wl_cond2, wl_func, [i, s], max_iterations=4)
record("while_max_iter", mx.sym.Group(list(outs) + list(sts)),
       {"i": np.array([1.0], f32), "s": u(3), "k": u(3)}, grad_names=["s", "k"],
       notes="runs max_iterations steps")


def wl_cond3(i, s):
    return mx.sym.sum(s) < 2.0


def wl_func3(i, s):
    return [], [i + 1, s * 1.5 + k]


outs, sts = mx.sym.contrib.while_loop(wl_cond3, wl_func3, [i, s], max_iterations=6)
record("while_data_cond", mx.sym.Group(list(outs) + list(sts)),
       {"i": np.array([0.0], f32), "s": np.array([0.1, 0.2], f32), "k": np.array([0.05, 0.1], f32)},
       grad_names=["s", "k"], notes="no step outputs; the condition reads the data")

# -- cond ---------------------------------------------------------------------------------------
a, c = mx.sym.var("a"), mx.sym.var("c")
br = mx.sym.contrib.cond(mx.sym.sum(a) > 0, lambda: a * c + 1, lambda: mx.sym.exp(a) - c)
record("cond_then", br, {"a": np.abs(u(2, 3)) + 0.1, "c": u(2, 3)})
record("cond_else", br, {"a": -np.abs(u(2, 3)) - 0.1, "c": u(2, 3)})
br2 = mx.sym.contrib.cond(mx.sym.sum(c) > 0, lambda: [a * 2, c], lambda: [c * 3, a + c])
record("cond_two_outputs", mx.sym.Group(list(br2)), {"a": u(3), "c": np.abs(u(3))})


# -- a hybridized Gluon block ---------------------------------------------------------------------
class Cell(mx.gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.dense = mx.gluon.nn.Dense(3, in_units=3, flatten=False)

    def hybrid_forward(self, F, x, h):
        def step(xt, states):
            nh = F.tanh(self.dense(xt) + states[0])
            return nh, [nh]
        out, last = F.contrib.foreach(step, x, [h])
        return out, last[0]


net = Cell(prefix="cell_")
net.initialize(mx.init.Xavier(rnd_type="uniform", magnitude=1.0))
net.hybridize()
xs, hs = mx.nd.array(u(3, 2, 3)), mx.nd.array(u(2, 3))
net(xs, hs)
net.export(os.path.join(HERE, "_gluon_tmp"))
gsym = mx.sym.load(os.path.join(HERE, "_gluon_tmp-symbol.json"))
params = mx.nd.load(os.path.join(HERE, "_gluon_tmp-0000.params"))
for f in ("_gluon_tmp-symbol.json", "_gluon_tmp-0000.params"):
    os.remove(os.path.join(HERE, f))
ins = {"data0": xs.asnumpy(), "data1": hs.asnumpy()}
ins.update({k.split(":", 1)[1]: v.asnumpy() for k, v in params.items()})
record("gluon_foreach", gsym, ins, notes="exported by a hybridized Gluon block")

np.savez_compressed(os.path.join(HERE, "control_flow.npz"), **ARRAYS)
with open(os.path.join(HERE, "control_flow.json"), "w") as f:
    json.dump({"mxnet_version": mx.__version__, "cases": CASES}, f, indent=1)
print("saved", len(CASES), "cases")
