# traj_torch.py: PyTorch's matrix formulation of the trajectory steps (forward + backward
# through autograd) at b=1000, H=32, d=7; the baseline of bench/traj_bench.ad.
# Prints "NAME SECONDS" lines (median of 7 timed runs after one warm-up).
import os
import statistics
import time

import torch

if os.environ.get("BENCH_TORCH_THREADS"):
    torch.set_num_threads(int(os.environ["BENCH_TORCH_THREADS"]))
torch.manual_seed(0)
b, H, d, dt, reps = 1000, 32, 7, 0.02, 20


def int_matrix(steps):
    return torch.tril(torch.ones(H, H)) * steps.reshape(1, H)


steps = torch.full((H,), dt)
steps[0] = 0
LD = int_matrix(steps)
shift = torch.diag(torch.ones(H - 1), -1)
mask = torch.zeros(H, 1)
mask[0, 0] = 1
back = torch.diag(torch.cat([torch.zeros(1), torch.ones(H - 1)])) - torch.diag(torch.ones(H - 1), -1)
inv = torch.where(steps != 0, 1 / torch.where(steps != 0, steps, torch.ones(H)), torch.zeros(H)).reshape(H, 1)


def acc_matrix(u, p0, v0, a0):
    a = shift @ u
    acc = a + mask @ a0.unsqueeze(1)
    vel = v0.unsqueeze(1) + LD @ a
    pos = p0.unsqueeze(1) + LD @ vel
    return pos, vel, acc, (back @ acc) * inv


def jerk_matrix(u, p0, v0, a0):
    j = shift @ u
    acc = a0.unsqueeze(1) + LD @ j
    vel = v0.unsqueeze(1) + LD @ acc
    return p0.unsqueeze(1) + LD @ vel, vel, acc, j


def clique_matrix():
    w = torch.tensor([[0, 0, 1, 0, 0], [1 / 12, -2 / 3, 0, 2 / 3, -1 / 12],
                      [-1 / 12, 4 / 3, -2.5, 4 / 3, -1 / 12], [-0.5, 1, 0, -1, 0.5]])
    w = w * torch.tensor([1, 1 / dt, 1 / dt ** 2, 1 / dt ** 3]).reshape(4, 1)
    c = torch.zeros(4 * H, H + 4)
    for q in range(4):
        for h in range(H):
            c[q * H + h, h:h + 5] = w[q]
    return c


C = clique_matrix()


def pos_central_matrix(u, p0, v0, a0):
    p0, v0, a0 = p0.unsqueeze(1), v0.unsqueeze(1), a0.unsqueeze(1)
    dd = dt * dt
    last = u[:, -1:]
    P = torch.cat([p0 - 3 * dt * v0 - 1.5 * dd * a0, p0 - 2 * dt * v0 - 2 * dd * a0,
                   p0 - dt * v0 - 1.5 * dd * a0, p0, u, last, last, last, last], dim=1)
    out = C @ P
    return out[:, :H], out[:, H:2 * H], out[:, 2 * H:3 * H], out[:, 3 * H:]


def bench(name, f):
    f()
    ts = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(reps):
            f()
        ts.append((time.perf_counter() - t0) / reps)
    print(name, statistics.median(ts), flush=True)


def main():
    u = torch.randn(b, H, d, requires_grad=True)
    uc = torch.randn(b, H - 4, d, requires_grad=True)
    s = [torch.randn(b, d, requires_grad=True) for _ in range(3)]
    gs = [torch.randn(b, H, d) for _ in range(4)]

    def fwd_bwd(step, x):
        return lambda: torch.autograd.grad(step(x, *s), [x] + s, gs)

    bench("traj_acc_fwd_bwd", fwd_bwd(acc_matrix, u))
    bench("traj_jerk_fwd_bwd", fwd_bwd(jerk_matrix, u))
    bench("traj_pos_central_fwd_bwd", fwd_bwd(pos_central_matrix, uc))


if __name__ == "__main__":
    main()
