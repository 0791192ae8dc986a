"""Running one ``onnxrt`` region: export its inner symbol to ONNX, create (or reuse) an
ONNX Runtime session, and run it with IOBinding on the executor's own buffers.

- **One session per region model.** The model bytes (structure, shapes, dtypes, baked
  parameter values) and the session options key a process-wide cache, so an executor from
  ``reshape`` or a bucket with the same shapes reuses the session instead of building another.
- **Parameters as initializers** (``freeze_params``): ONNX Runtime folds BatchNorm into Conv
  and pre-packs weights only for initializers. A parameter is an argument read only as a
  ``weight`` / ``bias`` / ``gamma`` / ``beta`` input, or an auxiliary state. Its array becomes
  read-only while a session holds its values (:mod:`graphexec.core.runtime.frozen`); writing it
  through ``copy_params_from`` or ``forward(**kwargs)`` rebuilds the session at the next run.
- **No copies on the host.** Inputs and outputs are bound by pointer; only non-contiguous
  arrays go through a staging buffer.
- **Honest devices.** On a gpu context the region runs with CUDAExecutionProvider on the
  CuPy buffers' device pointers; without that provider it says so once, and runs on the CPU
  with explicit copies (counted in ``exe.partition_plan.host_copies``), or raises
  :class:`~graphexec.core.ir.errors.PlacementError` under ``strict_device=True``.
"""
from __future__ import annotations

import hashlib
import logging
import os
import warnings
import weakref
from collections import OrderedDict
from functools import partial
from typing import Any

import numpy as np

from graphexec.core.ir.errors import GraphexecError, PlacementError
from graphexec.core.runtime import frozen
from graphexec.core.subgraph import RegionCall, native_runner

__all__ = ["region_runner", "check_options", "param_inputs", "SESSION_STATS",
           "SESSION_CACHE_SIZE", "clear_sessions", "OnnxrtRegionError"]

log = logging.getLogger("graphexec.onnxrt")

_OPT_LEVELS = {"disable": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC",
               "extended": "ORT_ENABLE_EXTENDED", "all": "ORT_ENABLE_ALL"}
#: input slots whose arguments count as parameters
PARAM_SLOTS = frozenset({"weight", "bias", "gamma", "beta", "moving_mean", "moving_var"})
#: sessions kept alive for reuse (least recently used dropped first)
SESSION_CACHE_SIZE = 32
#: counters: sessions ``created`` and ``reused`` from the cache since start-up
SESSION_STATS = {"created": 0, "reused": 0}

_SESSIONS: "OrderedDict[str, Any]" = OrderedDict()
_WARNED: set = set()


class OnnxrtRegionError(GraphexecError, RuntimeError):
    """ONNX Runtime could not load or run a region (the region then runs natively)."""


def check_options(opts: dict) -> None:
    """Raise a :class:`GraphexecError` naming the first bad option value."""
    if opts["opt_level"] not in _OPT_LEVELS:
        raise GraphexecError(f"onnxrt option opt_level={opts['opt_level']!r}: expected one of "
                             f"{sorted(_OPT_LEVELS)}")
    for key in ("threads", "inter_op_threads"):
        value = opts[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise GraphexecError(f"onnxrt option {key}={value!r}: expected an integer >= 0 "
                                 f"(0: ONNX Runtime's default)")
    if not isinstance(opts["spinning"], bool):
        raise GraphexecError(f"onnxrt option spinning={opts['spinning']!r}: expected True or "
                             f"False")
    freeze = opts["freeze_params"]
    if not isinstance(freeze, (bool, list, tuple, set, frozenset)):
        raise GraphexecError(f"onnxrt option freeze_params={freeze!r}: expected True, False or "
                             f"a list of argument names")
    providers = opts["providers"]
    if providers is not None:
        if isinstance(providers, str) or not all(isinstance(p, str) for p in providers):
            raise GraphexecError(f"onnxrt option providers={providers!r}: expected a list of "
                                 f"ONNX Runtime provider names")
        import onnxruntime as ort
        missing = [p for p in providers if p not in ort.get_available_providers()]
        if missing:
            raise GraphexecError(f"onnxrt option providers: {missing} not available in this "
                                 f"onnxruntime build (available: "
                                 f"{ort.get_available_providers()})")


def clear_sessions() -> None:
    """Drop every cached session (they are freed once no executor uses them)."""
    _SESSIONS.clear()


def region_runner(region: RegionCall, opts: dict):
    """The runner of one region (a zero-argument callable)."""
    if region.is_train and _train_sensitive(region.symbol):
        # an ONNX model carries inference semantics; a training forward of an inference-only
        # bind (batch statistics, Dropout masks) needs the native kernels
        log.info("onnxrt region %s runs natively in forward(is_train=True): its ONNX model "
                 "has inference semantics (BatchNorm/Dropout)", region.node_name)
        return native_runner(region)
    return RegionSession(region, opts, _placement(region, opts))


def _train_sensitive(sym) -> bool:
    for node in sym._indexed().nodes:
        if node.op is None:
            continue
        p, name = node.params, node.op.name
        if node.op.draws_random(p):
            return True
        if name == "BatchNorm" and not p.use_global_stats:
            return True
    return False


def _placement(region: RegionCall, opts: dict) -> str:
    """'cpu', 'cuda' (device pointers) or 'host' (a gpu region run on the CPU)."""
    if not region.ctx.is_gpu:
        return "cpu"
    import onnxruntime as ort
    wanted = opts["providers"] or ["CUDAExecutionProvider", "CPUExecutionProvider"]
    if "CUDAExecutionProvider" in wanted and \
            "CUDAExecutionProvider" in ort.get_available_providers():
        return "cuda"
    why = ("this onnxruntime build has no CUDAExecutionProvider (install onnxruntime-gpu)"
           if "CUDAExecutionProvider" in wanted else
           f"the providers option {wanted} has no CUDAExecutionProvider")
    if opts["strict_device"]:
        raise PlacementError(f"onnxrt region {region.node_name!r} cannot run on "
                             f"{region.ctx}: {why}; strict_device=True forbids running it on "
                             f"the CPU")
    if region.ctx not in _WARNED:
        _WARNED.add(region.ctx)
        warnings.warn(f"onnxrt: {why}; regions on {region.ctx} run on the CPU with explicit "
                      f"copies of their inputs and outputs (counted in "
                      f"partition_plan.host_copies; strict_device=True refuses instead)",
                      RuntimeWarning, stacklevel=3)
    return "host"


def param_inputs(region: RegionCall, freeze: Any) -> list[int]:
    """Indices of the region inputs baked into the model as initializers."""
    if freeze is False or not any(region.input_is_var):
        return []
    if freeze is not True:
        names = set(freeze)
        return [k for k, n in enumerate(region.input_names)
                if n in names and region.input_is_var[k]]
    ig = region.symbol._indexed()
    aux = set(region.symbol.list_auxiliary_states())
    slots: dict[str, set] = {}
    for node in ig.nodes:
        if node.op is None:
            continue
        names = node.op.input_names(node.params)
        for k, e in enumerate(node.inputs):
            if e.node.op is None:
                slots.setdefault(e.node.name, set()).add(names[k] if k < len(names) else "")
    return [k for k, n in enumerate(region.input_names)  # (an input no node reads is fed)
            if region.input_is_var[k] and (n in aux or (n in slots and slots[n] <= PARAM_SLOTS))]


class RegionSession:
    """Callable running a region through ONNX Runtime with IOBinding; builds its session at
    the first run (when the parameters hold their values) and again after a frozen
    parameter changed."""

    def __init__(self, region: RegionCall, opts: dict, placement: str):
        self.region, self.opts, self.placement = region, opts, placement
        host = placement == "cpu"
        self.frozen = param_inputs(region, opts["freeze_params"]) if host else []
        self._key: str | None = None
        self._session = self._binding = None
        self._before: list = []   # staging copies into the bound buffers, before a run
        self._after: list = []    # and out of them, after it
        self._frozen_ids: list[int] = []
        weakref.finalize(self, _thaw, self._frozen_ids, id(self))

    def __call__(self) -> None:
        if self._binding is None:
            self._build()
        for copy in self._before:
            copy()
        try:
            self._session.run_with_iobinding(self._binding)
        except Exception:
            self.release()  # the native fallback that follows needs no frozen copy
            raise
        for copy in self._after:
            copy()
        if self.placement == "host":
            state = self.region.state
            state["host_copies"] = state.get("host_copies", 0) + len(self._before) + \
                len(self._after)

    # -- building ----------------------------------------------------------------------------
    def _build(self) -> None:
        from .export import export_model  # imports onnx: loaded on first use
        r = self.region
        baked = {r.input_names[k]: r.inputs[k] for k in self.frozen}
        fed = [k for k in range(len(r.inputs)) if k not in set(self.frozen)]
        model = export_model(r.symbol, baked, {}, {r.input_names[k]: r.inputs[k].shape
                                                   for k in fed},
                             input_dtypes={r.input_names[k]: r.inputs[k].dtype for k in fed},
                             output_shapes=[o.shape for o in r.outputs])
        data = model.SerializeToString()
        self._key, self._session = _session(data, self.opts, self._providers(), r)
        if self.opts["save_models"]:
            folder = os.fspath(self.opts["save_models"])
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, f"{r.node_name}-{self._key[:10]}.onnx"), "wb") as f:
                f.write(data)
        self._bind(fed, [o.name for o in model.graph.output])
        self._freeze()

    def _providers(self) -> list[str]:
        if self.opts["providers"]:
            return list(self.opts["providers"])
        if self.placement == "cuda":
            return ["CUDAExecutionProvider", "CPUExecutionProvider"]
        return ["CPUExecutionProvider"]

    def _bind(self, fed: list[int], out_names: list[str]) -> None:
        r, binding = self.region, self._session.io_binding()
        self._before, self._after = [], []
        for k in fed:
            binding.bind_input(r.input_names[k], *self._buffer(r.inputs[k], True))
        for name, arr in zip(out_names, r.outputs):
            binding.bind_output(name, *self._buffer(arr, False))
        self._binding = binding

    def _buffer(self, arr: Any, is_input: bool) -> tuple:
        """(device_type, device_id, element_type, shape, pointer) of ``arr`` itself or, when
        it cannot be bound in place, of a staging array (its copy recorded in ``_before`` for
        an input, ``_after`` for an output)."""
        shape = list(arr.shape)
        if self.placement == "cuda":
            return "cuda", self.region.ctx.device_id, arr.dtype.type, shape, arr.data.ptr
        if self.placement == "host" or not arr.flags.c_contiguous:
            stage = np.empty(arr.shape, arr.dtype)
            host = self.placement == "host"
            if is_input:
                self._before.append(partial(arr.get, out=stage) if host else
                                    partial(np.copyto, stage, arr))
            else:
                self._after.append(partial(arr.set, stage) if host else
                                   partial(np.copyto, arr, stage))
            arr = stage
        return "cpu", 0, arr.dtype.type, shape, arr.ctypes.data

    def _freeze(self) -> None:
        r, me = self.region, weakref.ref(self)

        def changed() -> None:
            runner = me()
            if runner is not None:
                runner.invalidate()
        holder = (f"onnxrt region {r.node_name!r}, which baked the values into its ONNX "
                  f"model (freeze_params) for as long as its executor lives: write them "
                  f"through that executor (copy_params_from, forward(name=array)), or bind "
                  f"that executor with backend_options={{'onnxrt': {{'freeze_params': "
                  f"False}}}} when another executor updates shared parameters in place")
        for k in self.frozen:
            arr = r.sources[k]  # the executor's array, which copy_params_from writes
            frozen.freeze(arr, id(self), changed, holder)
            if id(arr) not in self._frozen_ids:
                self._frozen_ids.append(id(arr))

    def release(self) -> None:
        """Forget the session and thaw the parameters it froze."""
        self.invalidate()
        _thaw(self._frozen_ids, id(self))
        self._frozen_ids.clear()

    def invalidate(self) -> None:
        """Forget the session (a baked parameter changed); the next run builds a new one."""
        if self._key is not None:
            _SESSIONS.pop(self._key, None)
        self._key = self._session = self._binding = None


def _thaw(array_ids: list[int], token: int) -> None:
    for array_id in array_ids:
        frozen.release(array_id, token)


def _session(data: bytes, opts: dict, providers: list[str], region: RegionCall):
    """The cached session of a model, or a new one."""
    import onnxruntime as ort
    key = hashlib.sha1(data).hexdigest() + repr((providers, opts["threads"],
                                                 opts["inter_op_threads"], opts["spinning"],
                                                 opts["opt_level"]))
    hit = _SESSIONS.get(key)
    if hit is not None:
        _SESSIONS.move_to_end(key)
        SESSION_STATS["reused"] += 1
        return key, hit
    so = ort.SessionOptions()
    so.intra_op_num_threads = opts["threads"]
    so.inter_op_num_threads = opts["inter_op_threads"]
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, _OPT_LEVELS[opts["opt_level"]])
    so.log_severity_level = 3
    # spinning threads steal the cores other sessions (other regions) and processes need:
    # measured 2-3x slower on a shared 2-core machine (benchmarks/README.md)
    so.add_session_config_entry("session.intra_op.allow_spinning", "1" if opts["spinning"] else "0")
    try:
        session = ort.InferenceSession(data, so, providers=providers)
    except Exception as exc:  # noqa: BLE001 - ORT raises its own exception types
        ops = sorted({n.op.name for n in region.symbol._indexed().nodes if n.op is not None})
        raise OnnxrtRegionError(f"ONNX Runtime cannot load the model of region "
                                f"{region.node_name!r} (ops {ops}): {exc}") from None
    SESSION_STATS["created"] += 1
    _SESSIONS[key] = session
    while len(_SESSIONS) > SESSION_CACHE_SIZE:
        _SESSIONS.popitem(last=False)
    return key, session
