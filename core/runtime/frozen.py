"""Frozen arrays: parameters whose values a backend baked into something it built (the
``onnxrt`` backend writes them into its region models as ONNX initializers, so that ONNX
Runtime can fold BatchNorm into Conv and pre-pack weights).

A frozen array is made read-only, so an in-place write by user code fails loudly instead of
being silently ignored by the baked copy. graphexec's own writers (``copy_params_from``,
``forward(**kwargs)``) go through :func:`assign`, which writes and then tells every owner
that baked the array, so it rebuilds from the new values. An array is thawed (writable again)
when the last owner lets it go (:func:`release`, called when the owner is collected).
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["freeze", "release", "assign", "is_frozen"]

# id(array) -> [array, {token: on_change}]
_FROZEN: dict[int, list] = {}


def freeze(array: Any, token: object, on_change: Callable[[], None]) -> None:
    """Make ``array`` read-only on behalf of ``token``; ``on_change()`` runs after every
    :func:`assign` to it. Host (numpy) arrays only; other arrays are left writable and must
    not be frozen."""
    entry = _FROZEN.get(id(array))
    if entry is None:
        entry = _FROZEN[id(array)] = [array, {}, array.flags.writeable]
        array.flags.writeable = False
    entry[1][token] = on_change


def release(array_id: int, token: object) -> None:
    """``token`` no longer holds the array with id ``array_id``: thaw it when no owner is
    left."""
    entry = _FROZEN.get(array_id)
    if entry is None:
        return
    entry[1].pop(token, None)
    if not entry[1]:
        del _FROZEN[array_id]
        entry[0].flags.writeable = entry[2]


def is_frozen(array: Any) -> bool:
    """Whether some backend holds ``array`` frozen."""
    return id(array) in _FROZEN


def assign(dst: Any, value: Any) -> None:
    """``dst[...] = value``, also for a frozen ``dst`` (whose owners are then told)."""
    entry = _FROZEN.get(id(dst))
    if entry is None or entry[0] is not dst:
        dst[...] = value
        return
    dst.flags.writeable = True
    try:
        dst[...] = value
    finally:
        dst.flags.writeable = False
    for on_change in list(entry[1].values()):
        on_change()
