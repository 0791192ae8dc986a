"""Reference data for the misc / loss / contrib operators (core/ops/misc.py, loss_extra.py,
contrib.py), recorded from MXNet 1.9.1 with the shared harness of tests/data/seq/ops:

    MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=2 /path/to/mxnet-1.9.1/bin/python make_misc.py

It writes misc.json and misc.npz next to this script.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "seq", "ops"))
import common  # noqa: E402
from common import Family, np, rng_for  # noqa: E402

common.OUTDIR = HERE
F = Family("misc")
f32 = np.float32


def R(name):
    return rng_for(name)


def u(name, *shape, lo=-2.0, hi=2.0, dtype=f32):
    return R(name).uniform(lo, hi, shape).astype(dtype)


# -- legacy aliases ------------------------------------------------------------------------
a, b = R("cmp").randint(-1, 2, (3, 4)).astype(f32), R("cmp2").randint(-1, 2, (3, 4)).astype(f32)
for op in ("_Equal", "_Not_Equal", "_Greater", "_Greater_Equal", "_Lesser", "_Lesser_Equal",
           "_Logical_And", "_Logical_Or", "_Logical_Xor"):
    F.case("alias" + op, "_internal." + op, [a, b], grad=False)
for op in ("_LogicalAndScalar", "_LogicalOrScalar", "_LogicalXorScalar"):
    F.case("alias" + op, "_internal." + op, [a], dict(scalar=1), grad=False)

# -- simple ops ----------------------------------------------------------------------------
F.case("smooth_l1", "smooth_l1", [u("sl1", 3, 4)])
F.case("smooth_l1_sigma", "smooth_l1", [u("sl1b", 3, 4)], dict(scalar=2.0))
F.case("softmin", "softmin", [u("smin", 3, 5)])
F.case("softmin_axis_t", "softmin", [u("smin2", 2, 3, 4)], dict(axis=1, temperature=2.0))
F.case("sce", "softmax_cross_entropy", [u("sce", 4, 5), np.array([0, 4, 2, 1], f32)],
       nograd=(1,))
F.error_case("moments_no_axes", "moments", [(None, (3, 4, 2), "float32")])
F.case("moments_axes", "moments", [u("mom2", 3, 4, 2)], dict(axes=(0, 2), keepdims=True))
F.case("moments_axis1", "moments", [u("mom3", 3, 4, 2)], dict(axes=(1,)))
F.case("diag_vec", "diag", [u("dv", 4)])
F.case("diag_vec_k", "diag", [u("dvk", 3)], dict(k=-1))
F.case("diag_mat_k", "diag", [u("dm", 3, 4)], dict(k=1))
F.case("diag_3d", "diag", [u("d3", 2, 3, 4)], dict(k=-1, axis1=2, axis2=1))
F.case("khatri_rao2", "khatri_rao", [u("kr1", 2, 3), u("kr2", 3, 3)])
F.case("khatri_rao3", "khatri_rao", [u("kr3", 2, 2), u("kr4", 1, 2), u("kr5", 3, 2)])
F.case("scatter_nd", "scatter_nd", [u("sn", 5), np.array([[0, 1, 2, 2, 0], [3, 0, 1, 3, 2]], f32)],
       dict(shape=(3, 4)), nograd=(1,))
F.case("scatter_nd_trailing", "scatter_nd",
       [u("sn2", 3, 2), np.array([[0, 2, 1]], np.int32)], dict(shape=(3, 2)))
F.case("ravel", "ravel_multi_index", [np.array([[0, 2, 1], [3, 1, 0], [4, 0, 2]], f32)],
       dict(shape=(3, 4, 5)), grad=False)
F.case("unravel", "unravel_index", [np.array([[0, 17, 59], [33, 8, 21]], f32)],
       dict(shape=(3, 4, 5)), grad=False)
F.case("unravel_int", "unravel_index", [np.array([5, 7, 11], np.int64)], dict(shape=(3, 4)),
       grad=False)
F.case("split_v2_indices", "_internal._split_v2", [u("sp", 3, 7, 2)], dict(indices=(0, 2, 3), axis=1))
F.case("split_v2_sections", "_internal._split_v2", [u("sp2", 5, 2)], dict(indices=(), axis=0, sections=3))
F.case("split_v2_squeeze", "_internal._split_v2", [u("sp3", 3, 2)],
       dict(indices=(0, 1, 2), axis=0, squeeze_axis=True))
F.case("slice_assign", "_internal._slice_assign", [u("sa", 4, 5), u("sa2", 2, 2)],
       dict(begin=(1, 0), end=(3, 4), step=(1, 2)), grad=False)
F.case("slice_assign_scalar", "_internal._slice_assign_scalar", [u("sas", 4, 5, 2)],
       dict(begin=(0, 1), end=(4, 5), step=(2, 3), scalar=1.5), grad=False)
F.case("crop_assign", "_internal._crop_assign", [u("ca", 3, 4), u("ca2", 2, 3)],
       dict(begin=(1, 1), end=(3, 4)), grad=False)
F.case("crop_assign_scalar", "_internal._crop_assign_scalar", [u("cas", 3, 4)],
       dict(begin=(0, 2), end=(2, 4), scalar=-7), grad=False)
F.case("all_finite_ok", "all_finite", [u("af", 3, 4)], grad=False)
nonfin = u("af2", 3, 4)
nonfin[1, 2] = np.nan
F.case("all_finite_nan", "all_finite", [nonfin], grad=False)
inf = u("af3", 2, 2)
inf[0, 0] = np.inf
F.case("multi_all_finite", "multi_all_finite", [u("maf", 3), inf], dict(num_arrays=2), grad=False)
F.case("multi_all_finite_ok", "multi_all_finite", [u("maf2", 3), u("maf3", 2)], dict(num_arrays=2),
       grad=False)
F.case_env("amp_cast_f16", "amp_cast", [u("ac", 3, 4)], dict(dtype="float16"), f64=False)
F.case_env("amp_cast_f64_passes", "amp_cast", [u("ac2", 3, 4, dtype=np.float64)], dict(dtype="float16"),
       f64=False)
F.case_env("amp_multicast", "amp_multicast", [u("am", 3, dtype=np.float16), u("am2", 2, 2)],
       dict(num_outputs=2), f64=False)
F.case_env("amp_multicast_narrow", "amp_multicast", [u("am3", 3, dtype=np.float16), u("am4", 2, 2)],
       dict(num_outputs=2, cast_narrow=True), f64=False)

# -- losses --------------------------------------------------------------------------------
svm_x = u("svm", 4, 3)
svm_l = np.array([0, 2, 1, 2], f32)
F.case("svm_l2", "SVMOutput", [svm_x, svm_l], nograd=(1,), no_hg=True)
F.case("svm_l1", "SVMOutput", [svm_x, svm_l], dict(use_linear=True, margin=0.5,
                                                   regularization_coefficient=2.0),
       nograd=(1,), no_hg=True)
F.case("svm_hg_ignored", "SVMOutput", [svm_x, svm_l], nograd=(1,), hg_scale=3.0)
ctc_x = u("ctc", 5, 3, 4)
F.case("ctc_first", "ctc_loss", [ctc_x, np.array([[1, 2], [3, 3], [2, 0]], f32)], nograd=(1,))
F.case("ctc_last", "contrib.ctc_loss", [ctc_x, np.array([[0, 2, -1], [1, -1, -1], [2, 1, 0]], f32)],
       dict(blank_label="last"), nograd=(1,))
F.case("ctc_lengths", "contrib.CTCLoss",
       [ctc_x, np.array([[1, 2, 3], [3, 3, 1], [2, 1, 1]], f32), np.array([5, 3, 4], f32),
        np.array([3, 2, 1], f32)],
       dict(use_data_lengths=True, use_label_lengths=True), nograd=(1, 2, 3))
F.case("ctc_data_lengths", "CTCLoss",
       [ctc_x, np.array([[1, 2], [3, 0], [2, 2]], f32), np.array([4, 2, 5], f32)],
       dict(use_data_lengths=True), nograd=(1, 2))
F.case("ctc_impossible", "ctc_loss", [u("ctc2", 3, 2, 3), np.array([[1, 1, 1], [1, 2, 0]], f32)],
       nograd=(1,), notes="sample 0 needs 5 steps: MXNet returns 0")

# -- contrib -------------------------------------------------------------------------------
F.case("allclose_yes", "contrib.allclose", [u("ac", 3, 4), u("ac", 3, 4) + 1e-7], grad=False)
F.case("allclose_no", "contrib.allclose", [u("ac", 3, 4), u("ac", 3, 4) + 1e-3], grad=False)
nan_a = u("acn", 2, 2)
nan_a[0, 1] = np.nan
F.case("allclose_nan", "contrib.allclose", [nan_a, nan_a.copy()], dict(equal_nan=False), grad=False)
F.case("quadratic", "contrib.quadratic", [u("q", 3, 4)], dict(a=0.5, b=-2.0, c=1.0))
F.case("gradientmultiplier", "contrib.gradientmultiplier", [u("gm", 3, 4)], dict(scalar=0.25))
F.case("round_ste", "contrib.round_ste",
       [np.array([[-2.5, -1.5, -0.5, 0.5], [1.5, 2.49, -0.2, 0.7]], f32)])
F.case("sign_ste", "contrib.sign_ste", [u("ss", 3, 4)])
F.case("index_copy", "contrib.index_copy", [u("ic", 5, 3), np.array([3, 0], f32), u("ic2", 2, 3)],
       nograd=(1,))
F.case("histogram_cnt", "_internal._histogram", [u("h", 4, 5, lo=-1.2, hi=1.2)],
       dict(bin_cnt=5, range=(-1.0, 1.0)), grad=False)
F.case("histogram_bins", "_internal._histogram",
       [u("h2", 4, 5), np.array([-1.5, -0.25, 0.5, 1.0], f32)], grad=False)
F.case("kl_sparse_reg", "IdentityAttachKLSparseReg", [u("kl", 3, 4, lo=0.1, hi=0.9)],
       dict(penalty=0.01, sparseness_target=0.2, momentum=0.5))
hr = R("hawkes")
F.case("hawkesll", "contrib.hawkesll",
       [hr.uniform(0.5, 2.0, (3, 2)).astype(f32), hr.uniform(0.1, 0.5, 2).astype(f32),
        hr.uniform(0.5, 2.0, 2).astype(f32), hr.uniform(0, 1, (3, 2)).astype(f32),
        hr.uniform(0.1, 1.0, (3, 4)).astype(f32), hr.randint(0, 2, (3, 4)).astype(np.int32),
        np.array([3, 1, 4], f32), np.full(3, 6.0, f32)], nograd=(3, 4, 6, 7))

F.error_case("sce_label_rank2", "softmax_cross_entropy",
             [(None, (4, 5), "float32"), (None, (4, 1), "float32")])
F.error_case("diag_same_axes", "diag", [(None, (3, 4), "float32")], dict(axis1=1, axis2=1))
F.error_case("khatri_rao_columns", "khatri_rao", [(None, (2, 3), "float32"), (None, (2, 4), "float32")])
F.error_case("split_v2_squeeze_long", "_internal._split_v2", [(None, (4, 2), "float32")],
             dict(indices=(0, 2), axis=0, squeeze_axis=True))
F.error_case("ravel_rows", "ravel_multi_index", [(None, (2, 3), "float32")], dict(shape=(3, 4, 5)))
F.save(mkldnn_check=False)
