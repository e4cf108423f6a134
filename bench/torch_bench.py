# torch_bench.py: the PyTorch side of bench/run.sh, the same work as the bench/*.ad scripts.
# Prints "NAME SECONDS" lines (medians after a warm-up), or "torch: not available".
import os
import statistics
import sys
import time

REPS = 7
N = 100000

try:
    import torch
except Exception:
    print("torch: not available")
    sys.exit(0)


def median_of(f, *args):
    f(*args)
    return statistics.median(f(*args) for _ in range(REPS))


def ops_loop(x, n):
    t0 = time.perf_counter()
    for _ in range(n):
        y = x * 1.5 + x
    return time.perf_counter() - t0


def empty_loop(x, n):
    t0 = time.perf_counter()
    for _ in range(n):
        y = x
    return time.perf_counter() - t0


def timed(f, *args):
    t0 = time.perf_counter()
    f(*args)
    return time.perf_counter() - t0


def main():
    # torch here defaults to one thread; give it every core, as addsl and OpenBLAS get.
    threads = int(os.environ.get("BENCH_TORCH_THREADS", os.cpu_count() or 1))
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    print("torch_threads", torch.get_num_threads())
    if os.environ.get("BENCH_ONLY") == "sweep":  # run.sh's extra sweep processes
        sweep()
        return
    x = torch.randn(4)
    print("perop_iter", median_of(ops_loop, x, N) / N)
    print("empty_iter", median_of(empty_loop, x, N) / N)
    a = torch.randn(10_000_000)
    b = torch.randn(10_000_000)
    print("mul", median_of(timed, torch.mul, a, b))
    print("tanh", median_of(timed, torch.tanh, a))
    m1 = torch.randn(1000, 1000)
    m2 = torch.randn(1000, 1000)
    print("matmul", median_of(timed, torch.matmul, m1, m2))
    # batched small products, as bench/matmul_small.ad
    for dt, dn in ((torch.float64, "f64"), (torch.float32, "f32")):
        for n in (2, 3, 4, 8, 16, 32):
            p = torch.randn(1000, n, n, dtype=dt)
            q = torch.randn(1000, n, n, dtype=dt)
            pg = p.clone().requires_grad_()
            qg = q.clone().requires_grad_()
            print(f"bmm_{n}_{dn}", median_of(timed, torch.matmul, p, q))
            print(f"bmm_{n}_{dn}_fb", median_of(timed, lambda: (pg @ qg).sum().backward()))
    sweep()


def sweep():
    """The size sweep, as bench/sweep.ad."""
    for dt, dn in ((torch.float32, "f32"), (torch.float64, "f64")):
        for e in (3, 4, 5, 6):
            n = 10 ** e
            a = torch.randn(n, dtype=dt)
            b = torch.randn(n, dtype=dt)
            ag = a.clone().requires_grad_()
            bg = b.clone().requires_grad_()
            print(f"sweep_mul_1e{e}_{dn}", median_of(timed, torch.mul, a, b))
            print(f"sweep_mul_1e{e}_{dn}_fb", median_of(timed, lambda: (ag * bg).sum().backward()))
            print(f"sweep_exp_1e{e}_{dn}", median_of(timed, torch.exp, a))
            print(f"sweep_exp_1e{e}_{dn}_fb", median_of(timed, lambda: torch.exp(ag).sum().backward()))
            print(f"sweep_tanh_1e{e}_{dn}", median_of(timed, torch.tanh, a))
            print(f"sweep_tanh_1e{e}_{dn}_fb", median_of(timed, lambda: torch.tanh(ag).sum().backward()))
            m = a.reshape(10 ** (e - 2), 100)
            mg = m.clone().requires_grad_()
            print(f"sweep_sum_1e{e}_{dn}", median_of(timed, lambda: m.sum(dim=1)))
            print(f"sweep_sum_1e{e}_{dn}_fb", median_of(timed, lambda: mg.sum(dim=1).sum().backward()))
            print(f"sweep_mean_1e{e}_{dn}", median_of(timed, lambda: m.mean(dim=0)))
            print(f"sweep_mean_1e{e}_{dn}_fb", median_of(timed, lambda: mg.mean(dim=0).sum().backward()))
            k = round(n ** 0.5)
            p = torch.randn(k, k, dtype=dt)
            q = torch.randn(k, k, dtype=dt)
            pg = p.clone().requires_grad_()
            qg = q.clone().requires_grad_()
            print(f"sweep_matmul_1e{e}_{dn}", median_of(timed, torch.matmul, p, q))
            print(f"sweep_matmul_1e{e}_{dn}_fb", median_of(timed, lambda: (pg @ qg).sum().backward()))


main()
