"""Fits the tables of the CPU plugin's float32 erf at AVX-512 and AVX2 (plugins/cpu/src/erf_math.hpp).

    python3 tools/fit_erf.py        # NumPy only; prints the C++ tables and the fits' errors

[0, 4] is cut into N equal intervals, one per vector lane (N = 16 at AVX-512, 8 at AVX2), so one
lane-permute instruction fetches a coefficient for every lane's own interval. On interval k,
erf(a) = a Q_k(s), s = a - c_k, Q_k a polynomial of degree D (erf(a) / a is smooth, and the product
keeps erf's relative accuracy down to a = 0). The kernel evaluates a Q = a c0 + a (s P(s)) with one
FMA last, so Q's constant term c0 enters the result exactly: c_k is the float near the interval's
middle whose erf(c_k) / c_k lies closest to a float, and c0 is that float. The other coefficients
are least-squares fits on Chebyshev nodes, reweighted towards the minimax error, against Python's
math.erf (double precision), each rounded to float before the next higher ones are refitted around it.
"""
import math

import numpy as np

from fit_gelu_erfc import chebyshev_nodes, reweighted_fit

A_MAX = 4.0  # erf(a) rounds to 1 from a = 3.92 on; the kernel clamps a here
TABLES = ((16, 5), (8, 7))  # (intervals = lanes, degree of Q)


def erf_over_a(a):
    return np.array([math.erf(v) / v for v in a])


def rounding_gap(c):
    """How far erf(c) / c lies from the nearest float, in that float's ulps."""
    q = math.erf(c) / c
    q32 = float(np.float32(q))
    return abs(q - q32) / float(np.spacing(np.float32(q32)))


def fit_interval(lo, hi, degree):
    mid = np.float32((lo + hi) / 2)
    step = np.float32(2 ** -16)
    center = min((float(mid + np.float32(j) * step) for j in range(-400, 401)), key=rounding_gap)
    c0 = float(np.float32(math.erf(center) / center))
    a = chebyshev_nodes(max(lo, 1e-6), hi, 2000)
    s = a - center
    f = erf_over_a(a)
    coefs = [c0]  # lowest first
    for j in range(1, degree + 1):
        known = np.polyval(coefs[::-1], s)
        rel = lambda q: (known + s ** j * np.polyval(q, s) - f) / f  # noqa: E731
        q = reweighted_fit(s, (f - known) / s ** j, degree - j, rel, rounds=40)
        coefs.append(float(np.float32(q[-1])))
    check = np.linspace(max(lo, 1e-6), hi, 20001)
    err = np.abs(np.polyval(coefs[::-1], check - center) / erf_over_a(check) - 1).max()
    return center, coefs, err


def main():
    for lanes, degree in TABLES:
        width = A_MAX / lanes
        fits = [fit_interval(k * width, (k + 1) * width, degree) for k in range(lanes)]
        worst = max(err for _, _, err in fits)
        print(f"// {lanes} intervals, degree {degree}: Q within {worst:.2g} relative ({worst / 2 ** -24:.3f} ulp)")
        print(f"alignas(64) inline constexpr float kErfTable{lanes}[{degree + 2}][{lanes}] = {{")
        rows = [[c for c, _, _ in fits]] + [[coefs[j] for _, coefs, _ in fits] for j in range(degree + 1)]
        for row in rows:
            cells = [f"{v:.9g}f" for v in row]
            lines = [", ".join(cells[i:i + 6]) for i in range(0, len(cells), 6)]
            print("    {" + ",\n     ".join(lines) + "},")
        print("};")


if __name__ == "__main__":
    main()
