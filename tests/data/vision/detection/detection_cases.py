"""The cases make_detection.py records: name -> {op, inputs (arrays), attrs, grad (indices of
inputs whose gradient is recorded), tol, note}; and ERRORS, bad input given to MXNet (an
input is an array, or a shape tuple filled with uniform values in [0.1, 1))."""
import numpy as np


def _rng(seed):
    return np.random.RandomState(seed)


def corner_boxes(rng, n, size=1.0, lo=0.05, hi=0.5):
    """n corner boxes (x1, y1, x2, y2) inside [0, size]^2, float32."""
    xy = rng.uniform(0, size * (1 - hi), (n, 2))
    wh = rng.uniform(size * lo, size * hi, (n, 2))
    return np.concatenate([xy, xy + wh], axis=1).astype("float32")


def nms_rows(rng, n, classes=3, clusters=4, ties=True):
    """[id, score, x1, y1, x2, y2] rows in a few clusters (so boxes overlap), with repeated
    scores (ties) when asked."""
    centers = rng.uniform(0.2, 0.8, (clusters, 2))
    c = centers[rng.randint(0, clusters, n)] + rng.normal(0, 0.03, (n, 2))
    wh = rng.uniform(0.1, 0.3, (n, 2))
    boxes = np.concatenate([c - wh / 2, c + wh / 2], axis=1)
    scores = rng.uniform(0, 1, n)
    if ties:
        scores = np.round(scores * 5) / 5
    ids = rng.randint(0, classes, n)
    return np.concatenate([ids[:, None], scores[:, None], boxes], axis=1).astype("float32")


def _nms_cases(out):
    rng = _rng(1)
    base = nms_rows(rng, 24)
    batch = np.stack([nms_rows(rng, 16), nms_rows(rng, 16)])
    center = base.copy()
    center[:, 2:4] = (base[:, 2:4] + base[:, 4:6]) / 2
    center[:, 4:6] = base[:, 4:6] - base[:, 2:4]
    neg = base.copy()
    neg[:5, 2] -= 0.6  # negative left edges: MXNet skips them in format conversion
    moved = np.concatenate([base[:, 1:2], base[:, 2:6], base[:, 0:1]], axis=1)  # score 0
    nms = "_contrib_box_nms"
    out.update({
        "nms_default": dict(op=nms, inputs=[base], attrs={}, grad=(0,)),
        "nms_ids": dict(op=nms, inputs=[base], attrs=dict(id_index=0, overlap_thresh=0.3),
                        grad=(0,)),
        "nms_force": dict(op=nms, inputs=[base], attrs=dict(id_index=0, force_suppress=True,
                                                             overlap_thresh=0.3)),
        "nms_background": dict(op=nms, inputs=[base], attrs=dict(
            id_index=0, background_id=1, valid_thresh=0.3, overlap_thresh=0.4)),
        "nms_topk": dict(op=nms, inputs=[base], attrs=dict(topk=7, overlap_thresh=0.2),
                         grad=(0,)),
        "nms_topk0": dict(op=nms, inputs=[base], attrs=dict(topk=0), grad=(0,)),
        "nms_batch": dict(op=nms, inputs=[batch], attrs=dict(overlap_thresh=0.45), grad=(0,)),
        "nms_4d": dict(op=nms, inputs=[batch.reshape(2, 1, 16, 6)], attrs=dict(
            id_index=0, topk=10)),
        "nms_center": dict(op=nms, inputs=[center], attrs=dict(in_format="center",
                                                                out_format="center")),
        "nms_center_to_corner": dict(op=nms, inputs=[center], attrs=dict(
            in_format="center", out_format="corner"), grad=(0,)),
        "nms_corner_to_center": dict(op=nms, inputs=[neg], attrs=dict(
            out_format="center", overlap_thresh=0.6)),
        "nms_layout": dict(op=nms, inputs=[moved], attrs=dict(
            score_index=0, coord_start=1, id_index=5, overlap_thresh=0.35)),
        "nms_none_valid": dict(op=nms, inputs=[base], attrs=dict(valid_thresh=2.0),
                               grad=(0,)),
        "nms_thresh0": dict(op=nms, inputs=[base], attrs=dict(overlap_thresh=0.0)),
        "nms_thresh1": dict(op=nms, inputs=[base], attrs=dict(overlap_thresh=1.0)),
        "nms_float64": dict(op=nms, inputs=[base.astype("float64")], attrs=dict(
            id_index=0, overlap_thresh=0.25), grad=(0,)),
        "nms_alias": dict(op="_contrib_box_non_maximum_suppression", inputs=[base],
                          attrs=dict(overlap_thresh=0.5, topk=12)),
    })


def _box_cases(out):
    rng = _rng(2)
    a, b = corner_boxes(rng, 6), corner_boxes(rng, 5)
    a[0] = [0.5, 0.5, 0.4, 0.6]  # negative width: area 0
    b[1] = a[2]                  # identical boxes
    centers = np.concatenate([(a[:, :2] + a[:, 2:]) / 2, np.abs(a[:, 2:] - a[:, :2])], 1)
    out.update({
        "iou_corner": dict(op="_contrib_box_iou", inputs=[a, b], attrs={}, grad=(0, 1)),
        "iou_center": dict(op="_contrib_box_iou", inputs=[centers, b], attrs=dict(
            format="center")),
        "iou_nd": dict(op="_contrib_box_iou", inputs=[a.reshape(2, 3, 4), b[None]],
                       attrs={}),
    })
    anchors = corner_boxes(rng, 8)[None]
    deltas = rng.normal(0, 0.5, (2, 8, 4)).astype("float32")
    deltas[0, 0, 2:] = 6.0  # past the clip
    canchors = np.concatenate([(anchors[..., :2] + anchors[..., 2:]) / 2,
                               anchors[..., 2:] - anchors[..., :2]], -1)
    out.update({
        "decode_corner": dict(op="_contrib_box_decode", inputs=[deltas, anchors], attrs=dict(
            format="corner", std0=0.1, std1=0.1, std2=0.2, std3=0.2), grad=(0, 1)),
        "decode_center_clip": dict(op="_contrib_box_decode", inputs=[deltas, canchors],
                                   attrs=dict(clip=4.135)),
    })
    samples = np.array([[1, -1, 0, 1, 1, 0, -1, 1], [0, 1, 1, -1, 1, 1, 0, 0]], "float32")
    matches = rng.randint(0, 3, (2, 8)).astype("float32")
    refs = corner_boxes(rng, 6).reshape(2, 3, 4)
    means = np.array([0, 0.1, 0, -0.1], "float32")
    stds = np.array([0.1, 0.1, 0.2, 0.2], "float32")
    out["encode"] = dict(op="_contrib_box_encode", attrs={}, grad=(2, 3),
                         inputs=[samples, matches, np.repeat(anchors, 2, 0), refs, means,
                                 stds])


def _matching_cases(out):
    rng = _rng(3)
    scores = np.round(rng.uniform(0, 1, (2, 5, 4)), 1).astype("float32")  # ties
    doc = np.array([[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]], "float32")
    m = "_contrib_bipartite_matching"
    out.update({
        "matching_doc": dict(op=m, inputs=[doc], attrs=dict(threshold=1e-12)),
        "matching_batch": dict(op=m, inputs=[scores], attrs=dict(threshold=0.35),
                               grad=(0,)),
        "matching_ascend": dict(op=m, inputs=[scores], attrs=dict(threshold=0.75,
                                                                  is_ascend=True)),
        "matching_topk": dict(op=m, inputs=[scores], attrs=dict(threshold=0.0, topk=2)),
        "matching_3d_batch": dict(op=m, inputs=[scores.reshape(2, 1, 5, 4)],
                                  attrs=dict(threshold=0.2)),
    })


def build_cases():
    out = {}
    for fill in (_nms_cases, _box_cases, _matching_cases):
        fill(out)
    return out


ERRORS = {
    "nms_rank1": dict(op="_contrib_box_nms", inputs=[(6,)], attrs={}),
    "nms_narrow": dict(op="_contrib_box_nms", inputs=[(5, 4)], attrs={}),
    "nms_narrow_ids": dict(op="_contrib_box_nms", inputs=[(5, 5)], attrs=dict(id_index=0)),
    "nms_score_out_of_range": dict(op="_contrib_box_nms", inputs=[(5, 6)],
                                   attrs=dict(score_index=6)),
    "nms_score_in_coords": dict(op="_contrib_box_nms", inputs=[(5, 6)],
                                attrs=dict(score_index=3)),
    "nms_coords_out_of_range": dict(op="_contrib_box_nms", inputs=[(5, 6)],
                                    attrs=dict(coord_start=3)),
    "nms_id_is_score": dict(op="_contrib_box_nms", inputs=[(5, 6)],
                            attrs=dict(id_index=1)),
    "nms_bad_format": dict(op="_contrib_box_nms", inputs=[(5, 6)],
                           attrs=dict(in_format="xywh")),
    "iou_not_boxes": dict(op="_contrib_box_iou", inputs=[(3, 5), (2, 4)], attrs={}),
    "iou_rank1": dict(op="_contrib_box_iou", inputs=[(4,), (2, 4)], attrs={}),
    "decode_rank2": dict(op="_contrib_box_decode", inputs=[(8, 4), (1, 8, 4)], attrs={}),
    "decode_anchor_width": dict(op="_contrib_box_decode", inputs=[(1, 8, 4), (1, 8, 5)],
                                attrs={}),
    "encode_anchor_width": dict(op="_contrib_box_encode",
                                inputs=[(1, 8), (1, 8), (1, 8, 3), (1, 2, 4), (4,), (4,)],
                                attrs={}),
    "matching_rank1": dict(op="_contrib_bipartite_matching", inputs=[(5,)],
                           attrs=dict(threshold=0.1)),
}

#: what graphexec's error for each bad input must name (checked by the replay test)
MENTIONS = {
    "nms_rank1": ["dimensions"], "nms_narrow": ["box width"], "nms_narrow_ids": ["class id"],
    "nms_score_out_of_range": ["score_index"], "nms_score_in_coords": ["score_index"],
    "nms_coords_out_of_range": ["coord_start"], "nms_id_is_score": ["id_index"],
    "nms_bad_format": ["in_format"], "iou_not_boxes": ["lhs", "4"],
    "iou_rank1": ["lhs", "dimensions"], "decode_rank2": ["data", "3 dimensions"],
    "decode_anchor_width": ["anchors", "4"], "encode_anchor_width": ["anchors", "4"],
    "matching_rank1": ["score matrix"],
}
