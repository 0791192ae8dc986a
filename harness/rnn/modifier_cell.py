"""``gx.rnn`` modifier cells: MXNet 1.9.1's ``ModifierCell`` (wraps a base cell, which may
then no longer be called directly), ``ZoneoutCell`` and ``ResidualCell``."""
from __future__ import annotations

from typing import Any, Callable

from graphexec.core.symbol.symbol import Symbol, create_op_symbol

from .fused_cell import BidirectionalCell, FusedRNNCell
from .rnn_cell import (BaseRNNCell, RNNError, RNNParams, SequentialRNNCell,
                       _normalize_sequence, _op)

__all__ = ["ModifierCell", "ZoneoutCell", "ResidualCell"]


class ModifierCell(BaseRNNCell):
    """A cell that modifies ``base_cell``: it shares the base cell's parameters and states,
    and marks the base cell modified so that only the modifier is used."""

    def __init__(self, base_cell: BaseRNNCell):
        super().__init__()
        base_cell._modified = True
        self.base_cell = base_cell

    @property
    def params(self) -> RNNParams:
        self._own_params = False
        return self.base_cell.params

    @property
    def state_info(self) -> list:
        return self.base_cell.state_info

    def begin_state(self, func: Callable | None = None, **kwargs: Any) -> list:
        """The base cell's begin states (named with its prefix)."""
        if self._modified:
            raise RNNError("After applying modifier cells (e.g. DropoutCell) the base cell "
                           "cannot be called directly. Call the modifier cell instead.")
        self.base_cell._modified = False
        try:
            # SequentialRNNCell.begin_state takes no func
            if func is None:
                return self.base_cell.begin_state(**kwargs)
            return self.base_cell.begin_state(func, **kwargs)
        finally:
            self.base_cell._modified = True

    def unpack_weights(self, args: dict) -> dict:
        return self.base_cell.unpack_weights(args)

    def pack_weights(self, args: dict) -> dict:
        return self.base_cell.pack_weights(args)

    def __call__(self, inputs: Symbol, states: list) -> tuple[Symbol, list]:
        raise NotImplementedError


def _zoneout_mask(p: float, like: Symbol) -> Symbol:
    # ones dropped out with probability p (and scaled, which `where` ignores: only != 0 counts)
    return _op("Dropout", _op("ones_like", like), p=p)


class ZoneoutCell(ModifierCell):
    """Zoneout: during training each output / state unit keeps its previous value with
    probability ``zoneout_outputs`` / ``zoneout_states``."""

    def __init__(self, base_cell: BaseRNNCell, zoneout_outputs: float = 0.0,
                 zoneout_states: float = 0.0):
        if isinstance(base_cell, FusedRNNCell):
            raise RNNError("FusedRNNCell doesn't support zoneout. Please unfuse first.")
        if isinstance(base_cell, BidirectionalCell) or (
                isinstance(base_cell, SequentialRNNCell)
                and any(isinstance(c, BidirectionalCell) for c in base_cell._cells)):
            raise RNNError("BidirectionalCell doesn't support zoneout since it doesn't support "
                           "step. Please add ZoneoutCell to the cells underneath instead.")
        super().__init__(base_cell)
        self.zoneout_outputs, self.zoneout_states = zoneout_outputs, zoneout_states
        self.prev_output: Symbol | None = None

    def reset(self) -> None:
        super().reset()
        self.prev_output = None

    def __call__(self, inputs: Symbol, states: list) -> tuple[Symbol, list]:
        next_output, next_states = self.base_cell(inputs, states)
        prev = self.prev_output
        if prev is None:
            # shape (0, 0): `where` takes the step output's shape
            prev = create_op_symbol("_zeros", [], {"shape": (0, 0)})
        output = next_output
        if self.zoneout_outputs != 0.0:
            output = _op("where", _zoneout_mask(self.zoneout_outputs, next_output),
                         next_output, prev)
        if self.zoneout_states != 0.0:
            next_states = [_op("where", _zoneout_mask(self.zoneout_states, new), new, old)
                           for new, old in zip(next_states, states)]
        self.prev_output = output
        return output, next_states


class ResidualCell(ModifierCell):
    """The base cell's output plus its input (Wu et al., 2016), named
    ``{output}_plus_residual``."""

    def __call__(self, inputs: Symbol, states: list) -> tuple[Symbol, list]:
        output, states = self.base_cell(inputs, states)
        return _op("elemwise_add", output, inputs, name=f"{output.name}_plus_residual"), states

    def unroll(self, length: int, inputs: Any, begin_state: list | None = None,
               layout: str = "NTC", merge_outputs: bool | None = None) -> tuple[Any, list]:
        """The base cell unrolled (fused cells included), the inputs added to its outputs."""
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs,
                                                    begin_state=begin_state, layout=layout,
                                                    merge_outputs=merge_outputs)
        finally:
            self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, Symbol)
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if merge_outputs:
            return _op("elemwise_add", outputs, inputs,
                       name=f"{outputs.name}_plus_residual"), states
        return [_op("elemwise_add", o, i, name=f"{o.name}_plus_residual")
                for o, i in zip(outputs, inputs)], states
