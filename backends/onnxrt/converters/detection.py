"""Detection operators and ONNX: which ones ONNX expresses with MXNet 1.9.1's results, and
why the others end a region (the reason appears in the partition plan)."""
from __future__ import annotations

from ..convert import not_expressed

not_expressed("ONNX NonMaxSuppression returns the selected indices per class (ties and "
              "the IoU arithmetic as it likes), not MXNet's score-sorted rows padded with -1 "
              "and its hidden index record", "_contrib_box_nms")
not_expressed("a greedy, data-dependent matching ONNX has no operator for",
              "_contrib_bipartite_matching")
not_expressed("left to the native kernels: used when training detectors (target "
              "assignment), never at inference", "_contrib_box_encode")
not_expressed("left to the native kernels for now (elementwise box arithmetic ONNX could "
              "express; not converted yet)", "_contrib_box_iou", "_contrib_box_decode")
not_expressed("SSD training-target assignment (greedy matching, hard negative mining); "
              "training only", "_contrib_MultiBoxTarget")
not_expressed("anchor boxes depend only on the feature map's shape: left to the native "
              "kernel (the values could be a constant, not converted yet)",
              "_contrib_MultiBoxPrior")
not_expressed("MXNet's per-class NMS keeps every row in place (suppressed ones get class -1) "
              "after a stable score sort; ONNX NonMaxSuppression returns selected indices",
              "_contrib_MultiBoxDetection")
