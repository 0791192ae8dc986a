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

from ..ir.errors import BindError

__all__ = ["freeze", "release", "assign", "is_frozen", "explain"]

# id(array) -> [array, {token: on_change}, writeable before, {token: holder}]
_FROZEN: dict[int, list] = {}


def freeze(array: Any, token: object, on_change: Callable[[], None], holder: str = "") -> None:
    """Make ``array`` read-only on behalf of ``token``; ``on_change()`` runs after every
    :func:`assign` to it; ``holder`` says who holds it ("onnxrt region 'r' (freeze_params)"),
    for the error a write elsewhere meets. Host (numpy) arrays only; other arrays are left
    writable and must not be frozen."""
    entry = _FROZEN.get(id(array))
    if entry is None:
        entry = _FROZEN[id(array)] = [array, {}, array.flags.writeable, {}]
        array.flags.writeable = False
    entry[1][token] = on_change
    entry[3][token] = holder or "a subgraph backend"


def release(array_id: int, token: object) -> None:
    """``token`` no longer holds the array with id ``array_id``: thaw it when no owner is
    left."""
    entry = _FROZEN.get(array_id)
    if entry is None:
        return
    entry[1].pop(token, None)
    entry[3].pop(token, None)
    if not entry[1]:
        del _FROZEN[array_id]
        entry[0].flags.writeable = entry[2]


def is_frozen(array: Any) -> bool:
    """Whether some backend holds ``array`` frozen."""
    return id(array) in _FROZEN


def explain(named: list[tuple[str, Any]]) -> str | None:
    """Why some of these (name, array) pairs are read-only, when a backend froze them (each
    holder's own words, with its fix), for the error of a write that failed; None when none
    is frozen."""
    by_holder: dict[str, list[str]] = {}
    for name, array in named:
        entry = _FROZEN.get(id(array))
        for holder in set(entry[3].values()) if entry is not None else ():
            if name not in by_holder.setdefault(holder, []):
                by_holder[holder].append(name)
    return "; ".join(f"{', '.join(map(repr, names))} {'is' if len(names) == 1 else 'are'} "
                     f"held read-only by {holder}" for holder, names in by_holder.items()) or None


def assign(dst: Any, value: Any, what: str = "the array") -> None:
    """``dst[...] = value``, also for a frozen ``dst`` (whose owners are then told); a
    read-only ``dst`` that no backend froze is a :class:`BindError` naming ``what``."""
    entry = _FROZEN.get(id(dst))
    if entry is None or entry[0] is not dst:
        if getattr(getattr(dst, "flags", None), "writeable", True):  # cupy has no flag
            dst[...] = value
            return
        raise BindError(f"{what} is bound to a read-only array, which graphexec does not "
                        f"write; bind a writable array (np.array(x) makes a writable copy)")
    dst.flags.writeable = True
    try:
        dst[...] = value
    finally:
        dst.flags.writeable = False
    for on_change in list(entry[1].values()):
        on_change()
