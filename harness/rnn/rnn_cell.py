"""``gx.rnn`` cells: MXNet 1.9.1's symbolic recurrent cells (``RNNCell``, ``LSTMCell``,
``GRUCell``, ``SequentialRNNCell``, ``DropoutCell``) that ``unroll`` into graphs of
FullyConnected / SliceChannel / Activation nodes with MXNet's parameter and node names
(``lstm_i2h_weight``, ``lstm_t3_out``, ...)."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from graphexec.core.ir.errors import GraphexecError
from graphexec.core.ir.ndarray import NDArray
from graphexec.core.symbol.symbol import Symbol, Variable, create_op_symbol

from ..initializer import LSTMBias
from ..ndarray import array

__all__ = ["RNNParams", "BaseRNNCell", "RNNCell", "LSTMCell", "GRUCell", "SequentialRNNCell",
           "DropoutCell", "RNNError"]


class RNNError(GraphexecError, ValueError):
    """A recurrent cell was used with inputs or states it cannot take."""


def _op(op_name: str, *inputs: Symbol, **attrs: Any) -> Symbol:
    return create_op_symbol(op_name, list(inputs), attrs)


def _normalize_sequence(length: int | None, inputs: Any, layout: str, merge: bool | None,
                        in_layout: str | None = None) -> tuple[Any, int]:
    """``inputs`` as a list of per-step symbols (merge False) or one symbol (merge True)."""
    if inputs is None:
        raise RNNError("unroll(inputs=None) has been deprecated. Please create input variables "
                       "outside unroll.")
    axis = layout.find("T")
    in_axis = in_layout.find("T") if in_layout is not None else axis
    if isinstance(inputs, Symbol):
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise RNNError("unroll doesn't allow grouped symbol as input. Please convert to "
                               "list with list(inputs) first or let unroll handle splitting.")
            inputs = list(_op("SliceChannel", inputs, axis=in_axis, num_outputs=length,
                              squeeze_axis=1))
    else:
        if length is not None and len(inputs) != length:
            raise RNNError(f"unroll of length {length} got {len(inputs)} inputs")
        if merge is True:
            inputs = _op("Concat", *[_op("expand_dims", i, axis=axis) for i in inputs],
                         dim=axis)
            in_axis = axis
    if isinstance(inputs, Symbol) and axis != in_axis:
        inputs = _op("SwapAxis", inputs, dim1=axis, dim2=in_axis)
    return inputs, axis


def _numpy(arr: Any) -> np.ndarray:
    return arr.asnumpy() if hasattr(arr, "asnumpy") else np.asarray(arr)


def _like(template: Any, value: np.ndarray) -> Any:
    """``value`` as the kind of array ``template`` is (an NDArray stays an NDArray)."""
    if isinstance(template, NDArray):
        return array(value, dtype=value.dtype)
    return value


def _pop_param(args: dict, name: str, cell: Any) -> Any:
    if name not in args:
        raise RNNError(f"{type(cell).__name__} (prefix {cell._prefix!r}) expects a parameter "
                       f"named {name!r}; the arguments given are {sorted(args)}")
    return args.pop(name)


def unpack_cells(cells: Sequence[Any], args: dict) -> dict:
    """``args`` unpacked by each of ``cells`` in turn."""
    for cell in cells:
        args = cell.unpack_weights(args)
    return args


def pack_cells(cells: Sequence[Any], args: dict) -> dict:
    """``args`` packed by each of ``cells`` in turn."""
    for cell in cells:
        args = cell.pack_weights(args)
    return args


class RNNParams:
    """The parameter variables of cells, created once per name (with the prefix)."""

    def __init__(self, prefix: str = ""):
        self._prefix = prefix
        self._params: dict[str, Symbol] = {}

    def get(self, name: str, **kwargs: Any) -> Symbol:
        """The variable ``prefix + name`` (created with ``kwargs`` on first use)."""
        name = self._prefix + name
        if name not in self._params:
            self._params[name] = Variable(name, **kwargs)
        return self._params[name]


class BaseRNNCell:
    """A recurrent cell: ``cell(inputs, states) -> (output, new_states)`` for one step;
    ``unroll`` applies it over a sequence."""

    def __init__(self, prefix: str = "", params: RNNParams | None = None):
        self._own_params = params is None
        self._params = params if params is not None else RNNParams(prefix)
        self._prefix = prefix
        self._modified = False
        self.reset()

    def reset(self) -> None:
        """Restart the step and begin-state counters (names restart at t0)."""
        self._init_counter = -1
        self._counter = -1
        for cell in getattr(self, "_cells", []):
            cell.reset()

    def __call__(self, inputs: Symbol, states: list) -> tuple[Symbol, list]:
        raise NotImplementedError

    @property
    def params(self) -> RNNParams:
        self._own_params = False
        return self._params

    @property
    def state_info(self) -> list:
        raise NotImplementedError

    @property
    def state_shape(self) -> list:
        return [info["shape"] for info in self.state_info]

    @property
    def _gate_names(self) -> Sequence[str]:
        return ()

    def unpack_weights(self, args: dict) -> dict:
        """A copy of ``args`` with this cell's ``i2h``/``h2h`` weights and biases split into
        one array per gate (``{prefix}i2h_i_weight``, ...)."""
        args = dict(args)
        gates, h = self._gate_names, getattr(self, "_num_hidden", 0)
        if not gates:
            return args
        for group in ("i2h", "h2h"):
            wholes = {kind: _pop_param(args, f"{self._prefix}{group}_{kind}", self)
                      for kind in ("weight", "bias")}
            # MXNet's key order: each gate's weight, then its bias
            for j, gate in enumerate(gates):
                for kind, whole in wholes.items():
                    args[f"{self._prefix}{group}{gate}_{kind}"] = _like(
                        whole, _numpy(whole)[j * h:(j + 1) * h].copy())
        return args

    def pack_weights(self, args: dict) -> dict:
        """The inverse of ``unpack_weights``: per-gate arrays joined into ``{prefix}i2h_weight``
        and friends."""
        args = dict(args)
        if not self._gate_names:
            return args
        for group in ("i2h", "h2h"):
            for kind in ("weight", "bias"):
                parts = [_pop_param(args, f"{self._prefix}{group}{gate}_{kind}", self)
                         for gate in self._gate_names]
                args[f"{self._prefix}{group}_{kind}"] = _like(
                    parts[0], np.concatenate([_numpy(a) for a in parts]))
        return args

    def begin_state(self, func: Callable | None = None, **kwargs: Any) -> list:
        """Initial states (zeros of shape (0, num_hidden): the batch size is inferred)."""
        if self._modified:
            raise RNNError("After applying modifier cells (e.g. DropoutCell) the base cell "
                           "cannot be called directly. Call the modifier cell instead.")
        func = func or (lambda **kw: create_op_symbol("_zeros", [], kw))
        states = []
        for info in self.state_info:
            self._init_counter += 1
            attrs = dict(kwargs, **(info or {}))
            attrs.pop("__layout__", None)
            states.append(func(name=f"{self._prefix}begin_state_{self._init_counter}", **attrs))
        return states

    def unroll(self, length: int, inputs: Any, begin_state: list | None = None,
               layout: str = "NTC", merge_outputs: bool | None = None) -> tuple[Any, list]:
        """Apply the cell ``length`` times; outputs as a list, or merged along the time axis
        (``merge_outputs``)."""
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        outputs = []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _fully_connected(self, data: Symbol, which: str, num_hidden: int, name: str) -> Symbol:
        return _op("FullyConnected", data, getattr(self, f"_{which}W"),
                   getattr(self, f"_{which}B"), num_hidden=num_hidden, name=name)


class RNNCell(BaseRNNCell):
    """Elman cell: h' = activation(W_i x + b_i + W_h h + b_h)."""

    def __init__(self, num_hidden: int, activation: str = "tanh", prefix: str = "rnn_",
                 params: RNNParams | None = None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden, self._activation = num_hidden, activation
        self._iW, self._iB = self.params.get("i2h_weight"), self.params.get("i2h_bias")
        self._hW, self._hB = self.params.get("h2h_weight"), self.params.get("h2h_bias")

    @property
    def state_info(self) -> list:
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self) -> Sequence[str]:
        return ("",)

    def __call__(self, inputs: Symbol, states: list) -> tuple[Symbol, list]:
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        i2h = self._fully_connected(inputs, "i", self._num_hidden, f"{name}i2h")
        h2h = self._fully_connected(states[0], "h", self._num_hidden, f"{name}h2h")
        output = _op("Activation", i2h + h2h, act_type=self._activation, name=f"{name}out")
        return output, [output]


class LSTMCell(BaseRNNCell):
    """Long short-term memory (gates i, f, c, o; the forget gate's bias starts at
    ``forget_bias``)."""

    def __init__(self, num_hidden: int, prefix: str = "lstm_", params: RNNParams | None = None,
                 forget_bias: float = 1.0):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW, self._hW = self.params.get("i2h_weight"), self.params.get("h2h_weight")
        self._iB = self.params.get("i2h_bias", init=LSTMBias(forget_bias=forget_bias))
        self._hB = self.params.get("h2h_bias")

    @property
    def state_info(self) -> list:
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}] * 2

    @property
    def _gate_names(self) -> Sequence[str]:
        return ["_i", "_f", "_c", "_o"]

    def __call__(self, inputs: Symbol, states: list) -> tuple[Symbol, list]:
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        gates = (self._fully_connected(inputs, "i", self._num_hidden * 4, f"{name}i2h")
                 + self._fully_connected(states[0], "h", self._num_hidden * 4, f"{name}h2h"))
        parts = _op("SliceChannel", gates, num_outputs=4, name=f"{name}slice")
        in_gate = _op("Activation", parts[0], act_type="sigmoid", name=f"{name}i")
        forget_gate = _op("Activation", parts[1], act_type="sigmoid", name=f"{name}f")
        in_transform = _op("Activation", parts[2], act_type="tanh", name=f"{name}c")
        out_gate = _op("Activation", parts[3], act_type="sigmoid", name=f"{name}o")
        next_c = _op("elemwise_add", forget_gate * states[1], in_gate * in_transform,
                     name=f"{name}state")
        next_h = _op("elemwise_mul", out_gate, _op("Activation", next_c, act_type="tanh"),
                     name=f"{name}out")
        return next_h, [next_h, next_c]


class GRUCell(BaseRNNCell):
    """Gated recurrent unit (gates r, z, o)."""

    def __init__(self, num_hidden: int, prefix: str = "gru_", params: RNNParams | None = None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW, self._iB = self.params.get("i2h_weight"), self.params.get("i2h_bias")
        self._hW, self._hB = self.params.get("h2h_weight"), self.params.get("h2h_bias")

    @property
    def state_info(self) -> list:
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self) -> Sequence[str]:
        return ["_r", "_z", "_o"]

    def __call__(self, inputs: Symbol, states: list) -> tuple[Symbol, list]:
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        prev = states[0]
        i2h = self._fully_connected(inputs, "i", self._num_hidden * 3, f"{name}_i2h")
        h2h = self._fully_connected(prev, "h", self._num_hidden * 3, f"{name}_h2h")
        i2h_r, i2h_z, i2h = _op("SliceChannel", i2h, num_outputs=3, name=f"{name}_i2h_slice")
        h2h_r, h2h_z, h2h = _op("SliceChannel", h2h, num_outputs=3, name=f"{name}_h2h_slice")
        reset = _op("Activation", i2h_r + h2h_r, act_type="sigmoid", name=f"{name}_r_act")
        update = _op("Activation", i2h_z + h2h_z, act_type="sigmoid", name=f"{name}_z_act")
        candidate = _op("Activation", i2h + reset * h2h, act_type="tanh", name=f"{name}_h_act")
        next_h = _op("elemwise_add", (1.0 - update) * candidate, update * prev,
                     name=f"{name}out")
        return next_h, [next_h]


class SequentialRNNCell(BaseRNNCell):
    """Cells stacked: each one's output is the next one's input."""

    def __init__(self, params: RNNParams | None = None):
        super().__init__(prefix="", params=params)
        self._override_cell_params = params is not None
        self._cells: list[BaseRNNCell] = []

    def add(self, cell: BaseRNNCell) -> None:
        """Stack ``cell`` on top."""
        self._cells.append(cell)
        if self._override_cell_params:
            if not cell._own_params:
                raise RNNError("Either specify params for SequentialRNNCell or child cells, "
                               "not both.")
            cell.params._params.update(self.params._params)
        self.params._params.update(cell.params._params)

    @property
    def state_info(self) -> list:
        return sum((c.state_info for c in self._cells), [])

    def begin_state(self, **kwargs: Any) -> list:
        return sum((c.begin_state(**kwargs) for c in self._cells), [])

    def unpack_weights(self, args: dict) -> dict:
        return unpack_cells(self._cells, args)

    def pack_weights(self, args: dict) -> dict:
        return pack_cells(self._cells, args)

    def __call__(self, inputs: Symbol, states: list) -> tuple[Symbol, list]:
        self._counter += 1
        next_states, p = [], 0
        for cell in self._cells:
            n = len(cell.state_info)
            inputs, state = cell(inputs, states[p:p + n])
            p += n
            next_states.extend(state)
        return inputs, next_states

    def unroll(self, length: int, inputs: Any, begin_state: list | None = None,
               layout: str = "NTC", merge_outputs: bool | None = None) -> tuple[Any, list]:
        self.reset()
        begin_state = self.begin_state() if begin_state is None else begin_state
        next_states, p = [], 0
        for i, cell in enumerate(self._cells):
            n = len(cell.state_info)
            inputs, states = cell.unroll(length, inputs=inputs, begin_state=begin_state[p:p + n],
                                         layout=layout,
                                         merge_outputs=None if i < len(self._cells) - 1
                                         else merge_outputs)
            p += n
            next_states.extend(states)
        return inputs, next_states


class DropoutCell(BaseRNNCell):
    """Dropout on the inputs (no state)."""

    def __init__(self, dropout: float, prefix: str = "dropout_", params: RNNParams | None = None):
        super().__init__(prefix, params)
        if not isinstance(dropout, (int, float)):
            raise RNNError("dropout probability must be a number")
        self.dropout = dropout

    @property
    def state_info(self) -> list:
        return []

    def __call__(self, inputs: Symbol, states: list) -> tuple[Symbol, list]:
        if self.dropout > 0:
            inputs = _op("Dropout", inputs, p=self.dropout)
        return inputs, states

    def unroll(self, length: int, inputs: Any, begin_state: list | None = None,
               layout: str = "NTC", merge_outputs: bool | None = None) -> tuple[Any, list]:
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, Symbol):
            return self(inputs, [])
        return super().unroll(length, inputs, begin_state, layout, merge_outputs)
