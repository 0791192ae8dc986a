"""``gx.model``: MXNet checkpoints, ``{prefix}-symbol.json`` plus ``{prefix}-{epoch:04d}.params``
(the NDArray-list binary with ``arg:<name>`` / ``aux:<name>`` keys), as written by
``mx.model.save_checkpoint``, ``Module.save_checkpoint`` and Gluon ``export()``; ``nd_load`` /
``nd_save`` read and write any such binary file, as ``mx.nd.load`` / ``mx.nd.save``.

>>> sym, arg_params, aux_params = gx.model.load_checkpoint('examples/lenet_small', 3)
>>> exe = sym.bind(gx.cpu(), {**arg_params, 'data': x, 'softmax_label': y},
...                aux_states=aux_params, grad_req='null')
"""
from __future__ import annotations

import glob
import logging
import numbers
import os
import re
from typing import Any, Mapping

import numpy as np

from ..ir.errors import ArgumentTypeError, ParamsFormatError
from ..ir.graph import Entry, topo_order
from . import ndarray_io
from .json_io import load as load_symbol
from .symbol import Symbol, copy_graph

__all__ = ["load_checkpoint", "save_checkpoint", "load_params", "split_params", "params_file",
           "symbol_file", "remove_amp_casts", "nd_load", "nd_save"]

#: ``mx.nd.load`` / ``mx.nd.save`` for any NDArray-list file (see core/symbol/ndarray_io.py).
nd_load, nd_save = ndarray_io.load, ndarray_io.save

log = logging.getLogger("graphexec")

#: Ops that AMP inserts and save_checkpoint(remove_amp_cast=True) drops, as MXNet does.
_AMP_CAST_OPS = frozenset({"amp_cast", "amp_multicast"})


def symbol_file(prefix: str) -> str:
    """``{prefix}-symbol.json``."""
    return f"{prefix}-symbol.json"


def params_file(prefix: str, epoch: int) -> str:
    """``{prefix}-{epoch:04d}.params``."""
    if not isinstance(epoch, numbers.Integral) or isinstance(epoch, bool):
        raise ArgumentTypeError(f"checkpoint epoch must be an integer, got "
                                f"{type(epoch).__name__} {epoch!r}")
    return f"{prefix}-{int(epoch):04d}.params"


def load_checkpoint(prefix: str, epoch: int) -> tuple[Symbol, dict[str, np.ndarray],
                                                      dict[str, np.ndarray]]:
    """Load ``(symbol, arg_params, aux_params)`` from an MXNet checkpoint.

    ``arg_params`` / ``aux_params`` map argument / auxiliary-state names (the ``arg:`` and
    ``aux:`` prefixes stripped) to numpy arrays."""
    symbol = load_symbol(symbol_file(prefix))
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params


def load_params(prefix: str, epoch: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Load ``(arg_params, aux_params)`` from ``{prefix}-{epoch:04d}.params``."""
    fname = params_file(prefix, epoch)
    _require(fname, prefix)
    saved = ndarray_io.load(fname)
    if isinstance(saved, list) and not saved:  # a checkpoint without parameters
        saved = {}
    if not isinstance(saved, dict):
        raise ParamsFormatError(f"{fname}: holds a list of {len(saved)} unnamed arrays; a "
                                f"checkpoint needs 'arg:<name>' / 'aux:<name>' keys")
    return split_params(saved, fname)


def split_params(saved: Mapping[str, Any], source: str = "<params>"
                 ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split ``{'arg:w': ..., 'aux:m': ...}`` into ``(arg_params, aux_params)``."""
    arg_params: dict[str, Any] = {}
    aux_params: dict[str, Any] = {}
    for key, value in saved.items():
        kind, sep, name = key.partition(":")
        if not sep or kind not in ("arg", "aux") or not name:
            raise ParamsFormatError(f"{source}: key {key!r} is not of the form 'arg:<name>' or "
                                    f"'aux:<name>' (a checkpoint's keys name arguments and "
                                    f"auxiliary states)")
        (arg_params if kind == "arg" else aux_params)[name] = value
    return arg_params, aux_params


def save_checkpoint(prefix: str, epoch: int, symbol: Symbol, arg_params: Mapping[str, Any],
                    aux_params: Mapping[str, Any], remove_amp_cast: bool = True) -> None:
    """Write ``{prefix}-symbol.json`` and ``{prefix}-{epoch:04d}.params`` as MXNet does
    (arguments first, then auxiliary states, in the dicts' order). With ``remove_amp_cast``
    the saved symbol drops ``amp_cast`` / ``amp_multicast`` nodes."""
    if symbol is not None:
        (remove_amp_casts(symbol) if remove_amp_cast else symbol).save(symbol_file(prefix))
    save_dict = {f"arg:{k}": v for k, v in arg_params.items()}
    save_dict.update({f"aux:{k}": v for k, v in aux_params.items()})
    fname = params_file(prefix, epoch)
    ndarray_io.save(fname, save_dict)
    log.info('Saved checkpoint to "%s"', fname)


def remove_amp_casts(symbol: Symbol) -> Symbol:
    """A copy of ``symbol`` in which every ``amp_cast`` / ``amp_multicast`` output is
    replaced by the matching input (``symbol`` itself when it has none)."""
    if not any(n.op_name in _AMP_CAST_OPS for n in topo_order(e.node for e in symbol.outputs)):
        return symbol
    outputs = copy_graph(symbol.outputs)

    def skip(e: Entry) -> Entry:
        while e.node.op_name in _AMP_CAST_OPS:
            e = e.node.inputs[e.index]
        return e
    for node in topo_order(e.node for e in outputs):
        node.inputs[:] = [skip(e) for e in node.inputs]
    return Symbol([skip(e) for e in outputs])


def _require(fname: str, prefix: str) -> None:
    """Name the epochs that do exist when the requested one does not."""
    if os.path.isfile(fname):
        return
    epochs = _saved_epochs(prefix)
    have = (f"; epochs saved under this prefix: {', '.join(map(str, epochs))}" if epochs
            else "")
    raise ParamsFormatError(f"checkpoint file {fname!r} does not exist{have}")


def _saved_epochs(prefix: str) -> list[int]:
    pattern = re.compile(re.escape(os.path.basename(prefix)) + r"-(\d{4,})\.params$")
    paths = glob.glob(glob.escape(prefix) + "-*.params")
    found = (pattern.match(os.path.basename(p)) for p in paths)
    return sorted(int(m.group(1)) for m in found if m)
