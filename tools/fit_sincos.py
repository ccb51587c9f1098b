"""Fits the polynomials of the CPU plugin's float32 sin and cos (plugins/cpu/src/sincos_math.hpp).

    python3 tools/fit_sincos.py        # NumPy only; prints the coefficients and the fits' errors

On |r| <= pi/4 (after x - n pi/2): sin r = r + r^3 S(r^2) and cos r = 1 - r^2/2 + r^4 C(r^2), S and C
of degree 2, fitted as fit_gelu_erfc.py fits (least squares on Chebyshev nodes, reweighted towards the
minimax error) against NumPy's double sin and cos; and pi/2 split into three floats from 60 digits
of pi (math.pi / 2 is off by 6e-17: a third part taken from it put sin 22 ulp off near 1288 pi / 2).
"""
import math
from decimal import Decimal, getcontext

import numpy as np

from fit_gelu_erfc import chebyshev_nodes, reweighted_fit

DEGREE = 2


def main():
    r = chebyshev_nodes(1e-4, math.pi / 4 * 1.001)
    w = r * r
    sin_rel = lambda c: (r + r ** 3 * np.polyval(c, w) - np.sin(r)) / np.sin(r)  # noqa: E731
    s = reweighted_fit(w, (np.sin(r) - r) / r ** 3, DEGREE, sin_rel)
    print(f"sin r = r + r^3 S(r^2): max relative error {np.abs(sin_rel(s)).max():.3g}")
    print("  S c0..c2:", ", ".join(f"{np.float32(v):.9g}" for v in s[::-1]))
    cos_rel = lambda c: (1 - w / 2 + w * w * np.polyval(c, w) - np.cos(r)) / np.cos(r)  # noqa: E731
    c = reweighted_fit(w, (np.cos(r) - 1 + w / 2) / (w * w), DEGREE, cos_rel)
    print(f"cos r = 1 - r^2/2 + r^4 C(r^2): max relative error {np.abs(cos_rel(c)).max():.3g}")
    print("  C c0..c2:", ", ".join(f"{np.float32(v):.9g}" for v in c[::-1]))
    getcontext().prec = 60
    rest = Decimal("3.14159265358979323846264338327950288419716939937510582097494459") / 2
    parts = []
    for _ in range(3):
        parts.append(np.float32(float(rest)))
        rest -= Decimal(float(parts[-1]))
    hi, mid, lo = parts
    print(f"pi/2 = {hi:.9g} + {mid:.9g} + {lo:.9g} (+ {float(rest):.3g})")


if __name__ == "__main__":
    main()
