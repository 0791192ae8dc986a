"""The transforms of Winograd's F(2x2, 3x3) convolution as loops for numba (source only: the
compiled-loops module, :mod:`.compiled`, compiles them; as Python they are never called).

The output is cut into 2x2 tiles, tile (ty, tx) reading the 4x4 input window at rows
2ty - ph .. 2ty - ph + 3 and columns 2tx - pw .. 2tx - pw + 3 (zero outside the input).
With B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
G = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]] and A^T = [[1, 1, 1, 0],
[0, 1, -1, -1]], a tile of the convolution is A^T [(G g G^T) * (B^T d B)] A: the 16
elementwise products over channels become 16 matrix products, M[e] = U[e] @ V[e] with
U (16, K, C) the transformed filters, V (16, C, P) the transformed input windows of the P
tiles (p = (n * th + ty) * tw + tx) and M (16, K, P), element e = 4 * i + j of the 4x4 tile.
The gradients are the adjoints of the same three linear maps, so the backward takes the
same products: dV[e] = U[e]^T @ dM[e], dU[e] = dM[e] @ V[e]^T.

Every loop runs over channel planes in ``prange`` (numba's threads), each plane written by
one thread only (the input adjoint adds overlapping windows within its own plane).
"""
from __future__ import annotations

import numpy as np

#: numba gives ``prange`` its meaning in the generated module
prange = range
#: channels a loop reads from each of 16 planes before it moves on
RUN = 64


def _winograd_filters(w, U):  # pragma: no cover - numba's
    """U[4i + j, k, c] = (G w[k, c] G^T)[i, j]."""
    K, C = w.shape[0], w.shape[1]
    for k in prange(K):
        t = np.empty((4, 3), w.dtype)
        for c in range(C):
            for j in range(3):
                g0, g1, g2 = w[k, c, 0, j], w[k, c, 1, j], w[k, c, 2, j]
                t[0, j] = g0
                t[1, j] = 0.5 * (g0 + g1 + g2)
                t[2, j] = 0.5 * (g0 - g1 + g2)
                t[3, j] = g2
            for i in range(4):
                g0, g1, g2 = t[i, 0], t[i, 1], t[i, 2]
                U[4 * i, k, c] = g0
                U[4 * i + 1, k, c] = 0.5 * (g0 + g1 + g2)
                U[4 * i + 2, k, c] = 0.5 * (g0 - g1 + g2)
                U[4 * i + 3, k, c] = g2


def _winograd_filters_adjoint(dU, dw):  # pragma: no cover - numba's
    """dw[k, c] = G^T dU[:, k, c] G (the 4x4 tile of element gradients to a 3x3 filter),
    the 16 planes read in runs of RUN channels (one offset in all 16 at once shares cache
    sets when a plane is a multiple of 4 KiB)."""
    K, C = dw.shape[0], dw.shape[1]
    for k in prange(K):
        run = np.empty((16, RUN), dU.dtype)
        t = np.empty((4, 3), dU.dtype)
        for c0 in range(0, C, RUN):
            width = min(RUN, C - c0)
            for e in range(16):
                for j in range(width):
                    run[e, j] = dU[e, k, c0 + j]
            for j in range(width):
                for a in range(4):
                    u0, u1 = run[4 * a, j], run[4 * a + 1, j]
                    u2, u3 = run[4 * a + 2, j], run[4 * a + 3, j]
                    t[a, 0] = u0 + 0.5 * (u1 + u2)
                    t[a, 1] = 0.5 * (u1 - u2)
                    t[a, 2] = 0.5 * (u1 + u2) + u3
                for i in range(3):
                    u0, u1, u2, u3 = t[0, i], t[1, i], t[2, i], t[3, i]
                    dw[k, c0 + j, 0, i] = u0 + 0.5 * (u1 + u2)
                    dw[k, c0 + j, 1, i] = 0.5 * (u1 - u2)
                    dw[k, c0 + j, 2, i] = 0.5 * (u1 + u2) + u3


def _winograd_input(x, V, ph, pw, th, tw):  # pragma: no cover - numba's
    """V[4i + j, c, p] = (B^T d B)[i, j] for the input window d of tile p."""
    N, C, H, W = x.shape
    span = 2 * tw + 2
    for c in prange(C):
        rows = np.zeros((4, span), x.dtype)
        u = np.empty((4, span), x.dtype)
        for n in range(N):
            for ty in range(th):
                for i in range(4):
                    r = 2 * ty - ph + i
                    if 0 <= r < H:
                        for col in range(W):
                            rows[i, col + pw] = x[n, c, r, col]
                    else:
                        for col in range(W):
                            rows[i, col + pw] = 0
                for q in range(span):
                    u[0, q] = rows[0, q] - rows[2, q]
                    u[1, q] = rows[1, q] + rows[2, q]
                    u[2, q] = rows[2, q] - rows[1, q]
                    u[3, q] = rows[1, q] - rows[3, q]
                p0 = (n * th + ty) * tw
                for i in range(4):
                    for t in range(tw):
                        a, b = u[i, 2 * t], u[i, 2 * t + 1]
                        d, e = u[i, 2 * t + 2], u[i, 2 * t + 3]
                        V[4 * i, c, p0 + t] = a - d
                        V[4 * i + 1, c, p0 + t] = b + d
                        V[4 * i + 2, c, p0 + t] = d - b
                        V[4 * i + 3, c, p0 + t] = b - e


def _winograd_output(M, y, bias, th, tw):  # pragma: no cover - numba's
    """y's 2x2 tile p = A^T M[:, k, p] A + bias[k], cut at y's edges."""
    N, K, Ho, Wo = y.shape
    for k in prange(K):
        s = np.empty((2, 4, tw), M.dtype)
        add = bias[k]
        for n in range(N):
            for ty in range(th):
                p0 = (n * th + ty) * tw
                for j in range(4):
                    for t in range(tw):
                        m0, m1 = M[j, k, p0 + t], M[4 + j, k, p0 + t]
                        m2, m3 = M[8 + j, k, p0 + t], M[12 + j, k, p0 + t]
                        s[0, j, t] = m0 + m1 + m2
                        s[1, j, t] = m1 - m2 - m3
                for i in range(2):
                    r = 2 * ty + i
                    if r < Ho:
                        for t in range(tw):
                            y[n, k, r, 2 * t] = s[i, 0, t] + s[i, 1, t] + s[i, 2, t] + add
                            if 2 * t + 1 < Wo:
                                y[n, k, r, 2 * t + 1] = (s[i, 1, t] - s[i, 2, t] - s[i, 3, t]
                                                         + add)


def _winograd_output_adjoint(dy, dM, th, tw):  # pragma: no cover - numba's
    """dM[4a + b, k, p] = (A g A^T)[a, b] for dy's 2x2 tile g (zero past dy's edges)."""
    N, K, Ho, Wo = dy.shape
    for k in prange(K):
        g = np.zeros((2, 2 * tw), dy.dtype)
        for n in range(N):
            for ty in range(th):
                for i in range(2):
                    r = 2 * ty + i
                    if r < Ho:
                        for col in range(Wo):
                            g[i, col] = dy[n, k, r, col]
                    else:
                        for col in range(Wo):
                            g[i, col] = 0
                p0 = (n * th + ty) * tw
                for t in range(tw):
                    g00, g01 = g[0, 2 * t], g[0, 2 * t + 1]
                    g10, g11 = g[1, 2 * t], g[1, 2 * t + 1]
                    for a in range(4):
                        if a == 0:
                            left, right = g00, g01
                        elif a == 1:
                            left, right = g00 + g10, g01 + g11
                        elif a == 2:
                            left, right = g00 - g10, g01 - g11
                        else:
                            left, right = -g10, -g11
                        dM[4 * a, k, p0 + t] = left
                        dM[4 * a + 1, k, p0 + t] = left + right
                        dM[4 * a + 2, k, p0 + t] = left - right
                        dM[4 * a + 3, k, p0 + t] = -right


def _winograd_input_adjoint(dV, dx, ph, pw, th, tw):  # pragma: no cover - numba's
    """dx = the sum over tiles of B dV[:, c, p] B^T on each tile's input window (the
    windows overlap by two rows and columns; everything outside the input dropped)."""
    N, C, H, W = dx.shape
    span = 2 * tw + 2
    for c in prange(C):
        acc = np.empty((4, span), dV.dtype)
        w = np.empty((4, 4, tw), dV.dtype)
        for n in range(N):
            for r in range(H):
                for col in range(W):
                    dx[n, c, r, col] = 0
            for ty in range(th):
                p0 = (n * th + ty) * tw
                for f in range(4):
                    for t in range(tw):
                        v0, v1 = dV[f, c, p0 + t], dV[4 + f, c, p0 + t]
                        v2, v3 = dV[8 + f, c, p0 + t], dV[12 + f, c, p0 + t]
                        w[0, f, t] = v0
                        w[1, f, t] = v1 - v2 + v3
                        w[2, f, t] = v1 + v2 - v0
                        w[3, f, t] = -v3
                for a in range(4):
                    for q in range(span):
                        acc[a, q] = 0
                    for t in range(tw):
                        v0, v1, v2, v3 = w[a, 0, t], w[a, 1, t], w[a, 2, t], w[a, 3, t]
                        acc[a, 2 * t] += v0
                        acc[a, 2 * t + 1] += v1 - v2 + v3
                        acc[a, 2 * t + 2] += v1 + v2 - v0
                        acc[a, 2 * t + 3] -= v3
                for a in range(4):
                    r = 2 * ty - ph + a
                    if 0 <= r < H:
                        for col in range(W):
                            dx[n, c, r, col] += acc[a, col + pw]


#: the loops in the order the compiled module defines them
FUNCTIONS = (_winograd_filters, _winograd_filters_adjoint, _winograd_input, _winograd_output,
             _winograd_output_adjoint, _winograd_input_adjoint)
