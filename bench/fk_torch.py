# fk_torch.py: the PyTorch side of bench/fk_chain.ad (the 7-joint transform chain cost and its
# gradient, float64, batch 1 and 1000): the same q, goal, offsets and formula (eager PyTorch,
# torch.autograd.grad). Prints the cost and gradient, then "NAME SECONDS" lines (median per
# call over 7 batches), or "torch: not available".
import math
import statistics
import sys
import time

try:
    import torch
except Exception:
    print("torch: not available")
    sys.exit(0)

J = 7
A = [0.0, 0.0, 0.0825, -0.0825, 0.0, 0.088, 0.05]
D = [0.333, 0.0, 0.316, 0.0, 0.384, 0.0, 0.107]
ALPHA = [-math.pi / 2, math.pi / 2, math.pi / 2, -math.pi / 2, math.pi / 2, math.pi / 2, 0.0]
F64 = torch.float64
GOAL = torch.tensor([0.3, 0.2, 0.5], dtype=F64)


def offset(i):
    ca, sa = math.cos(ALPHA[i]), math.sin(ALPHA[i])
    return torch.tensor([[1.0, 0.0, 0.0, A[i]], [0.0, ca, -sa, 0.0], [0.0, sa, ca, D[i]],
                         [0.0, 0.0, 0.0, 1.0]], dtype=F64)


OFF = [offset(i) for i in range(J)]
RC = torch.tensor([[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]], dtype=F64)
RS = torch.tensor([[0, -1.0, 0, 0], [1.0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]], dtype=F64)
R1 = torch.tensor([[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0]], dtype=F64)


def q_of(n):
    return torch.sin(1.0 + torch.arange(n * J, dtype=F64)).reshape(n, J)


def fk_cost(q):
    n = q.shape[0]
    c = torch.cos(q).reshape(n, J, 1, 1)
    s = torch.sin(q).reshape(n, J, 1, 1)
    R = c * RC + s * RS + R1
    T = R[:, 0] @ OFF[0]
    for i in range(1, J):
        T = T @ R[:, i] @ OFF[i]
    ee = T[:, 0:3, 3]
    return ((ee - GOAL) ** 2).sum()


def cost_grad(q):
    cost = fk_cost(q)
    return cost, torch.autograd.grad(cost, [q])[0]


def timed(f, n):
    f()
    ts = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        ts.append((time.perf_counter() - t0) / n)
    return statistics.median(ts)


def main():
    print("fk_torch_threads", torch.get_num_threads())
    for name, n, reps in (("fk_b1", 1, 200), ("fk_b1000", 1000, 10)):
        q = q_of(n).requires_grad_()
        cost, g = cost_grad(q)
        print(f"{name}_cost_torch {cost.item():.17g}")
        print(f"{name}_grad_torch", [f"{v:.17g}" for v in g.reshape(-1)[0:J].tolist()])
        print(f"{name}_torch", timed(lambda: cost_grad(q), reps))


main()
