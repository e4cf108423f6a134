# autograd_torch.py: the PyTorch side of the autograd rows of bench/run.sh (autograd_*.ad).
# Prints "NAME SECONDS" lines, the same names and medians as the addsl scripts, or "torch: not available".
import math
import os
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except Exception:
    print("torch: not available")
    sys.exit(0)


def chain(x, n):
    # as autograd_chain.ad: record n multiplications, then backward(sum(y))
    x.grad = None
    t0 = time.perf_counter()
    y = x
    for _ in range(n):
        y = y * 1.0001
    t1 = time.perf_counter()
    y.sum().backward()
    return t1 - t0, time.perf_counter() - t1


def bench_chain(reps=3, n=100000):
    x = torch.randn(4, requires_grad=True)
    chain(x, n // 10)
    runs = [chain(x, n) for _ in range(reps)]
    print("chain_total", statistics.median(a + b for a, b in runs))
    print("chain_record", statistics.median(a for a, _ in runs))
    print("chain_backward", statistics.median(b for _, b in runs))


def bench_mlp(warm=5, steps=50, lr=0.01):
    B, D, H, C = 256, 784, 256, 10
    x = torch.randn(B, D)
    y = torch.arange(B) % C
    W1 = (torch.randn(D, H) * 0.05).requires_grad_()
    b1 = torch.zeros(H, requires_grad=True)
    W2 = (torch.randn(H, C) * 0.05).requires_grad_()
    b2 = torch.zeros(C, requires_grad=True)
    params = [W1, b1, W2, b2]

    def step():
        h = torch.relu(x @ W1 + b1)
        loss = F.cross_entropy(h @ W2 + b2, y)
        loss.backward()
        with torch.no_grad():
            for p in params:
                p.copy_(p - lr * p.grad)
                p.grad = None
        return loss

    for _ in range(warm):
        step()
    ts = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        ts.append(time.perf_counter() - t0)
    print("mlp_step", statistics.median(ts))
    print("mlp_loss", step().item())


def print_ratios(name, f, params, inner, reps):
    """Times f under no_grad, f recording, and f + backward (median of reps x inner calls)."""
    def f_grad():
        for p in params:
            p.grad = None
        f().backward()

    def f_nograd():
        with torch.no_grad():
            f()

    def timeit(g):
        for _ in range(inner):
            g()
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            for _ in range(inner):
                g()
            ts.append((time.perf_counter() - t0) / inner)
        return statistics.median(ts)

    print(name + "_f_nograd", timeit(f_nograd))
    print(name + "_f", timeit(f))
    print(name + "_f_grad", timeit(f_grad))


def bench_lstm(reps=7, inner=20):
    I, Hd, T, B = 16, 32, 20, 8
    xs = torch.randn(T, B, I)
    Wx = (torch.randn(I, 4 * Hd) * 0.1).requires_grad_()
    Wh = (torch.randn(Hd, 4 * Hd) * 0.1).requires_grad_()
    bias = torch.zeros(4 * Hd, requires_grad=True)
    Wo = (torch.randn(Hd, 1) * 0.1).requires_grad_()
    params = [Wx, Wh, bias, Wo]

    def f():
        h = torch.zeros(B, Hd)
        c = torch.zeros(B, Hd)
        for t in range(T):
            g = xs[t] @ Wx + h @ Wh + bias
            i = torch.sigmoid(g[:, 0:Hd])
            fg = torch.sigmoid(g[:, Hd:2 * Hd])
            u = torch.tanh(g[:, 2 * Hd:3 * Hd])
            o = torch.sigmoid(g[:, 3 * Hd:4 * Hd])
            c = fg * c + i * u
            h = o * torch.tanh(c)
        return ((h @ Wo) ** 2).mean()

    print_ratios("lstm", f, params, inner, reps)


def gmm_objective(alphas, means, icf, x, ltri, wishart_gamma, wishart_m):
    # the ADBench GMM objective, written as autograd_gmm.ad writes it (same ops, same order)
    n, d = x.shape
    k = alphas.shape[0]
    qs = icf[:, 0:d]
    Qdiags = torch.exp(qs)
    sum_qs = torch.sum(qs, 1)
    Ls = torch.cat([torch.zeros(k, 1, dtype=x.dtype), icf[:, d:]], 1)[:, ltri].reshape(k, d, d)
    xc = x.unsqueeze(0) - means.unsqueeze(1)
    Lx = Qdiags.unsqueeze(1) * xc + xc @ Ls.transpose(1, 2)
    inner = (alphas + sum_qs).unsqueeze(1) - 0.5 * torch.sum(Lx ** 2, 2)
    slse = torch.sum(torch.logsumexp(inner, 0))
    n_w = d + wishart_m + 1
    log_gamma = d * (d - 1) / 4 * math.log(math.pi) + sum(math.lgamma(0.5 * n_w + (1 - j) / 2) for j in range(1, d + 1))
    prior_c = k * (n_w * d * math.log(wishart_gamma / math.sqrt(2)) - log_gamma)
    prior = torch.sum(0.5 * wishart_gamma * wishart_gamma
                      * (torch.sum(Qdiags ** 2, 1) + torch.sum(icf[:, d:] ** 2, 1)) - wishart_m * sum_qs) - prior_c
    constant = -n * d * 0.5 * math.log(2 * math.pi)
    return constant + slse - n * torch.logsumexp(alphas, 0) + prior


def gmm_ltri(d):
    # ltri[i * d + j]: the column of cat([0, icf[:, d:]]) holding L[i, j] (column-major lower triangle)
    idx = torch.zeros(d * d, dtype=torch.int64)
    p = 1
    for j in range(d):
        for i in range(j + 1, d):
            idx[i * d + j] = p
            p += 1
    return idx


def bench_gmm(reps=7, inner=5):
    D, K, N = 10, 25, 1000
    WG, WM = 1.0, 0
    dt = torch.float64
    x = torch.randn(N, D, dtype=dt)
    alphas = torch.randn(K, dtype=dt).requires_grad_()
    means = torch.randn(K, D, dtype=dt).requires_grad_()
    icf = (torch.randn(K, D + D * (D - 1) // 2, dtype=dt) * 0.1).requires_grad_()
    params = [alphas, means, icf]
    ltri = gmm_ltri(D)

    def f():
        return gmm_objective(alphas, means, icf, x, ltri, WG, WM)

    print_ratios("gmm", f, params, inner, reps)


def main():
    # this torch build defaults to one thread; give it every core, as the other rows do
    # (BENCH_TORCH_THREADS=default leaves torch's own choice, for row c5d)
    threads = os.environ.get("BENCH_TORCH_THREADS", str(os.cpu_count() or 1))
    if threads != "default":
        torch.set_num_threads(int(threads))
    torch.manual_seed(0)
    print("torch_threads", torch.get_num_threads())
    which = sys.argv[1:] or ["chain", "mlp", "lstm", "gmm"]
    for name in which:
        {"chain": bench_chain, "mlp": bench_mlp, "lstm": bench_lstm, "gmm": bench_gmm}[name]()


if __name__ == "__main__":
    main()
