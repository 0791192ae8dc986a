"""Python-level operator functions of ``mx.sym`` that rewrite their arguments before
creating a node (MXNet 1.9.1 defines them in ``symbol.py``, not as operators):
``histogram`` and ``split_v2``."""
from __future__ import annotations

from typing import Any

from ..ir.errors import ArgumentTypeError
from .symbol import Symbol, create_op_symbol

__all__ = ["histogram", "split_v2"]


def histogram(a: Symbol, bins: Any = 10, range: Any = None, **kwargs: Any) -> Symbol:  # noqa: A002
    """``_histogram``: ``bins`` a Symbol of bin edges, or a count of equal bins over
    ``range`` (which is then required)."""
    if isinstance(bins, Symbol):
        return create_op_symbol("_histogram", [a, bins], kwargs)
    if isinstance(bins, int) and not isinstance(bins, bool):
        if range is None:
            raise ArgumentTypeError("histogram: range must be given with a bin count")
        return create_op_symbol("_histogram", [a], {"bin_cnt": bins, "range": range, **kwargs})
    raise ArgumentTypeError(f"histogram: bins must be a Symbol of edges or an int count, got "
                            f"{type(bins).__name__}")


def split_v2(ary: Symbol, indices_or_sections: Any, axis: int = 0,
             squeeze_axis: bool = False, **kwargs: Any) -> Symbol:
    """``_split_v2``: ``indices_or_sections`` an int (equal sections) or a tuple of split
    points (MXNet prepends 0 to them)."""
    if isinstance(indices_or_sections, int) and not isinstance(indices_or_sections, bool):
        indices, sections = (), indices_or_sections
    elif isinstance(indices_or_sections, tuple):
        indices, sections = (0, *indices_or_sections), 0
    else:
        raise ArgumentTypeError("split_v2: indices_or_sections must either int or tuple of "
                                "ints")
    return create_op_symbol("_split_v2", [ary], {"indices": indices, "axis": axis,
                                                 "squeeze_axis": squeeze_axis,
                                                 "sections": sections, **kwargs})
