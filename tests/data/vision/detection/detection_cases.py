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


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype("float32")


def _multibox_cases(out):
    rng = _rng(4)
    feat = rng.uniform(0, 1, (2, 3, 4, 5)).astype("float32")
    prior = "_contrib_MultiBoxPrior"
    out.update({
        "prior_default": dict(op=prior, inputs=[feat], attrs={}, grad=(0,)),
        "prior_sizes_ratios": dict(op=prior, inputs=[feat], attrs=dict(
            sizes=(0.3, 0.6, 0.9), ratios=(1, 2, 0.5, 3))),
        "prior_clip_steps": dict(op=prior, inputs=[feat], attrs=dict(
            sizes=(0.5, 0.8), ratios=(1, 2), clip=True, steps=(0.2, 0.3), offsets=(0.2, 0.7))),
    })
    anchors = corner_boxes(rng, 30, hi=0.4)[None]
    labels = np.full((2, 4, 6), -1, "float32")
    gts = corner_boxes(rng, 5, lo=0.1, hi=0.4)
    labels[0, :3, 0], labels[0, :3, 1:5] = [0, 2, 1], gts[:3]
    labels[1, :2, 0], labels[1, :2, 1:5] = [1, 1], gts[3:]
    labels[:, :, 5] = 7  # a column beyond the box: ignored
    labels[1, 2:, 5] = -1
    preds = rng.normal(0, 1, (2, 3, 30)).astype("float32")
    target = "_contrib_MultiBoxTarget"
    empty = np.full((2, 3, 5), -1, "float32")
    out.update({
        "target_default": dict(op=target, inputs=[anchors, labels, preds], attrs={},
                               grad=(2,)),
        "target_threshold": dict(op=target, inputs=[anchors, labels, preds], attrs=dict(
            overlap_threshold=0.2, variances=(0.1, 0.2, 0.3, 0.4), ignore_label=-2)),
        "target_bipartite_only": dict(op=target, inputs=[anchors, labels, preds],
                                      attrs=dict(overlap_threshold=0)),
        "target_mining": dict(op=target, inputs=[anchors, labels, preds], attrs=dict(
            overlap_threshold=0.3, negative_mining_ratio=2, negative_mining_thresh=0.4,
            minimum_negative_samples=3)),
        "target_no_labels": dict(op=target, inputs=[anchors, empty, preds], attrs={}),
    })
    n = 24
    anchors = corner_boxes(rng, n, hi=0.3)[None]
    anchors = np.concatenate([anchors, anchors + 0.02], 1)  # near duplicates overlap
    n *= 2
    logits = rng.normal(0, 2, (2, 4, n))
    probs = _softmax(logits, 1)
    probs[0, :, :3] = [[0.1], [0.3], [0.3], [0.3]]  # tied class scores: the first wins
    locs = rng.normal(0, 0.5, (2, n * 4)).astype("float32")
    det = "_contrib_MultiBoxDetection"
    out.update({
        "detection_default": dict(op=det, inputs=[probs, locs, anchors], attrs={},
                                  grad=(0, 1)),
        "detection_threshold_topk": dict(op=det, inputs=[probs, locs, anchors], attrs=dict(
            threshold=0.3, nms_topk=10, nms_threshold=0.3)),
        "detection_force_noclip": dict(op=det, inputs=[probs, locs, anchors], attrs=dict(
            force_suppress=True, clip=False, variances=(0.2, 0.2, 0.1, 0.1),
            nms_threshold=0.45)),
        "detection_no_nms": dict(op=det, inputs=[probs, locs, anchors], attrs=dict(
            nms_threshold=0, threshold=0.2)),
    })


def _roi_cases(out):
    rng = _rng(5)
    data = rng.normal(0, 1, (2, 8, 9, 10)).astype("float32")
    rois = np.array([[0, 1.5, 2.2, 20.4, 25.1], [1, 0, 0, 39, 35], [0, 10.3, 5.2, 14.1, 30.7],
                     [1, 30, 30, 31, 31], [0, -6, -4, 10, 12], [1, 38, 2, 60, 50],
                     [1, 17.5, 9.5, 18.5, 10.5]], "float32")
    align, pool = "_contrib_ROIAlign", "ROIPooling"
    out.update({
        "roialign_default": dict(op=align, inputs=[data, rois], attrs=dict(
            pooled_size=(3, 3), spatial_scale=0.25), grad=(0, 1)),
        "roialign_sample2": dict(op=align, inputs=[data, rois], attrs=dict(
            pooled_size=(2, 4), spatial_scale=0.25, sample_ratio=2), grad=(0,)),
        "roialign_aligned": dict(op=align, inputs=[data, rois], attrs=dict(
            pooled_size=(2, 2), spatial_scale=0.5, aligned=True, sample_ratio=3), grad=(0,)),
        "roialign_position_sensitive": dict(op=align, inputs=[data, rois], attrs=dict(
            pooled_size=(2, 2), spatial_scale=0.25, position_sensitive=True), grad=(0,)),
        "roipool_default": dict(op=pool, inputs=[data, rois], attrs=dict(
            pooled_size=(3, 3), spatial_scale=0.25), grad=(0, 1)),
        "roipool_fine": dict(op=pool, inputs=[data, rois], attrs=dict(
            pooled_size=(4, 5), spatial_scale=0.5), grad=(0,)),
        "roipool_scale1": dict(op=pool, inputs=[data[:, :, :6, :7], rois / 4], attrs=dict(
            pooled_size=(2, 2), spatial_scale=1.0)),
    })
    n_anchor, hgt, wid = 6, 5, 6
    prob = _softmax(rng.normal(0, 1, (2, 2, n_anchor, hgt, wid)), 1)
    prob = prob.reshape(2, 2 * n_anchor, hgt, wid)
    deltas = rng.normal(0, 0.2, (2, 4 * n_anchor, hgt, wid)).astype("float32")
    info = np.array([[80, 96, 1.0], [70, 90, 0.8]], "float32")
    common = dict(scales=(2, 4), ratios=(0.5, 1, 2), feature_stride=16)
    prop, multi = "_contrib_Proposal", "_contrib_MultiProposal"
    out.update({
        "proposal_default": dict(op=prop, inputs=[prob[:1], deltas[:1], info[:1]],
                                 attrs=dict(common, rpn_pre_nms_top_n=100,
                                            rpn_post_nms_top_n=20, rpn_min_size=8,
                                            threshold=0.6), grad=(0, 1)),
        "proposal_score_cycle": dict(op=prop, inputs=[prob[:1], deltas[:1], info[:1]],
                                     attrs=dict(common, rpn_pre_nms_top_n=12,
                                                rpn_post_nms_top_n=30, threshold=0.3,
                                                rpn_min_size=4, output_score=True)),
        "proposal_iou_loss": dict(op=prop, inputs=[prob[:1], deltas[:1] * 10, info[:1]],
                                  attrs=dict(common, rpn_post_nms_top_n=15, iou_loss=True,
                                             output_score=True, rpn_min_size=2)),
        "multiproposal": dict(op=multi, inputs=[prob, deltas, info], attrs=dict(
            common, rpn_pre_nms_top_n=60, rpn_post_nms_top_n=16, threshold=0.5,
            rpn_min_size=6, output_score=True)),
        "multiproposal_no_pre": dict(op=multi, inputs=[prob, deltas, info], attrs=dict(
            common, rpn_pre_nms_top_n=-1, rpn_post_nms_top_n=10, threshold=0.7)),
    })


def _rfcn_cases(out):
    rng = _rng(6)
    data = rng.normal(0, 1, (2, 2 * 3 * 3, 9, 10)).astype("float32")
    rois = np.array([[0, 1.5, 2.5, 20.4, 25.1], [1, 0, 0, 39, 35], [0, 10.3, 5.2, 14.1, 30.7],
                     [1, 30, 30, 31, 31], [0, -6, -4, 10, 12], [1, 38, 2, 60, 50]], "float32")
    ps = "_contrib_PSROIPooling"
    out.update({
        "psroipool": dict(op=ps, inputs=[data, rois], grad=(0, 1), attrs=dict(
            spatial_scale=0.25, output_dim=2, pooled_size=3)),
        "psroipool_group": dict(op=ps, inputs=[data[:, :8], rois], grad=(0,), attrs=dict(
            spatial_scale=0.5, output_dim=2, pooled_size=4, group_size=2)),
    })
    feat = rng.normal(0, 1, (2, 3, 9, 10)).astype("float32")
    rot = np.array([[0, 20, 18, 16, 8, 0], [1, 15, 20, 12, 24, 30], [0, 30, 10, 40, 6, -45],
                    [1, 5, 5, 2, 2, 90], [0, 38, 34, 10, 10, 170]], "float32")
    rr = "_contrib_RROIAlign"
    out.update({
        "rroialign": dict(op=rr, inputs=[feat, rot], attrs=dict(pooled_size=(2, 3),
                                                                spatial_scale=0.25)),
        "rroialign_sampling": dict(op=rr, inputs=[feat, rot], attrs=dict(
            pooled_size=(3, 3), spatial_scale=0.5, sampling_ratio=2)),
    })


def build_cases():
    out = {}
    for fill in (_nms_cases, _box_cases, _matching_cases, _multibox_cases, _roi_cases,
                 _rfcn_cases):
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
    "prior_rank3": dict(op="_contrib_MultiBoxPrior", inputs=[(1, 4, 4)], attrs={}),
    "prior_offsets": dict(op="_contrib_MultiBoxPrior", inputs=[(1, 1, 4, 4)],
                          attrs=dict(offsets=(0.5, 1.5))),
    "prior_steps_one_given": dict(op="_contrib_MultiBoxPrior", inputs=[(1, 1, 4, 4)],
                                  attrs=dict(steps=(0.25, -1))),
    "prior_negative_size": dict(op="_contrib_MultiBoxPrior", inputs=[(1, 1, 4, 4)],
                                attrs=dict(sizes=(-0.5,))),
    "target_anchor_width": dict(op="_contrib_MultiBoxTarget",
                                inputs=[(1, 8, 5), (2, 3, 5), (2, 3, 8)], attrs={}),
    "target_label_width": dict(op="_contrib_MultiBoxTarget",
                               inputs=[(1, 8, 4), (2, 3, 4), (2, 3, 8)], attrs={}),
    "target_anchor_count": dict(op="_contrib_MultiBoxTarget",
                                inputs=[(1, 8, 4), (2, 3, 5), (2, 3, 7)], attrs={}),
    "target_bad_padding": dict(op="_contrib_MultiBoxTarget", attrs={}, inputs=[
        np.array([[[0.1, 0.1, 0.4, 0.4], [0.5, 0.5, 0.9, 0.9]]], "float32"),
        np.array([[[0, 0.1, 0.1, 0.3, 0.3], [-1, 0.2, 0.2, 0.5, 0.5]]], "float32"),
        np.zeros((1, 2, 2), "float32")]),
    "detection_loc_count": dict(op="_contrib_MultiBoxDetection",
                                inputs=[(1, 3, 8), (1, 30), (1, 8, 4)], attrs={}),
    "roialign_rois_width": dict(op="_contrib_ROIAlign", inputs=[(1, 2, 4, 4), (3, 4)],
                                attrs=dict(pooled_size=(2, 2), spatial_scale=1.0)),
    "roialign_data_rank": dict(op="_contrib_ROIAlign", inputs=[(2, 4, 4), (3, 5)],
                               attrs=dict(pooled_size=(2, 2), spatial_scale=1.0)),
    "roialign_negative_scale": dict(op="_contrib_ROIAlign", inputs=[(1, 2, 4, 4), (3, 5)],
                                    attrs=dict(pooled_size=(2, 2), spatial_scale=-0.5)),
    "roialign_pooled_zero": dict(op="_contrib_ROIAlign", inputs=[(1, 2, 4, 4), (3, 5)],
                                 attrs=dict(pooled_size=(0, 2), spatial_scale=1.0)),
    "roialign_ps_channels": dict(op="_contrib_ROIAlign", inputs=[(1, 6, 4, 4), (3, 5)],
                                 attrs=dict(pooled_size=(2, 2), spatial_scale=1.0,
                                            position_sensitive=True)),
    "roipool_rois_rank": dict(op="ROIPooling", inputs=[(1, 2, 4, 4), (5,)],
                              attrs=dict(pooled_size=(2, 2), spatial_scale=1.0)),
    "roipool_scale": dict(op="ROIPooling", inputs=[(1, 2, 4, 4), (3, 5)],
                          attrs=dict(pooled_size=(2, 2), spatial_scale=2.0)),
    "proposal_batch2": dict(op="_contrib_Proposal", inputs=[(2, 24, 3, 3), (2, 48, 3, 3),
                                                            (2, 3)], attrs={}),
    "proposal_anchor_count": dict(op="_contrib_Proposal", inputs=[(1, 10, 3, 3),
                                                                  (1, 20, 3, 3), (1, 3)],
                                  attrs={}),
    "psroipool_rois_width": dict(op="_contrib_PSROIPooling", inputs=[(1, 8, 4, 4), (2, 4)],
                                 attrs=dict(spatial_scale=1.0, output_dim=2, pooled_size=2)),
    "rroialign_rois_width": dict(op="_contrib_RROIAlign", inputs=[(1, 2, 4, 4), (2, 5)],
                                 attrs=dict(pooled_size=(2, 2), spatial_scale=1.0)),
    "rroialign_scale": dict(op="_contrib_RROIAlign", inputs=[(1, 2, 4, 4), (2, 6)],
                            attrs=dict(pooled_size=(2, 2), spatial_scale=-1.0)),
    "prior_float64": dict(op="_contrib_MultiBoxPrior", attrs={},
                          inputs=[np.ones((1, 1, 2, 2), "float64")]),
    "detection_variances": dict(op="_contrib_MultiBoxDetection",
                                inputs=[(1, 3, 8), (1, 32), (1, 8, 4)],
                                attrs=dict(variances=(0.1, 0.2))),
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
    "prior_rank3": ["data", "4 dimensions"], "prior_offsets": ["offsets", "[0, 1]"],
    "prior_steps_one_given": ["steps"], "prior_negative_size": ["sizes", "positive"],
    "target_anchor_width": ["anchor", "(1, num_anchors, 4)"], "target_label_width": ["label"],
    "target_anchor_count": ["cls_pred", "anchors"], "target_bad_padding": ["label row 1"],
    "detection_loc_count": ["loc_pred", "4 values per anchor"],
    "detection_variances": ["variances", "4 values"],
    "roialign_rois_width": ["rois", "(num_rois, 5)"], "roialign_data_rank": ["data", "4-D"],
    "roialign_negative_scale": ["spatial_scale"], "roialign_pooled_zero": ["pooled_size"],
    "roialign_ps_channels": ["position_sensitive", "channels"],
"roipool_rois_rank": ["rois"],
    "roipool_scale": ["spatial_scale", "[0, 1]"], "proposal_batch2": ["one image"],
    "proposal_anchor_count": ["cls_prob", "anchors"],
    "psroipool_rois_width": ["rois", "(num_rois, 5)"],
    "rroialign_rois_width": ["rois", "(num_rois, 6)"], "rroialign_scale": ["spatial_scale"],
}
