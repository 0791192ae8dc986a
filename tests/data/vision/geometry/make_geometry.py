"""Reference data for the resampling/geometry and normalisation/legacy vision operators
(issue 17): MXNet 1.9.1's forward outputs, input gradients and shape inference on small cases,
edge cases included, and its answer to bad input.

    MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=1 /path/to/mxvenv/bin/python make_geometry.py

The harness is tests/data/seq/ops/common.py (shared with the seq family); geometry.json and
geometry.npz are written next to this script.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "seq", "ops"))
import common  # noqa: E402
from common import Family, np, rng_for  # noqa: E402

common.OUTDIR = HERE
F = Family("geometry")
f32 = np.float32


def U(name, *shape, lo=-1.0, hi=1.0):
    return rng_for(name).uniform(lo, hi, shape).astype(f32)


def arrays(name, shapes):
    """Inputs of ``shapes`` drawn uniformly in [-1, 1) (a list [shape, lo, hi] for a range)."""
    ins = []
    for k, s in enumerate(shapes):
        lo, hi = -1.0, 1.0
        if isinstance(s, list):
            s, lo, hi = s
        ins.append(U("%s/%d" % (name, k), *s, lo=lo, hi=hi))
    return ins


def case(name, op, shapes, attrs=None, **kw):
    return F.case(name, op, arrays(name, shapes), attrs, **kw)


def case_no_onednn(name, op, shapes, attrs=None, **kw):
    return F.case_env(name, op, arrays(name, shapes), attrs, **kw)


# ------------------------------------------------------------------ BilinearResize2D
R = "contrib.BilinearResize2D"
for ac in (True, False):
    t = "ac" if ac else "noac"
    case("resize_size_up_" + t, R, [(2, 3, 4, 5)], dict(height=7, width=9, align_corners=ac))
    case("resize_size_down_" + t, R, [(1, 2, 7, 6)], dict(height=3, width=4, align_corners=ac))
    case("resize_to1_" + t, R, [(1, 2, 4, 5)], dict(height=1, width=1, align_corners=ac))
    case("resize_scale_" + t, R, [(1, 2, 5, 6)], dict(scale_height=1.5, scale_width=0.5,
                                                      align_corners=ac))
    case("resize_like_" + t, R, [(1, 2, 4, 5), (1, 3, 6, 2)], dict(mode="like", align_corners=ac))
case("resize_same", R, [(1, 2, 4, 5)], dict(height=4, width=5))
case("resize_same_noac", R, [(1, 2, 4, 5)], dict(height=4, width=5, align_corners=False))
case("resize_scale_float", R, [(1, 1, 10, 30)], dict(scale_height=0.3, scale_width=0.1))
for m in ("odd_scale", "to_even_down", "to_even_up", "to_odd_down", "to_odd_up"):
    for hw in ((5, 6), (4, 7)):
        a = dict(mode=m)
        if m == "odd_scale":
            a.update(scale_height=2.0, scale_width=0.5)
        case("resize_%s_%dx%d" % (m, hw[0], hw[1]), R, [(1, 2) + hw], a)
F.error_case("resize_rank3", R, [("data", (2, 3, 4), "float32")], dict(height=2, width=2))
F.error_case("resize_bad_mode", R, [("data", (1, 1, 4, 4), "float32")], dict(mode="cubic"))
F.error_case("resize_zero_height", R, [("data", (1, 1, 4, 4), "float32")], dict(height=0, width=2))
F.error_case("resize_odd_scale_no_scale", R, [("data", (1, 1, 4, 4), "float32")],
             dict(mode="odd_scale"))
F.error_case("resize_scale_to_zero", R, [("data", (1, 1, 4, 4), "float32")],
             dict(scale_height=0.1, scale_width=0.1))

# ------------------------------------------------------------------ AdaptiveAvgPooling2D
A = "contrib.AdaptiveAvgPooling2D"
case("adaptive_2x3", A, [(2, 3, 5, 7)], dict(output_size=(2, 3)))
case("adaptive_square", A, [(1, 2, 6, 6)], dict(output_size=4))
case("adaptive_up", A, [(1, 2, 3, 2)], dict(output_size=(5, 4)))
case("adaptive_default", A, [(2, 2, 3, 4)], {})
case("adaptive_same", A, [(1, 2, 3, 4)], dict(output_size=(3, 4)))
F.error_case("adaptive_rank3", A, [("data", (2, 3, 4), "float32")], dict(output_size=2))
F.error_case("adaptive_three_sizes", A, [("data", (1, 1, 4, 4), "float32")],
             dict(output_size=(1, 2, 3)))

# ------------------------------------------------------------------ UpSampling (bilinear)
for s in (2, 3):
    c = 3
    k = 2 * s - s % 2
    case("upsample_bilinear_s%d" % s, "UpSampling", [(2, c, 3, 4), (c, 1, k, k)],
         dict(scale=s, sample_type="bilinear", num_filter=c))
case("upsample_nearest", "UpSampling", [(2, 3, 2, 3)], dict(scale=2, sample_type="nearest"))
F.case("upsample_nearest_concat", "UpSampling", arrays("unc", [(1, 2, 2, 2), (1, 1, 4, 4)]),
       dict(scale=2, sample_type="nearest", num_args=2))
F.case("upsample_nearest_sum", "UpSampling", arrays("uns", [(1, 2, 2, 2), (1, 2, 1, 1)]),
       dict(scale=2, sample_type="nearest", num_args=2, multi_input_mode="sum"))
F.error_case("upsample_bilinear_wrong_filters", "UpSampling",
             [("data", (1, 3, 2, 2), "float32"), ("weight", (2, 1, 4, 4), "float32")],
             dict(scale=2, sample_type="bilinear", num_filter=2))

# ------------------------------------------------------------------ depth_to_space / space_to_depth
case("d2s_b2", "depth_to_space", [(2, 8, 2, 3)], dict(block_size=2))
case("d2s_b3", "depth_to_space", [(1, 9, 2, 2)], dict(block_size=3))
case("s2d_b2", "space_to_depth", [(2, 2, 4, 6)], dict(block_size=2))
F.error_case("d2s_bad_channels", "depth_to_space", [("data", (1, 6, 2, 2), "float32")],
             dict(block_size=2))
F.error_case("s2d_bad_height", "space_to_depth", [("data", (1, 2, 3, 4), "float32")],
             dict(block_size=2))
F.error_case("d2s_rank3", "depth_to_space", [("data", (4, 2, 2), "float32")], dict(block_size=2))

# ------------------------------------------------------------------ Pooling 'same', Deconvolution
# MXNet 1.9.1 rejects every 'same' pooling (its pad check reads pad[1] of a 1-D pad)
F.error_case("pool_same_1d", "Pooling", [("data", (2, 3, 7), "float32")],
             dict(kernel=(3,), stride=(2,), pooling_convention="same"))
F.error_case("pool_same_2d", "Pooling", [("data", (1, 1, 4, 4), "float32")],
             dict(kernel=(2, 2), pooling_convention="same"))
F.error_case("pool_same_pad", "Pooling", [("data", (1, 1, 4), "float32")],
             dict(kernel=(2,), pad=(1,), pooling_convention="same"))
D = "Deconvolution"
# oneDNN cannot build these deconvolutions (MXNet fails with it on): recorded without it
DT = dict(stride=(2, 2), num_filter=3)
case_no_onednn("deconv_target", D, [(1, 2, 3, 4), (2, 3, 3, 3)],
               dict(DT, kernel=(3, 3), target_shape=(6, 8)))
case_no_onednn("deconv_target_odd", D, [(1, 2, 3, 4), (2, 3, 4, 4)],
               dict(DT, kernel=(4, 4), target_shape=(7, 9)))
case("deconv_adj", D, [(1, 2, 3, 3), (2, 2, 3, 3), (2,)],
     dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), adj=(1, 0), num_filter=2, no_bias=False))
case("deconv_adj_1d", D, [(2, 2, 4), (2, 1, 3)], dict(kernel=(3,), stride=(3,), adj=(2,),
                                                       num_filter=1))
F.error_case("deconv_adj_ge_stride", D, [("data", (1, 1, 3, 3), "float32"),
                                         ("weight", (1, 1, 3, 3), "float32")],
             dict(kernel=(3, 3), stride=(2, 2), adj=(2, 2), num_filter=1))
F.error_case("deconv_target_too_big", D, [("data", (1, 1, 3, 3), "float32"),
                                          ("weight", (1, 1, 3, 3), "float32")],
             dict(kernel=(3, 3), stride=(2, 2), target_shape=(20, 20), num_filter=1))

# ------------------------------------------------------------------ normalisation
case("instnorm", "InstanceNorm", [(2, 3, 4, 5), (3,), (3,)], dict(eps=1e-3))
case("instnorm_3d", "InstanceNorm", [(2, 3, 6), (3,), (3,)], dict(eps=0.1))
case("groupnorm", "GroupNorm", [(2, 4, 3, 3), (2,), (2,)], dict(num_groups=2))
case("groupnorm_mv", "GroupNorm", [(2, 6, 5), (3,), (3,)], dict(num_groups=3, eps=0.01,
                                                                 output_mean_var=True))
case("groupnorm_1", "GroupNorm", [(2, 3, 2, 2), (1,), (1,)], {})
F.error_case("groupnorm_indivisible", "GroupNorm", [("data", (1, 5, 2, 2), "float32"),
                                                    ("gamma", (2,), "float32"),
                                                    ("beta", (2,), "float32")],
             dict(num_groups=2))
for m in ("instance", "channel", "spatial"):
    case("l2norm_" + m, "L2Normalization", [(2, 3, 4, 2)], dict(mode=m))
    case("l2norm_3d_" + m, "L2Normalization", [(2, 3, 5)], dict(mode=m, eps=1e-3))
case("l2norm_2d", "L2Normalization", [(3, 4)], {})
case("lrn3", "LRN", [(2, 5, 3, 3)], dict(nsize=3))
case("lrn5", "LRN", [(1, 6, 2, 3)], dict(nsize=5, alpha=0.01, beta=0.5, knorm=1.5))
case("lrn4", "LRN", [(1, 6, 2, 2)], dict(nsize=4, alpha=0.1))
F.error_case("lrn_even_none", "LRN", [("data", (1, 2, 3), "float32")], {})

# ------------------------------------------------------------------ BatchNorm variants
BN_SHAPES = [(2, 3, 4, 2), (3,), (3,), [(3,), -0.5, 0.5], [(3,), 0.5, 1.5]]
for op, extra in (("BatchNorm_v1", {}), ("contrib.SyncBatchNorm", dict(key="k")),
                  ("contrib.BatchNormWithReLU", {})):
    short = op.split(".")[-1].lower()
    for suffix, attrs in (("", {}), ("_gamma", dict(fix_gamma=False, eps=1e-2)),
                          ("_global", dict(fix_gamma=False, use_global_stats=True)),
                          ("_mv", dict(fix_gamma=False, output_mean_var=True))):
        ins = arrays(short + suffix, BN_SHAPES)
        # the moving statistics by keyword: BatchNorm_v1's symbol function takes eps third
        ins[3:] = [("moving_mean", ins[3]), ("moving_var", ins[4])]
        F.case(short + suffix, op, ins, dict(extra, **attrs), nograd=(3, 4))

# ------------------------------------------------------------------ legacy layers
C1 = "Convolution_v1"
case("conv_v1", C1, [(2, 3, 5, 5), (4, 3, 3, 3), (4,)], dict(kernel=(3, 3), num_filter=4))
case("conv_v1_group", C1, [(1, 4, 6, 5), (4, 2, 3, 2)], dict(kernel=(3, 2), num_filter=4,
                                                              num_group=2, stride=(2, 1),
                                                              pad=(1, 1), dilate=(1, 2),
                                                              no_bias=True))
P1 = "Pooling_v1"
for pt in ("max", "avg", "sum"):
    case("pool_v1_" + pt, P1, [(2, 2, 5, 5)], dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                                                   pool_type=pt))
    case("pool_v1_full_" + pt, P1, [(1, 2, 6, 5)], dict(kernel=(3, 2), stride=(2, 2),
                                                        pool_type=pt, pooling_convention="full"))
case("pool_v1_global", P1, [(2, 3, 4, 3)], dict(kernel=(1, 1), global_pool=True, pool_type="avg"))

# ------------------------------------------------------------------ Crop
case("crop_hw", "Crop", [(2, 3, 5, 6)], dict(num_args=1, h_w=(2, 3), offset=(1, 2)))
case("crop_like", "Crop", [(2, 3, 5, 6), (1, 1, 3, 4)], dict(num_args=2, offset=(2, 1)),
     nograd=(1,))
case("crop_center", "Crop", [(1, 2, 6, 7)], dict(num_args=1, h_w=(3, 4), center_crop=True))
case("crop_center_like", "Crop", [(1, 2, 5, 6), (1, 1, 2, 2)], dict(num_args=2,
                                                                     center_crop=True),
     nograd=(1,))
F.error_case("crop_too_big", "Crop", [("data", (1, 1, 4, 4), "float32")],
             dict(num_args=1, h_w=(5, 2)))
F.error_case("crop_offset_out", "Crop", [("data", (1, 1, 4, 4), "float32")],
             dict(num_args=1, h_w=(2, 2), offset=(3, 0)))

# ------------------------------------------------------------------ grids and samplers
THETA = np.array([[0.9, 0.2, 0.1, -0.15, 1.1, -0.05], [1.2, -0.3, 0.2, 0.25, 0.8, 0.1]], f32)
F.case("grid_affine", "GridGenerator", [THETA], dict(transform_type="affine",
                                                     target_shape=(3, 4)))
case("grid_warp", "GridGenerator", [[(2, 2, 3, 4), -2.0, 2.0]], dict(transform_type="warp"))
F.error_case("grid_affine_bad", "GridGenerator", [("data", (2, 5), "float32")],
             dict(transform_type="affine", target_shape=(3, 4)))
F.error_case("grid_warp_rank", "GridGenerator", [("data", (2, 3, 4), "float32")],
             dict(transform_type="warp"))
case("sampler", "BilinearSampler", [(2, 3, 5, 6), [(2, 2, 3, 4), -1.2, 1.2]])
case("sampler_inside", "BilinearSampler", [(1, 2, 4, 4), [(1, 2, 5, 3), -0.9, 0.9]])
F.error_case("sampler_batch", "BilinearSampler", [("data", (2, 1, 4, 4), "float32"),
                                                  ("grid", (3, 2, 2, 2), "float32")])
F.case("stn", "SpatialTransformer", [U("stn/0", 2, 3, 5, 6), THETA],
       dict(target_shape=(3, 4), transform_type="affine", sampler_type="bilinear"))
F.case("stn_zoom", "SpatialTransformer", [U("stn_zoom/0", 1, 2, 4, 5), THETA[:1] * 1.6],
       dict(target_shape=(6, 5), transform_type="affine", sampler_type="bilinear"))

# ------------------------------------------------------------------ Correlation
case("corr", "Correlation", [(2, 3, 5, 6), (2, 3, 5, 6)],
     dict(kernel_size=1, max_displacement=2, stride1=1, stride2=1, pad_size=2))
case("corr_k3", "Correlation", [(1, 2, 7, 8), (1, 2, 7, 8)],
     dict(kernel_size=3, max_displacement=2, stride1=2, stride2=2, pad_size=3))
case("corr_sub", "Correlation", [(1, 2, 6, 6), (1, 2, 6, 6)],
     dict(kernel_size=1, max_displacement=1, pad_size=1, is_multiply=False))
F.error_case("corr_shapes", "Correlation", [("data1", (1, 2, 6, 6), "float32"),
                                            ("data2", (1, 2, 5, 6), "float32")],
             dict(max_displacement=1, pad_size=1))

# ------------------------------------------------------------------ im2col / col2im
case("im2col", "im2col", [(2, 3, 5, 6)], dict(kernel=(2, 3), stride=(1, 2), pad=(1, 0)))
case("im2col_dilate", "im2col", [(1, 2, 6, 5)], dict(kernel=(2, 2), dilate=(2, 1), pad=(1, 1)))
case("col2im", "col2im", [(2, 18, 12)], dict(output_size=(5, 6), kernel=(2, 3), stride=(1, 2),
                                             pad=(1, 0)))
case("col2im_dilate", "col2im", [(1, 8, 36)], dict(output_size=(6, 5), kernel=(2, 2),
                                                   dilate=(2, 1), pad=(1, 1)))
F.error_case("col2im_bad_blocks", "col2im", [("data", (1, 8, 7), "float32")],
             dict(output_size=(6, 5), kernel=(2, 2)))

# ------------------------------------------------------------------ deformable
case("deform_conv", "contrib.DeformableConvolution",
     [(2, 3, 5, 6), [(2, 18, 5, 6), -1.5, 1.5], (4, 3, 3, 3), (4,)],
     dict(kernel=(3, 3), num_filter=4, pad=(1, 1)))
case("deform_conv_groups", "contrib.DeformableConvolution",
     [(1, 4, 6, 5), [(1, 16, 4, 5), -1.5, 1.5], (4, 2, 2, 2)],
     dict(kernel=(2, 2), num_filter=4, stride=(2, 1), pad=(1, 1), dilate=(1, 2), num_group=2,
          num_deformable_group=2, no_bias=True))
case("mdeform_conv", "contrib.ModulatedDeformableConvolution",
     [(2, 3, 5, 6), [(2, 18, 5, 6), -1.5, 1.5], [(2, 9, 5, 6), 0.0, 1.0], (4, 3, 3, 3), (4,)],
     dict(kernel=(3, 3), num_filter=4, pad=(1, 1)))
case("mdeform_conv_groups", "contrib.ModulatedDeformableConvolution",
     [(1, 4, 6, 5), [(1, 16, 4, 5), -1.5, 1.5], [(1, 8, 4, 5), 0.0, 1.0], (4, 2, 2, 2)],
     dict(kernel=(2, 2), num_filter=4, stride=(2, 1), pad=(1, 1), dilate=(1, 2), num_group=2,
          num_deformable_group=2, no_bias=True))
ROIS = np.array([[0, 1, 1, 9, 8], [0, 0, 2, 5, 11], [1, 3.5, 0.5, 11, 10.5]], f32)
for nt, extra in (("", {}), ("_notrans", dict(no_trans=True))):
    ins = [U("dpsroi%s/0" % nt, 2, 8, 6, 6), ROIS]
    if not nt:
        ins.append(U("dpsroi/2", 3, 2, 2, 2))
    F.case("dpsroi" + nt, "contrib.DeformablePSROIPooling", ins,
           dict(spatial_scale=0.5, output_dim=2, group_size=2, pooled_size=2, part_size=2,
                sample_per_part=2, trans_std=0.1, **extra), nograd=(1,))

if __name__ == "__main__":
    F.save()
