# autograd_torch.py: the PyTorch side of the autograd rows of bench/run.sh (autograd_*.ad).
# Prints "NAME SECONDS" lines, the same names and medians as the addsl scripts, or "torch: not available".
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

    print("lstm_f_nograd", timeit(f_nograd))
    print("lstm_f", timeit(f))
    print("lstm_f_grad", timeit(f_grad))


def main():
    # this torch build defaults to one thread; give it every core, as the other rows do
    torch.set_num_threads(int(os.environ.get("BENCH_TORCH_THREADS", os.cpu_count() or 1)))
    torch.manual_seed(0)
    print("torch_threads", torch.get_num_threads())
    which = sys.argv[1:] or ["chain", "mlp", "lstm"]
    for name in which:
        {"chain": bench_chain, "mlp": bench_mlp, "lstm": bench_lstm}[name]()


if __name__ == "__main__":
    main()
