# ew_threads.py: the PyTorch side of bench/ew_threads.ad (same names, same method).
import statistics
import sys
import time

import torch

REPS = 9


def median_of(f, inner):
    f()
    ts = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        for _ in range(inner):
            f()
        ts.append((time.perf_counter() - t0) / inner)
    return statistics.median(ts)


def main():
    torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
    torch.manual_seed(0)
    for dt, dn in ((torch.float32, "f32"), (torch.float64, "f64")):
        for n in (10000, 30000, 100000, 300000, 1000000, 3000000, 10000000):
            inner = max(1, 1000000 // n)
            a = torch.randn(n, dtype=dt)
            b = torch.randn(n, dtype=dt) + 3.0
            ag = a.clone().requires_grad_()
            print(f"ewt_add_{n}_{dn}", median_of(lambda: a + b, inner))
            print(f"ewt_sub_{n}_{dn}", median_of(lambda: a - b, inner))
            print(f"ewt_mul_{n}_{dn}", median_of(lambda: a * b, inner))
            print(f"ewt_div_{n}_{dn}", median_of(lambda: a / b, inner))
            print(f"ewt_sumfb_{n}_{dn}", median_of(lambda: ag.sum().backward(), inner))


main()
