# traj_torch_gpu.py: PyTorch's matrix formulation of the trajectory steps on the GPU (forward +
# backward through autograd), the baseline of cuda/bench_traj_cuda; optionally checks the kernels.
#
# Prints one line per (step, b): microseconds per fused forward+backward, median of 15 rounds of
# 50 steps timed with CUDA events, float32, H=32, d=7 (TF32 off, PyTorch's default).
# With ADDSL_CUDA_SO=path/to/addsl_cuda.so it first compares the CUDA kernels (through ctypes,
# on torch's device pointers) with this matrix formulation in float64: outputs and the gradients
# to the actions and to the start state, with a start_idx of repeated rows.
import ctypes
import os
import statistics
import sys

import torch

H, d = 32, 7
dev = "cuda"


def int_matrix(steps):
    """Lower-triangular integration: row h sums steps[1..h] * x_k (steps[0] = 0)."""
    n = steps.numel()
    return torch.tril(torch.ones(n, n, dtype=steps.dtype, device=steps.device)) * steps.reshape(1, n)


class Mats:
    def __init__(self, H, dt, dtype):
        self.H = H
        kw = dict(dtype=dtype, device=dev)
        steps = dt.clone().to(**kw)
        steps[0] = 0
        self.dt = dt.to(**kw)
        self.LD = int_matrix(steps)
        self.shift = torch.diag(torch.ones(H - 1, **kw), -1)
        self.back = torch.eye(H, **kw) - torch.diag(torch.ones(H - 1, **kw), -1)
        self.back[0, 0] = 0
        inv = 1 / self.dt
        inv[0] = 0
        self.inv = inv.reshape(H, 1)
        s = float(dt[1])
        self.s = s
        w = torch.tensor([[0, 0, 1, 0, 0], [1 / 12, -2 / 3, 0, 2 / 3, -1 / 12],
                          [-1 / 12, 4 / 3, -2.5, 4 / 3, -1 / 12], [-0.5, 1, 0, -1, 0.5]], dtype=torch.float64)
        w = w * torch.tensor([1, 1 / s, 1 / s ** 2, 1 / s ** 3], dtype=torch.float64).reshape(4, 1)
        c = torch.zeros(4 * H, H + 4, dtype=torch.float64)
        for q in range(4):
            for h in range(H):
                c[q * H + h, h:h + 5] = w[q]
        self.C = c.to(**kw)
        wb = torch.tensor([[1, 0, 0, 0], [1, -1, 0, 0], [1, -2, 1, 0], [1, -3, 3, -1]], dtype=torch.float64)
        wb = wb * torch.tensor([1, 1 / s, 1 / s ** 2, 1 / s ** 3], dtype=torch.float64).reshape(4, 1)
        cb = torch.zeros(4 * H, H + 2, dtype=torch.float64)  # columns: Q_{-2} .. Q_{H-1}
        for q in range(4):
            for h in range(1, H):
                for o in range(4):
                    cb[q * H + h, h - o + 2] = wb[q, o]
        self.Cb = cb.to(**kw)


def acc_matrix(M, u, p0, v0, a0):
    a = M.shift @ u
    acc = torch.cat([a0.unsqueeze(1), a[:, 1:]], dim=1)
    vel = v0.unsqueeze(1) + M.LD @ a
    pos = p0.unsqueeze(1) + M.LD @ vel
    return pos, vel, acc, (M.back @ acc) * M.inv


def jerk_matrix(M, u, p0, v0, a0):
    j = M.shift @ u
    acc = a0.unsqueeze(1) + M.LD @ j
    vel = v0.unsqueeze(1) + M.LD @ acc
    return p0.unsqueeze(1) + M.LD @ vel, vel, acc, j


def central_matrix(M, u, p0, v0, a0):
    p0, v0, a0 = p0.unsqueeze(1), v0.unsqueeze(1), a0.unsqueeze(1)
    s = M.s
    dd = s * s
    last = u[:, -1:]
    P = torch.cat([p0 - 3 * s * v0 - 1.5 * dd * a0, p0 - 2 * s * v0 - 2 * dd * a0,
                   p0 - s * v0 - 1.5 * dd * a0, p0, u, last, last, last, last], dim=1)
    out = M.C @ P
    return out[:, :M.H], out[:, M.H:2 * M.H], out[:, 2 * M.H:3 * M.H], out[:, 3 * M.H:]


def backward_matrix(M, u, p0, v0, a0):
    s, H = M.s, M.H
    vb = (v0 - a0 * s / 2).unsqueeze(1)
    p = p0.unsqueeze(1)
    Q = torch.cat([p - 2 * s * vb, p - s * vb, p, u[:, :H - 1]], dim=1)
    out = M.Cb @ Q
    z = torch.zeros_like(p)
    return (torch.cat([p, out[:, 1:H]], 1), torch.cat([v0.unsqueeze(1), out[:, H + 1:2 * H]], 1),
            torch.cat([a0.unsqueeze(1), out[:, 2 * H + 1:3 * H]], 1), torch.cat([z, out[:, 3 * H + 1:]], 1))


STEPS = {"acc": acc_matrix, "jerk": jerk_matrix, "pos_central": central_matrix, "pos_backward": backward_matrix}


def actions(name, b, H, dtype):
    rows = H - 4 if name == "pos_central" else H
    return torch.rand(b, rows, d, dtype=dtype, device=dev) * 2 - 1


def check_kernels(path):
    lib = ctypes.CDLL(path)
    P = ctypes.c_void_p
    i64, i32, f64 = ctypes.c_int64, ctypes.c_int, ctypes.c_double
    worst = 0.0
    for Hc in (8, 32, 99):
        dt = 0.01 + 0.04 * torch.rand(Hc, dtype=torch.float64)
        for name, fn in STEPS.items():
            pos_step = name.startswith("pos")
            dtc = torch.full((Hc,), float(dt[1]), dtype=torch.float64) if pos_step else dt
            M = Mats(Hc, dtc, torch.float64)
            b, B0 = 37, 11
            sidx = torch.randint(0, B0, (b,), device=dev)
            u = actions(name, b, Hc, torch.float64).requires_grad_()
            st = [(torch.rand(B0, d, dtype=torch.float64, device=dev) * 2 - 1).requires_grad_() for _ in range(3)]
            g = [torch.rand(b, Hc, d, dtype=torch.float64, device=dev) * 2 - 1 for _ in range(4)]
            ref = fn(M, u, *[x[sidx] for x in st])
            rgrad = torch.autograd.grad(ref, [u] + st, g)
            out = [torch.full((b, Hc, d), float("nan"), dtype=torch.float64, device=dev) for _ in range(4)]
            gu = torch.full_like(u, float("nan"))
            gs = [torch.full((B0, d), float("nan"), dtype=torch.float64, device=dev) for _ in range(3)]
            ptr = lambda t: P(t.data_ptr())
            torch.cuda.synchronize()
            if pos_step:
                cen = int(name == "pos_central")
                rc = lib.addsl_cuda_traj_pos_fwd_f64(*map(ptr, [u] + st + [sidx]), f64(M.s), i32(cen), i64(b), i64(Hc), i64(d), *map(ptr, out), None)
                rc = rc or lib.addsl_cuda_traj_pos_bwd_f64(*map(ptr, g + [sidx]), f64(M.s), i32(cen), i64(b), i64(B0), i64(Hc), i64(d), *map(ptr, [gu] + gs), None)
            else:
                ddt = M.dt.contiguous()
                fw = getattr(lib, "addsl_cuda_traj_%s_fwd_f64" % name)
                bw = getattr(lib, "addsl_cuda_traj_%s_bwd_f64" % name)
                rc = fw(*map(ptr, [u] + st + [sidx, ddt]), f64(0), i64(b), i64(Hc), i64(d), *map(ptr, out), None)
                rc = rc or bw(*map(ptr, g + [sidx, ddt]), f64(0), i64(b), i64(B0), i64(Hc), i64(d), *map(ptr, [gu] + gs), None)
            torch.cuda.synchronize()
            if rc:
                print("kernel-check %s H=%d: launch error %d" % (name, Hc, rc))
                return 1
            got = out + [gu] + gs
            want = list(ref) + list(rgrad)
            err = max(float((x - y).abs().max() / y.abs().max().clamp_min(1e-300)) for x, y in zip(got, want))
            if err != err:
                err = float("inf")
            worst = max(worst, err)
            print("kernel-check float64 %-12s H=%-3d start_idx repeated: max rel err %.2e" % (name, Hc, err))
    print("kernel-check worst %.2e: %s" % (worst, "PASS" if worst < 1e-10 else "FAIL"))
    return 0 if worst < 1e-10 else 1


def time_step(name, M, b, reps=50, rounds=15):
    fn = STEPS[name]
    u = actions(name, b, M.H, torch.float32).requires_grad_()
    st = [(torch.rand(b, d, device=dev) * 2 - 1).requires_grad_() for _ in range(3)]
    g = [torch.rand(b, M.H, d, device=dev) * 2 - 1 for _ in range(4)]

    def one():
        torch.autograd.grad(fn(M, u, *st), [u] + st, g)

    for _ in range(5):
        one()
    ts = []
    for _ in range(rounds):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(reps):
            one()
        e1.record()
        e1.synchronize()
        ts.append(e0.elapsed_time(e1) * 1000 / reps)
    return statistics.median(ts)


def main():
    torch.manual_seed(0)
    rc = 0
    if os.environ.get("ADDSL_CUDA_SO"):
        rc = check_kernels(os.environ["ADDSL_CUDA_SO"])
    print("torch %s on %s; matrix formulation, float32, H=%d, d=%d, TF32 %s; us per fwd+bwd "
          "(autograd.grad), median of 15 rounds" % (torch.__version__, torch.cuda.get_device_name(), H, d,
                                                    torch.backends.cuda.matmul.allow_tf32))
    dt = torch.tensor([0.02 + 0.001 * h for h in range(H)], dtype=torch.float64)
    dts = torch.full((H,), 0.02, dtype=torch.float64)
    for name in STEPS:
        M = Mats(H, dts if name.startswith("pos") else dt, torch.float32)
        for b in (16, 1000, 10000):
            print("torch %-13s b=%-6d %9.2f us" % (name, b, time_step(name, M, b)), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
