"""PartitionPlan: for every operator node, which region and backend claimed it, or why none
did. Serialisable to JSON and printable as a table."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

__all__ = ["PartitionPlan", "NodeDecision", "Region", "REASONS", "node_labels"]

#: the reasons a node is left unclaimed
REASONS = {
    "unsupported": "no backend supports the op",
    "cycle": "excluded to avoid a cycle",
    "min_size": "region below the minimum size",
    "filter": "rejected by the selector's filter",
    "inference_only": "property skipped as inference_only (gradients requested)",
    "order": "excluded to keep the argument order",
    "disabled": "property disabled",
    "dynamic": "output shape depends on the data (dynamic shape): runs natively, its shape "
               "settled at run time",
    "after_dynamic": "shape settles only at run time (after a dynamic-shape op): runs natively",
}


def node_labels(nodes) -> list[str]:
    """The plan's row key of each operator node, in graph order: its name, or ``name#k`` for
    the k-th node (k >= 2) of a name several nodes share."""
    seen: dict[str, int] = {}
    out = []
    for node in nodes:
        seen[node.name] = seen.get(node.name, 0) + 1
        out.append(node.name if seen[node.name] == 1 else f"{node.name}#{seen[node.name]}")
    return out


@dataclass
class NodeDecision:
    node: str
    op: str
    backend: str | None = None
    region: int | None = None
    reason: str | None = None


@dataclass
class Region:
    id: int
    backend: str
    property: str
    node: str
    members: list[str]
    inputs: list[str]
    outputs: list[str]
    #: "claimed", or "fallback" when its backend failed at run time and the native kernels
    #: run it instead (``cause`` says why)
    status: str = "claimed"
    cause: str | None = None


@dataclass
class PartitionPlan:
    """Decisions of one partitioning (one or several backends applied in order)."""

    backends: list[str] = field(default_factory=list)
    nodes: dict[str, NodeDecision] = field(default_factory=dict)
    regions: list[Region] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)   # properties/backends not applied, why
    fallbacks: int = 0
    host_copies: int = 0   # arrays copied host<->device by regions run off their context
    #: the ``auto`` strategy's measurements: per candidate region, its backend, members,
    #: timings_ms (native and the backend's) and what was chosen
    decisions: list[dict] = field(default_factory=list)
    #: id(node.attrs) -> label, for nodes whose name is not unique in the graph
    _labels: dict = field(default_factory=dict, repr=False, compare=False)

    def register(self, nodes) -> None:
        """List the operator ``nodes`` in this order. MXNet graphs may hold several nodes of
        one name (Gluon reuses a block): the second and later get the label ``name#2``,
        ``name#3``... so each keeps its own row. The label follows a node through
        partitioning because the copies the partitioner makes share their original's
        ``attrs`` dict."""
        ops = [n for n in nodes if n.op is not None]
        for node, label in zip(ops, node_labels(ops)):
            if label != node.name:
                self._labels[id(node.attrs)] = label
            self.decide(node, None)

    def label(self, node) -> str:
        """The node's row key: its name, or ``name#k`` for the k-th node of a repeated name."""
        return self._labels.get(id(node.attrs), node.name)

    def decide(self, node, reason: str | None) -> None:
        """Record why ``node`` was not claimed (the first reason given wins; None only
        registers the node)."""
        label = self.label(node)
        d = self.nodes.setdefault(label, NodeDecision(label, node.op.name))
        if d.region is None and d.reason is None:
            d.reason = reason

    def claim(self, node, backend: str, region: int) -> None:
        label = self.label(node)
        d = self.nodes.setdefault(label, NodeDecision(label, node.op.name))
        d.backend, d.region, d.reason = backend, region, None

    def mark_fallbacks(self, states: dict[str, dict]) -> None:
        """Mark the regions whose runner fell back to the native kernels, from the region
        states by node name (a backward region ``<node>_backward`` marks its forward one)."""
        for region in self.regions:
            causes = [f"{'backward: ' if name != region.node else ''}{state['fallback_cause']}"
                      for name, state in states.items()
                      if name in (region.node, region.node + "_backward")
                      and state.get("fallback_cause")]
            if causes:
                region.status, region.cause = "fallback", "; ".join(causes)

    def _fell_back(self) -> set[int]:
        return {r.id for r in self.regions if r.status == "fallback"}

    @property
    def num_claimed(self) -> int:
        """Operator nodes a backend runs (a region that fell back to native does not count)."""
        fell = self._fell_back()
        return sum(1 for d in self.nodes.values() if d.region is not None and d.region not in fell)

    def claimed_by_backend(self) -> dict[str, int]:
        """Backend -> operator nodes it runs (regions that fell back left out)."""
        return self._count_by_backend(lambda d, fell: d.region not in fell)

    def fallen_back_by_backend(self) -> dict[str, int]:
        """Backend -> operator nodes of its regions that fell back to native at run time."""
        return self._count_by_backend(lambda d, fell: d.region in fell)

    def _count_by_backend(self, keep) -> dict[str, int]:
        fell, out = self._fell_back(), {}
        for d in self.nodes.values():
            if d.backend is not None and d.region is not None and keep(d, fell):
                out[d.backend] = out.get(d.backend, 0) + 1
        return out

    def to_dict(self) -> dict:
        return {"backends": self.backends, "skipped": self.skipped, "fallbacks": self.fallbacks,
                "host_copies": self.host_copies, "decisions": self.decisions,
                "regions": [asdict(r) for r in self.regions],
                "nodes": [asdict(d) for d in self.nodes.values()]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    def table(self) -> str:
        """One line per operator node: node, op, region/backend or the reason (a region that
        fell back to native at run time says so, with its cause)."""
        rows = [("node", "op", "claimed by", "reason")]
        causes = {r.id: r.cause for r in self.regions if r.status == "fallback"}
        for d in self.nodes.values():
            claimed = f"{d.backend} region {d.region}" if d.region is not None else "-"
            reason = REASONS.get(d.reason, d.reason or "")
            if d.region in causes:
                claimed += " (fell back to native)"
                reason = f"runs natively: {causes[d.region]}"
            rows.append((d.node, d.op, claimed, reason))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)

    def __str__(self) -> str:
        return self.table()
