"""Fits the tables of the CPU plugin's float32 exact gelu at AVX-512 and AVX2 (plugins/cpu/src/erf_math.hpp).

    python3 tools/fit_gelu_table.py        # NumPy only; prints the C++ tables and the fits' errors

gelu(x) = x Phi(x), and for |x| < 4 the kernel takes Phi(-|x|) from a table of polynomials: [0, 4] is
cut into N equal intervals (32 at AVX-512, where one two-source lane permute, vpermt2ps, fetches a
coefficient for every lane's own interval from 32 entries; 8 at AVX2, one vpermps). With u = |x| N / 4,
interval k = floor(u) and f = u - k in [0, 1), Phi(-|x|) = P_k(f), P_k of degree D, then x Phi(-|x|) for
x < 0 and x - x Phi(-|x|) for x >= 0 (no cancellation: Phi(-|x|) <= 1/2). The fits are relative, so the
negative side keeps its relative accuracy (Phi(-4) is 3.2e-5). P_k's constant term is Phi(-k 4 / N)
rounded to float; each higher coefficient is a least-squares fit on Chebyshev nodes, reweighted towards
the minimax error, against Python's math.erfc (double precision), rounded to float before the next ones
are refitted around it. The error printed is that of the float32 Horner evaluation with FMA (each step
rounded once), against the double Phi, over 4000 points per interval. |x| >= 4 and NaN go to the kernel's
general erfc form (tools/fit_gelu_erfc.py).
"""
import math

import numpy as np

from fit_gelu_erfc import chebyshev_nodes, reweighted_fit

A_MAX = 4.0
TABLES = ((32, 4), (8, 6))  # (intervals, degree of P_k)


def phi_of_minus(a):
    return np.array([0.5 * math.erfc(v / math.sqrt(2)) for v in a])


def fit_interval(k, width, degree):
    f = chebyshev_nodes(0.0, 1.0, 600)
    want = phi_of_minus((k + f) * width)
    coefs = [float(np.float32(0.5 * math.erfc(k * width / math.sqrt(2))))]  # lowest first
    for j in range(1, degree + 1):
        known = np.polyval(coefs[::-1], f)
        rel = lambda q: (known + f ** j * np.polyval(q, f) - want) / want  # noqa: E731
        q = reweighted_fit(f, (want - known) / f ** j, degree - j, rel, rounds=40)
        coefs.append(float(np.float32(q[-1])))
    check = np.linspace(0.0, 1.0, 4000, endpoint=False).astype(np.float32)
    p = np.full(check.shape, np.float32(coefs[-1]))
    for c in coefs[-2::-1]:
        p = (p.astype(np.float64) * check + c).astype(np.float32)  # an FMA: the product is exact in double
    err = np.abs(p / phi_of_minus((k + check.astype(np.float64)) * width) - 1).max()
    return coefs, err


def main():
    for intervals, degree in TABLES:
        width = A_MAX / intervals
        fits = [fit_interval(k, width, degree) for k in range(intervals)]
        worst = max(err for _, err in fits)
        print(f"// {intervals} intervals of {width:g}, degree {degree}: Phi(-a) within {worst:.2g} relative")
        print(f"alignas(64) inline constexpr float kPhiTable{intervals}[{degree + 1}][{intervals}] = {{")
        for j in range(degree + 1):
            cells = [f"{coefs[j]:.9g}f" for coefs, _ in fits]
            lines = [", ".join(cells[i:i + 6]) for i in range(0, len(cells), 6)]
            print("    {" + ",\n     ".join(lines) + "},")
        print("};")


if __name__ == "__main__":
    main()
