"""Fits the polynomials of the CPU plugin's float32 exact gelu (plugins/cpu/src/erf_math.hpp).

    python3 tools/fit_gelu_erfc.py        # NumPy only; prints the coefficients and the fits' errors

gelu(x) = x Phi(x), and Phi(-|x|) = erfc(a) / 2 with a = |x| / sqrt 2 is computed as
t exp(-x^2 / 2 + G(t)), t = 1 / (1 + P a). G(t) = log(erfc(a) / t) + a^2 - log 2 is smooth on
(0, 1]; G's degree-6 polynomial is a least-squares fit on Chebyshev nodes of t, reweighted
towards the minimax error, against Python's math.erfc (double precision). Above |x| = 15 the
result is below float's smallest subnormal, so the kernel clamps |x| there (a <= 10.6).
e^r on |r| <= ln2 / 2 is fitted the same way as 1 + r + r^2 Q(r), Q of degree 3.
"""
import math

import numpy as np

A_MAX = 15 / math.sqrt(2)
P = 0.385  # t's scale: the best of a scan over 0.30..0.60 for degree 6
DEGREE = 6


def reweighted_fit(nodes, values, degree, residual, rounds=100):
    """Polynomial coefficients (highest first) whose largest residual is close to the smallest possible."""
    weights = np.ones(len(nodes))
    for _ in range(rounds):
        vander = np.vander(nodes, degree + 1)
        coef = np.linalg.lstsq(vander * weights[:, None], values * weights, rcond=None)[0]
        err = np.abs(residual(coef))
        weights = weights * (err / err.max() + 0.02) ** 0.5
        weights /= weights.max()
    return coef


def chebyshev_nodes(lo, hi, n=4000):
    k = np.arange(n)
    return (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / n)


def g_of_t(t):
    a = (1 / t - 1) / P
    return np.array([math.log(math.erfc(v) / w) + v * v for v, w in zip(a, t)])


def main():
    t_min = 1 / (1 + P * A_MAX)
    t = chebyshev_nodes(t_min, 1.0)
    g = g_of_t(t)
    coef = reweighted_fit(t, g, DEGREE, lambda c: np.polyval(c, t) - g)
    check = np.linspace(t_min, 1.0, 100001)
    print(f"G: degree {DEGREE}, t = 1 / (1 + {P} a): max |error| {np.abs(np.polyval(coef, check) - g_of_t(check)).max():.3g}")
    low_first = list(coef[::-1])
    low_first[0] -= math.log(2)  # Phi = erfc / 2, folded into the constant term
    print("  t scale for |x|:", f"{np.float32(P / math.sqrt(2)):.9g}")
    print("  c0..c6:", ", ".join(f"{np.float32(v):.9g}" for v in low_first))

    r = chebyshev_nodes(-math.log(2) / 2, math.log(2) / 2)
    q = (np.expm1(r) - r) / r ** 2
    approx = lambda c: (1 + r + r * r * np.polyval(c, r) - np.exp(r)) / np.exp(r)  # noqa: E731
    coef = reweighted_fit(r, q, 3, approx)
    print(f"e^r = 1 + r + r^2 Q(r): max relative error {np.abs(approx(coef)).max():.3g}")
    print("  Q c0..c3:", ", ".join(f"{np.float32(v):.9g}" for v in coef[::-1]))


if __name__ == "__main__":
    main()
