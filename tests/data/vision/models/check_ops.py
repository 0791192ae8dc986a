"""Which operators of the GluonCV corpus graphexec lacks, per model (run with graphexec's
environment, after make_models.py):

    python tests/data/vision/models/check_ops.py [/work/refdata/vision]

Prints, per exported model, the operators no declaration registers (by MXNet name) and the
ones without an ONNX converter, then every missing operator with the models that need it.
"""
import json
import os
import sys
from pathlib import Path

from graphexec.backends.onnxrt.converters import CONVERTERS
from graphexec.core.ops import find_op


def model_ops(path: Path) -> list[str]:
    nodes = json.loads(path.read_text())["nodes"]
    return sorted({n["op"] for n in nodes} - {"null"})


def main(folder: str) -> None:
    files = sorted(Path(folder).glob("*-symbol.json"))
    needed_by: dict[str, list[str]] = {}
    for path in files:
        name = path.name[:-len("-symbol.json")]
        ops = model_ops(path)
        missing = [op for op in ops if find_op(op) is None]
        no_onnx = [op for op in ops if find_op(op) is not None
                   and find_op(op).name not in CONVERTERS]
        for op in missing:
            needed_by.setdefault(op, []).append(name)
        print(f"{name}: {len(ops)} ops; missing {missing or '-'}; no ONNX converter "
              f"{no_onnx or '-'}")
    print("\nmissing operators:")
    for op, models in sorted(needed_by.items()):
        print(f"  {op}: {', '.join(models)}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("GRAPHEXEC_VISION_MODELS",
                                                              "/work/refdata/vision"))
