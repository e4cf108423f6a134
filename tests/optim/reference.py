#!/usr/bin/env python3
# reference.py: independent pure-Python reimplementation of torch.optim's
# update rules (SGD, Adam, AdamW, RMSprop, LBFGS with strong-Wolfe) and of the
# learning-rate schedulers, run on the tests' small problems to produce the
# expected numbers pasted into tests/optim/*.ad (torch and numpy were not
# installed where these were made). Not run by make check:
#     python3 tests/optim/reference.py
import math

# ---- the small problem: w = [w0, w1], b a scalar (0-d) ----
#   r = w0*w1 + b - 1
#   L = r^2 + 0.5 w0^2 + 0.1 (w1 - 2)^4 + 0.3 b^2
W0 = [0.5, -1.0]
B0 = 0.2


def grads(w, b):
    r = w[0] * w[1] + b - 1
    return [2 * r * w[1] + w[0], 2 * r * w[0] + 0.4 * (w[1] - 2) ** 3], 2 * r + 0.6 * b


def flat_grad(x):
    gw, gb = grads(x[0:2], x[2])
    return gw + [gb]


# Each optimiser below works on the flat list x = [w0, w1, b]; torch's rules
# are elementwise, so this equals treating w and b as two parameters.
def run(update, n, state):
    x = W0 + [B0]
    for _ in range(n):
        g = flat_grad(x)
        x = update(x, g, state)
    return x


def l2_grad(g, x, weight_decay, maximize):
    """The gradient torch's SGD and RMSprop step with: negated to maximise, then
    plus weight_decay * x (Adam differs: AdamW decays x itself)."""
    g = -g if maximize else g
    if weight_decay != 0:
        g = g + weight_decay * x
    return g


def sgd(lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    def update(x, g, st):
        out = []
        for i in range(len(x)):
            gi = l2_grad(g[i], x[i], weight_decay, maximize)
            if momentum != 0:
                if i not in st:
                    st[i] = gi
                else:
                    st[i] = momentum * st[i] + (1 - dampening) * gi
                gi = gi + momentum * st[i] if nesterov else st[i]
            out.append(x[i] - lr * gi)
        return out
    return update


def adam(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, maximize=False, decoupled=False):
    b1, b2 = betas

    def update(x, g, st):
        st.setdefault("step", 0)
        st["step"] += 1
        t = st["step"]
        out = []
        for i in range(len(x)):
            gi = -g[i] if maximize else g[i]
            xi = x[i]
            if decoupled:
                xi = xi * (1 - lr * weight_decay)
            elif weight_decay != 0:
                gi = gi + weight_decay * xi
            m = st.get(("m", i), 0.0)
            v = st.get(("v", i), 0.0)
            m = m + (gi - m) * (1 - b1)          # torch: exp_avg.lerp_(grad, 1 - beta1)
            v = v * b2 + (1 - b2) * gi * gi
            st[("m", i)] = m
            st[("v", i)] = v
            bc1 = 1 - b1 ** t
            bc2 = 1 - b2 ** t
            if amsgrad:
                vm = max(st.get(("vmax", i), 0.0), v)
                st[("vmax", i)] = vm
                denom = math.sqrt(vm) / math.sqrt(bc2) + eps
            else:
                denom = math.sqrt(v) / math.sqrt(bc2) + eps
            out.append(xi - (lr / bc1) * m / denom)
        return out
    return update


def rmsprop(lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False, maximize=False):
    def update(x, g, st):
        out = []
        for i in range(len(x)):
            gi = l2_grad(g[i], x[i], weight_decay, maximize)
            sq = st.get(("sq", i), 0.0) * alpha + (1 - alpha) * gi * gi
            st[("sq", i)] = sq
            if centered:
                ga = st.get(("ga", i), 0.0)
                ga = ga + (gi - ga) * (1 - alpha)  # torch: grad_avg.lerp_(grad, 1 - alpha)
                st[("ga", i)] = ga
                avg = math.sqrt(sq - ga * ga) + eps
            else:
                avg = math.sqrt(sq) + eps
            if momentum > 0:
                buf = st.get(("buf", i), 0.0) * momentum + gi / avg
                st[("buf", i)] = buf
                out.append(x[i] - lr * buf)
            else:
                out.append(x[i] - lr * gi / avg)
        return out
    return update


CASES = [
    ("sgd", sgd(lr=0.1)),
    ("sgd_momentum", sgd(lr=0.05, momentum=0.9)),
    ("sgd_dampening_wd", sgd(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("sgd_nesterov", sgd(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("sgd_maximize", sgd(lr=0.01, momentum=0.5, maximize=True)),
    ("adam", adam(lr=0.1)),
    ("adam_amsgrad_wd", adam(lr=0.1, betas=(0.8, 0.9), weight_decay=0.1, amsgrad=True)),
    ("adam_maximize", adam(lr=0.01, maximize=True)),
    ("adamw", adam(lr=0.1, weight_decay=1e-2, decoupled=True)),
    ("adamw_amsgrad", adam(lr=0.1, weight_decay=0.5, amsgrad=True, decoupled=True)),
    ("rmsprop", rmsprop()),
    ("rmsprop_centered_momentum", rmsprop(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    ("rmsprop_alpha_maximize", rmsprop(lr=0.003, alpha=0.9, maximize=True)),
]

# ---- LBFGS (torch.optim.LBFGS.step, _strong_wolfe, _cubic_interpolate) ----


def dot(a, b):
    return sum(p * q for p, q in zip(a, b))


def rosen(x):
    f = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
    g = [-2 * (1 - x[0]) - 400 * x[0] * (x[1] - x[0] ** 2), 200 * (x[1] - x[0] ** 2)]
    return f, g


def cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = math.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def strong_wolfe(obj, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    d_norm = max(abs(v) for v in d)
    f_new, g_new = obj(x, t, d)
    ls_func_evals = 1
    gtd_new = dot(g_new, d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f, bracket_g, bracket_gtd = [t_prev, t], [f_prev, f_new], [g_prev, g_new], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f, bracket_g, bracket_gtd = [t_prev, t], [f_prev, f_new], [g_prev, g_new], [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new, gtd_new
        f_new, g_new = obj(x, t, d)
        ls_func_evals += 1
        gtd_new = dot(g_new, d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj(x, t, d)
        ls_func_evals += 1
        gtd_new = dot(g_new, d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos], bracket_g[high_pos], bracket_gtd[high_pos] = t, f_new, g_new, gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos], bracket_f[high_pos], bracket_g[high_pos], bracket_gtd[high_pos] = \
                    bracket[low_pos], bracket_f[low_pos], bracket_g[low_pos], bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos], bracket_g[low_pos], bracket_gtd[low_pos] = t, f_new, g_new, gtd_new
    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


class LBFGS:
    def __init__(self, x, fun, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        self.x = list(x)
        self.fun = fun
        self.lr, self.max_iter = lr, max_iter
        self.max_eval = max_eval if max_eval is not None else max_iter * 5 // 4
        self.tolerance_grad, self.tolerance_change = tolerance_grad, tolerance_change
        self.history_size, self.line_search_fn = history_size, line_search_fn
        self.state = {"func_evals": 0, "n_iter": 0}

    def closure(self):
        return self.fun(self.x)

    def step(self):
        st = self.state
        orig_loss, flat_grad = self.closure()
        loss = orig_loss
        current_evals = 1
        st["func_evals"] += 1
        if max(abs(v) for v in flat_grad) <= self.tolerance_grad:
            return orig_loss
        d, t = st.get("d"), st.get("t")
        old_dirs, old_stps, ro = st.get("old_dirs"), st.get("old_stps"), st.get("ro")
        H_diag, prev_flat_grad, prev_loss = st.get("H_diag"), st.get("prev_flat_grad"), st.get("prev_loss")
        n_iter = 0
        while n_iter < self.max_iter:
            n_iter += 1
            st["n_iter"] += 1
            if st["n_iter"] == 1:
                d = [-v for v in flat_grad]
                old_dirs, old_stps, ro, H_diag = [], [], [], 1
            else:
                y = [a - b for a, b in zip(flat_grad, prev_flat_grad)]
                s = [v * t for v in d]
                ys = dot(y, s)
                if ys > 1e-10:
                    if len(old_dirs) == self.history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / dot(y, y)
                num_old = len(old_dirs)
                al = [None] * num_old
                q = [-v for v in flat_grad]
                for i in range(num_old - 1, -1, -1):
                    al[i] = dot(old_stps[i], q) * ro[i]
                    q = [a - al[i] * b for a, b in zip(q, old_dirs[i])]
                r = [v * H_diag for v in q]
                for i in range(num_old):
                    be_i = dot(old_dirs[i], r) * ro[i]
                    r = [a + (al[i] - be_i) * b for a, b in zip(r, old_stps[i])]
                d = r
            prev_flat_grad = list(flat_grad)
            prev_loss = loss
            if st["n_iter"] == 1:
                t = min(1.0, 1.0 / sum(abs(v) for v in flat_grad)) * self.lr
            else:
                t = self.lr
            gtd = dot(flat_grad, d)
            if gtd > -self.tolerance_change:
                break
            ls_func_evals = 0
            if self.line_search_fn == "strong_wolfe":
                x_init = list(self.x)

                def obj(x, tt, dd):
                    return self.fun([a + tt * b for a, b in zip(x, dd)])
                loss, flat_grad, t, ls_func_evals = strong_wolfe(obj, x_init, t, d, loss, flat_grad, gtd)
                self.x = [a + t * b for a, b in zip(self.x, d)]
                opt_cond = max(abs(v) for v in flat_grad) <= self.tolerance_grad
            else:
                self.x = [a + t * b for a, b in zip(self.x, d)]
                if n_iter != self.max_iter:
                    loss, flat_grad = self.closure()
                    opt_cond = max(abs(v) for v in flat_grad) <= self.tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            st["func_evals"] += ls_func_evals
            if n_iter == self.max_iter:
                break
            if current_evals >= self.max_eval:
                break
            if opt_cond:
                break
            if max(abs(v * t) for v in d) <= self.tolerance_change:
                break
            if abs(loss - prev_loss) < self.tolerance_change:
                break
        st.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                  prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss


# ---- schedulers (torch's chainable get_lr) ----


def step_lr(lr, step_size, gamma, n):
    out = [lr]
    for e in range(1, n):
        if e % step_size == 0:
            lr = lr * gamma
        out.append(lr)
    return out


def exponential_lr(lr, gamma, n):
    out = [lr]
    for e in range(1, n):
        lr = lr * gamma
        out.append(lr)
    return out


def cosine_lr(base, T_max, eta_min, n):
    lr = base
    out = [lr]
    for e in range(1, n):
        if (e - 1 - T_max) % (2 * T_max) == 0:
            lr = lr + (base - eta_min) * (1 - math.cos(math.pi / T_max)) / 2
        else:
            lr = (1 + math.cos(math.pi * e / T_max)) / (1 + math.cos(math.pi * (e - 1) / T_max)) * (lr - eta_min) + eta_min
        out.append(lr)
    return out


def fmt(xs):
    return "[" + ", ".join(repr(v) for v in xs) + "]"


def main():
    print("# optimisers, 5 steps from w = %s, b = %r: [w0, w1, b]" % (W0, B0))
    for name, upd in CASES:
        print(name, fmt(run(upd, 5, {})))
    print("# LBFGS on Rosenbrock from (-1.5, 2)")
    for ls in (None, "strong_wolfe"):
        o = LBFGS([-1.5, 2.0], rosen, lr=1, max_iter=1, line_search_fn=ls)
        for k in range(5):
            o.step()
            print("lbfgs max_iter=1", ls, "step", k + 1, fmt(o.x), "evals", o.state["func_evals"])
        o = LBFGS([-1.5, 2.0], rosen, lr=1, max_iter=5, line_search_fn=ls)
        o.step()
        print("lbfgs max_iter=5", ls, fmt(o.x), "evals", o.state["func_evals"], "n_iter", o.state["n_iter"])
    o = LBFGS([-1.5, 2.0], rosen, lr=1, max_iter=100, line_search_fn="strong_wolfe")
    o.step()
    print("lbfgs strong_wolfe max_iter=100", fmt(o.x), "f", rosen(o.x)[0], "evals", o.state["func_evals"], "n_iter", o.state["n_iter"])
    def small(x):
        r = x[0] * x[1] + x[2] - 1
        return r * r + 0.5 * x[0] ** 2 + 0.1 * (x[1] - 2) ** 4 + 0.3 * x[2] ** 2, flat_grad(x)
    o = LBFGS(W0 + [B0], small, lr=0.5, max_iter=4, history_size=2)
    for k in range(3):
        o.step()
    print("lbfgs small problem lr=0.5 max_iter=4 history_size=2, 3 steps", fmt(o.x), "evals", o.state["func_evals"])
    o = LBFGS(W0 + [B0], small, max_iter=3, line_search_fn="strong_wolfe")
    for k in range(2):
        o.step()
    print("lbfgs small problem strong_wolfe max_iter=3, 2 steps", fmt(o.x), "evals", o.state["func_evals"])
    print("# schedulers, lr after each sched.step() from 0.1 (first entry: at construction)")
    print("StepLR(3, 0.5)", fmt(step_lr(0.1, 3, 0.5, 10)))
    print("ExponentialLR(0.9)", fmt(exponential_lr(0.1, 0.9, 6)))
    print("CosineAnnealingLR(5, 0.01)", fmt(cosine_lr(0.1, 5, 0.01, 16)))


main()
