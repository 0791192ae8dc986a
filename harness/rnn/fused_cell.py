"""``gx.rnn`` fused and bidirectional cells: MXNet 1.9.1's ``FusedRNNCell`` (one ``RNN`` op
over the packed ``{prefix}parameters`` vector, convertible with ``unpack_weights`` /
``pack_weights`` / ``unfuse`` to a stack of unrolled cells) and ``BidirectionalCell``, plus
the ``FusedRNN`` initializer the fused parameter vector carries."""
from __future__ import annotations

from typing import Any

import numpy as np

from graphexec.core.symbol.symbol import Symbol

from ..initializer import InitDesc, Initializer, create, register
from .rnn_cell import (BaseRNNCell, GRUCell, LSTMCell, RNNCell, RNNError, RNNParams,
                       SequentialRNNCell, _like, _normalize_sequence, _numpy, _op, _pop_param,
                       pack_cells, unpack_cells)

__all__ = ["FusedRNNCell", "BidirectionalCell", "FusedRNN"]

_GATES = {"rnn_relu": [""], "rnn_tanh": [""], "lstm": ["_i", "_f", "_c", "_o"],
          "gru": ["_r", "_z", "_o"]}


class FusedRNNCell(BaseRNNCell):
    """``num_layers`` recurrent layers (``mode`` rnn_relu, rnn_tanh, lstm or gru), optionally
    bidirectional, run by one ``RNN`` node over the whole sequence. It cannot be stepped."""

    def __init__(self, num_hidden: int, num_layers: int = 1, mode: str = "lstm",
                 bidirectional: bool = False, dropout: float = 0.0,
                 get_next_state: bool = False, forget_bias: float = 1.0,
                 prefix: str | None = None, params: RNNParams | None = None):
        if mode not in _GATES:
            raise RNNError(f"FusedRNNCell mode must be one of {sorted(_GATES)}, got {mode!r}")
        super().__init__(prefix=f"{mode}_" if prefix is None else prefix, params=params)
        self._num_hidden, self._num_layers, self._mode = num_hidden, num_layers, mode
        self._bidirectional, self._dropout = bidirectional, dropout
        self._get_next_state = get_next_state
        self._directions = ["l", "r"] if bidirectional else ["l"]
        init = FusedRNN(None, num_hidden, num_layers, mode, bidirectional, forget_bias)
        self._parameter = self.params.get("parameters", init=init)

    @property
    def state_info(self) -> list:
        shape = ((1 + self._bidirectional) * self._num_layers, 0, self._num_hidden)
        return [{"shape": shape, "__layout__": "LNC"}
                for _ in range(2 if self._mode == "lstm" else 1)]

    @property
    def _gate_names(self) -> list:
        return _GATES[self._mode]

    def _slices(self, num_input: int) -> list:
        """``(name, start, shape)`` of every per-gate array in the packed vector: all weights
        (layer by layer, direction by direction, i2h gates then h2h gates), then all biases in
        the same order, as MXNet's RNN op lays them out."""
        h, b, out, p = self._num_hidden, len(self._directions), [], 0
        for kind in ("weight", "bias"):
            for layer in range(self._num_layers):
                width = num_input if layer == 0 else b * h
                for d in self._directions:
                    for group, cols in (("i2h", width), ("h2h", h)):
                        for gate in self._gate_names:
                            shape = (h, cols) if kind == "weight" else (h,)
                            out.append((f"{self._prefix}{d}{layer}_{group}{gate}_{kind}", p,
                                        shape))
                            p += int(np.prod(shape))
        return out + [("", p, ())]

    def _num_input(self, size: int) -> int:
        b, m, h = len(self._directions), len(self._gate_names), self._num_hidden
        num_input = size // b // h // m - (self._num_layers - 1) * (h + b * h + 2) - h - 2
        if num_input <= 0 or self._slices(num_input)[-1][1] != size:
            raise RNNError(f"FusedRNNCell {self._prefix!r}: a packed parameter vector of "
                           f"{size} values fits no input size for {self._num_layers} "
                           f"{self._mode} layer(s) of {h} hidden units (bidirectional="
                           f"{self._bidirectional})")
        return num_input

    def unpack_weights(self, args: dict) -> dict:
        """A copy of ``args`` with ``{prefix}parameters`` split into MXNet's per-layer,
        per-direction, per-gate arrays (``{prefix}l0_i2h_i_weight``, ...)."""
        args = dict(args)
        packed = _pop_param(args, self._parameter.name, self)
        flat = _numpy(packed).reshape(-1)
        for name, start, shape in self._slices(self._num_input(flat.size))[:-1]:
            size = int(np.prod(shape))
            args[name] = _like(packed, flat[start:start + size].reshape(shape).copy())
        return args

    def pack_weights(self, args: dict) -> dict:
        """The inverse of ``unpack_weights``: the per-gate arrays joined into
        ``{prefix}parameters``."""
        args = dict(args)
        first = args.get(f"{self._prefix}l0_i2h{self._gate_names[0]}_weight")
        if first is None or _numpy(first).ndim != 2:
            raise RNNError(f"FusedRNNCell {self._prefix!r}: pack_weights needs a 2-D "
                           f"{self._prefix}l0_i2h{self._gate_names[0]}_weight (its columns "
                           f"give the input size); the arguments given are {sorted(args)}")
        slices = self._slices(_numpy(first).shape[1])
        flat = np.zeros(slices[-1][1], _numpy(first).dtype)
        for name, start, shape in slices[:-1]:
            value = _numpy(_pop_param(args, name, self))
            if value.shape != shape:
                raise RNNError(f"FusedRNNCell {self._prefix!r}: {name} has shape "
                               f"{value.shape}, expected {shape}")
            flat[start:start + value.size] = value.reshape(-1)
        args[self._parameter.name] = _like(first, flat)
        return args

    def __call__(self, inputs: Symbol, states: list) -> tuple[Symbol, list]:
        raise RNNError("FusedRNNCell cannot be stepped. Please use unroll")

    def unroll(self, length: int, inputs: Any, begin_state: list | None = None,
               layout: str = "NTC", merge_outputs: bool | None = None) -> tuple[Any, list]:
        """One ``RNN`` node over the sequence (time-major inside: NTC inputs are swapped);
        states are returned only with ``get_next_state``."""
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, True)
        if axis not in (0, 1):
            raise RNNError(f"FusedRNNCell cannot unroll layout {layout!r}: the time axis must "
                           "be 0 (TNC) or 1 (NTC)")
        if axis == 1:
            inputs = _op("SwapAxis", inputs, dim1=0, dim2=1)
        states = self.begin_state() if begin_state is None else begin_state
        named = {"state": states[0]}
        if self._mode == "lstm":
            named["state_cell"] = states[1]
        rnn = _op("RNN", inputs, self._parameter, state_size=self._num_hidden,
                  num_layers=self._num_layers, bidirectional=self._bidirectional,
                  p=self._dropout, state_outputs=self._get_next_state, mode=self._mode,
                  name=f"{self._prefix}rnn", **named)
        if not self._get_next_state:
            outputs, states = rnn, []
        else:
            outputs = rnn[0]
            states = [rnn[k] for k in range(1, len(rnn.list_outputs()))]
            for state in states:
                state._set_attr(__layout__="LNC")
        if axis == 1:
            outputs = _op("SwapAxis", outputs, dim1=0, dim2=1)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def unfuse(self) -> SequentialRNNCell:
        """The equivalent stack of unrolled cells (BidirectionalCell per layer when
        bidirectional), with the parameter names ``unpack_weights`` gives."""
        h = self._num_hidden
        make = {"rnn_relu": lambda p: RNNCell(h, activation="relu", prefix=p),
                "rnn_tanh": lambda p: RNNCell(h, activation="tanh", prefix=p),
                "lstm": lambda p: LSTMCell(h, prefix=p),
                "gru": lambda p: GRUCell(h, prefix=p)}[self._mode]
        stack = SequentialRNNCell()
        for i in range(self._num_layers):
            left = make(f"{self._prefix}l{i}_")
            if self._bidirectional:
                stack.add(BidirectionalCell(left, make(f"{self._prefix}r{i}_"),
                                            output_prefix=f"{self._prefix}bi_l{i}_"))
            else:
                stack.add(left)
        return stack


class BidirectionalCell(BaseRNNCell):
    """``l_cell`` over the sequence and ``r_cell`` over it reversed; their outputs (the right
    one reversed back) concatenated per step along the feature axis."""

    def __init__(self, l_cell: BaseRNNCell, r_cell: BaseRNNCell,
                 params: RNNParams | None = None, output_prefix: str = "bi_"):
        super().__init__("", params=params)
        self._output_prefix = output_prefix
        if params is not None:
            if not (l_cell._own_params and r_cell._own_params):
                raise RNNError("Either specify params for BidirectionalCell or child cells, "
                               "not both.")
            l_cell.params._params.update(self.params._params)
            r_cell.params._params.update(self.params._params)
        self.params._params.update(l_cell.params._params)
        self.params._params.update(r_cell.params._params)
        self._cells = [l_cell, r_cell]

    def unpack_weights(self, args: dict) -> dict:
        return unpack_cells(self._cells, args)

    def pack_weights(self, args: dict) -> dict:
        return pack_cells(self._cells, args)

    def __call__(self, inputs: Symbol, states: list) -> tuple[Symbol, list]:
        raise RNNError("BidirectionalCell cannot be stepped. Please use unroll")

    @property
    def state_info(self) -> list:
        return sum((c.state_info for c in self._cells), [])

    def begin_state(self, **kwargs: Any) -> list:
        if self._modified:
            raise RNNError("After applying modifier cells (e.g. DropoutCell) the base cell "
                           "cannot be called directly. Call the modifier cell instead.")
        return sum((c.begin_state(**kwargs) for c in self._cells), [])

    def unroll(self, length: int, inputs: Any, begin_state: list | None = None,
               layout: str = "NTC", merge_outputs: bool | None = None) -> tuple[Any, list]:
        """Outputs named ``{output_prefix}t{i}`` per step, or ``{output_prefix}out`` merged;
        states ``[left states, right states]`` (nested, as MXNet returns them)."""
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        l_cell, r_cell = self._cells
        n = len(l_cell.state_info)
        l_out, l_states = l_cell.unroll(length, inputs=inputs, begin_state=states[:n],
                                        layout=layout, merge_outputs=merge_outputs)
        r_out, r_states = r_cell.unroll(length, inputs=list(reversed(inputs)),
                                        begin_state=states[n:], layout=layout,
                                        merge_outputs=merge_outputs)
        if merge_outputs is None:
            merge_outputs = isinstance(l_out, Symbol) and isinstance(r_out, Symbol)
            if not merge_outputs:
                l_out, r_out = (list(_op("SliceChannel", o, axis=axis, num_outputs=length,
                                         squeeze_axis=1)) if isinstance(o, Symbol) else o
                                for o in (l_out, r_out))
        if merge_outputs:
            out = _op("Concat", l_out, _op("reverse", r_out, axis=axis), dim=2,
                      name=f"{self._output_prefix}out")
            return out, [l_states, r_states]
        outputs = [_op("Concat", lo, ro, dim=1, name=f"{self._output_prefix}t{i}")
                   for i, (lo, ro) in enumerate(zip(l_out, reversed(r_out)))]
        return outputs, [l_states, r_states]


@register
class FusedRNN(Initializer):
    """Initialize a FusedRNNCell's packed vector gate by gate: ``init`` (or the global
    initializer) for each unpacked array, the LSTM forget-gate biases at ``forget_bias``."""

    def __init__(self, init: Any, num_hidden: int, num_layers: int, mode: str,
                 bidirectional: bool = False, forget_bias: float = 1.0):
        if isinstance(init, str):
            init = create(init)
        super().__init__(init=init.dumps() if init is not None else None,
                         num_hidden=num_hidden, num_layers=num_layers, mode=mode,
                         bidirectional=bidirectional, forget_bias=forget_bias)
        self._init = init
        self._cell_args = (num_hidden, num_layers, mode, bidirectional)
        self._forget_bias = forget_bias

    def _init_weight(self, desc: Any, arr: Any) -> None:
        num_hidden, num_layers, mode, bidirectional = self._cell_args
        cell = FusedRNNCell(num_hidden, num_layers, mode, bidirectional,
                            forget_bias=self._forget_bias, prefix="")
        args = cell.unpack_weights({"parameters": _numpy(arr)})
        for name, value in args.items():
            if mode == "lstm" and name.endswith("_f_bias"):
                value[...] = self._forget_bias
            else:
                init = self._init or getattr(desc, "global_init", None)
                if init is None:
                    raise RNNError(f"FusedRNN initializer for {desc}: no inner or global "
                                   f"initializer to initialize {name} with")
                init(InitDesc(name, global_init=getattr(desc, "global_init", None)), value)
        arr[...] = cell.pack_weights(args)["parameters"]
