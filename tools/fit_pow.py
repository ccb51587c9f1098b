"""Fits the tables and polynomials of the CPU plugin's float32 pow at AVX-512 (plugins/cpu/src/pow_math.hpp).

    python3 tools/fit_pow.py        # NumPy only; prints the C++ constants and the fits' errors

pow(x, y) = 2^(y log2 x), computed in double for float32 operands, so its own errors stay below 1e-9
relative and the one rounding to float dominates. log2 x: x = m 2^e with m in [0.75, 1.5) (vgetmantpd);
m's nearest of the 16 centres c_j = 0.75 + j / 20 picks interval j (c_5 = 1, so pow(1, y) is 1); invc_j
is 1 / c_j rounded to float (a short multiplier) and logc_j = -log2(invc_j); r = m invc_j - 1 (one FMA,
|r| < 0.034) and log2 m = logc_j + r P(r). 2^z: z = n + f with |f| <= 1/2, 2^f = E(f), then scaled by
2^n (vscalefpd). P and E are least-squares fits on Chebyshev nodes, reweighted towards the minimax
relative error, against NumPy's double log1p / log(2) and exp2.
"""
import math

import numpy as np

from fit_gelu_erfc import chebyshev_nodes, reweighted_fit

INTERVALS = 16
LOG_DEGREE = 5  # of P
EXP_DEGREE = 7  # of E


def main():
    step = 0.75 / (INTERVALS - 1)
    invc, logc, r_max = [], [], 0.0
    for j in range(INTERVALS):
        c = 0.75 + j * step
        lo, hi = max(c - step / 2, 0.75), min(c + step / 2, 1.5)
        inv = float(np.float32(1 / c))  # a short invc: m invc - 1 is then nearly exact
        invc.append(inv)
        logc.append(-math.log2(inv))
        r_max = max(r_max, abs(lo * inv - 1), abs(hi * inv - 1))
    u = chebyshev_nodes(-1, 1)  # r / r_max: a well-conditioned fit
    r = u * r_max
    f = np.log1p(r) / math.log(2) / r
    p = reweighted_fit(u, f, LOG_DEGREE, lambda c: (np.polyval(c, u) - f) / f)
    p = p / r_max ** np.arange(LOG_DEGREE, -1, -1)
    check = np.linspace(-r_max, r_max, 200001)
    check = check[check != 0]
    err_log = np.abs(check * np.polyval(p, check) / (np.log1p(check) / math.log(2)) - 1).max()
    t = chebyshev_nodes(-0.5, 0.5)
    e = reweighted_fit(t, np.exp2(t), EXP_DEGREE, lambda c: np.polyval(c, t) / np.exp2(t) - 1)
    check = np.linspace(-0.5, 0.5, 200001)
    err_exp = np.abs(np.polyval(e, check) / np.exp2(check) - 1).max()
    print(f"// |r| < {r_max:.4f}; log2(1 + r) = r P(r) within {err_log:.2g} relative, 2^f = E(f) within {err_exp:.2g}")
    print("alignas(64) inline constexpr double kPowInvC[16] = {" + ", ".join(f"{v!r}" for v in invc) + "};")
    print("alignas(64) inline constexpr double kPowLogC[16] = {" + ", ".join(f"{v!r}" for v in logc) + "};")
    print("inline constexpr double kPowLog2P[] = {" + ", ".join(repr(float(v)) for v in p[::-1]) + "};  // r^0 first")
    print("inline constexpr double kPowExp2E[] = {" + ", ".join(repr(float(v)) for v in e[::-1]) + "};  // f^0 first")


if __name__ == "__main__":
    main()
