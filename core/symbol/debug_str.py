"""``debug_str()`` in MXNet's layout: outputs, one block per op, allocated memory."""
from __future__ import annotations

from ..ir.graph import Entry, IndexedGraph

__all__ = ["graph_debug_str"]


def graph_debug_str(outputs: list[Entry], allocated_bytes: int | None = None) -> str:
    """Text of MXNet's ``Symbol.debug_str`` / ``Executor.debug_str`` (the latter passes the
    planned bytes, printed as ``Total N MB allocated``)."""
    ig = IndexedGraph(outputs)
    lines = ["Symbol Outputs:"]
    lines += [f"\toutput[{i}]={e.node.name}({e.index})" for i, e in enumerate(outputs)]
    for node in ig.nodes:
        if node.op is None:
            lines.append(f"Variable:{node.name}")
            continue
        lines.append("--------------------")
        lines.append(f"Op:{node.op.name}, Name={node.name}")
        lines.append("Inputs:")
        for i, e in enumerate(node.inputs):
            ver = f" version={e.version}" if e.node.op is None else ""
            lines.append(f"\targ[{i}]={e.node.name}({e.index}){ver}")
        if node.attrs:
            lines.append("Attrs:")
            lines += [f"\t{k}={node.attrs[k]}" for k in sorted(node.attrs)]
        if node.control_deps:
            lines.append("Control deps:")
            lines += [f"\tcdep[{i}]={d.name}" for i, d in enumerate(node.control_deps)]
    if allocated_bytes is not None:
        lines.append(f"Total {allocated_bytes >> 20} MB allocated")
        # MXNet prints a constant here (hard-coded in GraphExecutor::Print), kept for parity
        lines.append("Total 11 TempSpace resource requested")
    return "\n".join(lines) + "\n"
