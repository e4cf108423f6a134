#!/usr/bin/python3
# make_reference.py: writes reference.ad, PyTorch's VJPs, JVPs and second derivatives
# for a sample of ops on fixed float64 inputs (run with /usr/bin/python3, which has torch).
# Usage: /usr/bin/python3 tests/autograd/make_reference.py > tests/autograd/reference.ad
import torch
import torch.nn.functional as F

torch.manual_seed(1234)
D = torch.float64


def randn(*s):
    return torch.randn(tuple(s), dtype=D)


def unif(lo, hi, *s):
    return torch.rand(tuple(s), dtype=D) * (hi - lo) + lo


def away(*s):
    return unif(0.3, 1.5, *s) * torch.sign(randn(*s))


def spd(n):
    a = randn(n, n)
    return a @ a.T + n * torch.eye(n, dtype=D)


# (name, addsl function text, torch function, inputs)
CASES = [
    ("sin", "fn(a) => sin(a)", torch.sin, [randn(2, 3)]),
    ("exp", "fn(a) => exp(a)", torch.exp, [randn(2, 3)]),
    ("log", "fn(a) => log(a)", torch.log, [unif(0.5, 2, 2, 3)]),
    ("tanh", "fn(a) => tanh(a)", torch.tanh, [randn(2, 3)]),
    ("sigmoid", "fn(a) => sigmoid(a)", torch.sigmoid, [randn(2, 3)]),
    ("sqrt", "fn(a) => sqrt(a)", torch.sqrt, [unif(0.5, 2, 2, 3)]),
    ("erf", "fn(a) => erf(a)", torch.erf, [randn(2, 3)]),
    ("pow", "fn(a, b) => pow(a, b)", torch.pow, [unif(0.5, 2, 2, 3), randn(2, 3)]),
    ("div", "fn(a, b) => a / b", torch.div, [randn(2, 3), away(3)]),
    ("atan2", "fn(a, b) => atan2(a, b)", torch.atan2, [away(2, 3), away(2, 3)]),
    ("hypot", "fn(a, b) => hypot(a, b)", torch.hypot, [away(2, 3), away(2, 3)]),
    ("abs", "fn(a) => abs(a)", torch.abs, [away(2, 3)]),
    ("clamp", "fn(a) => clamp(a, min=-0.5, max=0.5)", lambda a: torch.clamp(a, -0.5, 0.5),
     [torch.tensor([[-1.2, -0.3, 0.1], [0.7, 0.2, -0.8]], dtype=D)]),
    ("maximum", "fn(a, b) => maximum(a, b)", torch.maximum, [randn(2, 3), randn(2, 3)]),
    ("gelu", "fn(a) => gelu(a)", F.gelu, [randn(2, 3)]),
    ("gelu_tanh", "fn(a) => gelu(a, approximate=\"tanh\")", lambda a: F.gelu(a, approximate="tanh"), [randn(2, 3)]),
    ("silu", "fn(a) => silu(a)", F.silu, [randn(2, 3)]),
    ("softplus", "fn(a) => softplus(a, beta=1.5)", lambda a: F.softplus(a, beta=1.5), [randn(2, 3)]),
    ("elu", "fn(a) => elu(a, alpha=0.7)", lambda a: F.elu(a, alpha=0.7), [away(2, 3)]),
    ("log_sigmoid", "fn(a) => log_sigmoid(a)", F.logsigmoid, [randn(2, 3)]),
    ("sum_dim", "fn(a) => sum(a, dim=1, keepdim=true)", lambda a: a.sum(1, keepdim=True), [randn(2, 3)]),
    ("mean", "fn(a) => mean(a, dim=0)", lambda a: a.mean(0), [randn(2, 3)]),
    ("prod", "fn(a) => prod(a, dim=1)", lambda a: a.prod(1), [away(2, 3)]),
    ("var", "fn(a) => var(a, dim=1, correction=1)", lambda a: a.var(1, correction=1), [randn(2, 3)]),
    ("std", "fn(a) => std(a)", lambda a: a.std(), [randn(2, 3)]),
    ("norm", "fn(a) => linalg_vector_norm(a, ord=3, dim=1)", lambda a: torch.linalg.vector_norm(a, ord=3, dim=1), [away(2, 3)]),
    ("logsumexp", "fn(a) => logsumexp(a, dim=1)", lambda a: a.logsumexp(1), [randn(2, 3)]),
    ("softmax", "fn(a) => softmax(a, dim=1)", lambda a: a.softmax(1), [randn(2, 3)]),
    ("log_softmax", "fn(a) => log_softmax(a, dim=0)", lambda a: a.log_softmax(0), [randn(2, 3)]),
    ("cumsum", "fn(a) => cumsum(a, dim=1)", lambda a: a.cumsum(1), [randn(2, 3)]),
    ("cumprod", "fn(a) => cumprod(a, dim=1)", lambda a: a.cumprod(1), [away(2, 3)]),
    ("amax", "fn(a) => amax(a, dim=1)", lambda a: a.amax(1), [randn(2, 3)]),
    ("matmul", "fn(a, b) => matmul(a, b)", torch.matmul, [randn(2, 3), randn(3, 2)]),
    ("solve", "fn(a, b) => linalg_solve(a, b)", torch.linalg.solve, [spd(3), randn(3, 2)]),
    ("inverse", "fn(a) => inverse(a)", torch.inverse, [spd(3)]),
    ("det", "fn(a) => det(a)", torch.det, [spd(3)]),
    ("transpose", "fn(a) => transpose(a, 0, 1)", lambda a: a.transpose(0, 1), [randn(2, 3)]),
    ("cat", "fn(a, b) => cat([a, b], dim=1)", lambda a, b: torch.cat([a, b], 1), [randn(2, 3), randn(2, 2)]),
    ("stack", "fn(a, b) => stack([a, b])", lambda a, b: torch.stack([a, b]), [randn(2, 3), randn(2, 3)]),
    ("expand", "fn(a) => expand(a, [2, 3])", lambda a: a.expand(2, 3), [randn(1, 3)]),
    ("index", "fn(a) => a[1, 0:2]", lambda a: a[1, 0:2], [randn(2, 3)]),
    ("where", "fn(a, b) => where(a > b, a, b * 2)", lambda a, b: torch.where(a > b, a, b * 2), [randn(2, 3), randn(2, 3)]),
    ("mse_loss", "fn(a, b) => mse_loss(a, b)", F.mse_loss, [randn(2, 3), randn(2, 3)]),
    ("l1_loss", "fn(a, b) => l1_loss(a, b, reduction=\"sum\")", lambda a, b: F.l1_loss(a, b, reduction="sum"),
     [torch.tensor([[0.5, -1.0, 2.0], [0.1, 0.3, -0.2]], dtype=D), torch.tensor([[0.2, 0.4, 1.0], [-0.3, 0.9, 0.6]], dtype=D)]),
    ("smooth_l1", "fn(a, b) => smooth_l1_loss(a, b, beta=0.5)", lambda a, b: F.smooth_l1_loss(a, b, beta=0.5),
     [torch.tensor([[0.5, -1.0, 2.0], [0.1, 0.3, -0.2]], dtype=D), torch.tensor([[0.2, 0.4, 1.0], [-0.3, 0.9, 0.6]], dtype=D)]),
    ("bce", "fn(a, b) => binary_cross_entropy(a, b)", F.binary_cross_entropy, [unif(0.1, 0.9, 2, 3), unif(0, 1, 2, 3)]),
    ("bce_logits", "fn(a, b) => binary_cross_entropy_with_logits(a, b)", F.binary_cross_entropy_with_logits, [randn(2, 3), unif(0, 1, 2, 3)]),
    ("cross_entropy", "fn(a) => cross_entropy(a, tensor([2, 0]))", lambda a: F.cross_entropy(a, torch.tensor([2, 0])), [randn(2, 3)]),
    ("nll_loss", "fn(a) => nll_loss(a, tensor([1, 2]))", lambda a: F.nll_loss(a, torch.tensor([1, 2])), [randn(2, 3)]),
]


def lit(t):
    """An addsl float64 tensor literal, exact (17 significant digits)."""
    def rec(x):
        if x.dim() == 0:
            return repr(float(x))
        return "[" + ", ".join(rec(e) for e in x) + "]"
    return "tensor(" + rec(t) + ", dtype=float64)"


def lits(ts):
    return "[" + ", ".join(lit(t) for t in ts) + "]"


def main():
    print("# reference.ad: PyTorch's derivatives of a sample of ops on fixed float64 inputs:")
    print("# a VJP, a JVP and a second derivative (grad of <grad, w>) per op. Generated by")
    print("# make_reference.py (PyTorch " + torch.__version__.split("+")[0] + "); do not edit by hand.")
    print("let nfail = 0")
    print("fn close(a, b) { return a.shape == b.shape and allclose(a.detach(), b, rtol=1e-7, atol=1e-9) }")
    print("fn check(name, f, xs, v, vjps, ts, jvpt, w, hs) {")
    print("    let ins = []")
    print("    for x in xs { append(ins, x.requires_grad_()) }")
    print("    let (out, g) = vjp(f, ins, v)")
    print("    let ok = true")
    print("    for i in range(len(ins)) { if not close(g[i], vjps[i]) { print(\"FAIL \" + name + \": VJP of input \" + str(i)); ok = false } }")
    print("    let (o2, t) = jvp(f, ins, ts)")
    print("    if not close(t, jvpt) { print(\"FAIL \" + name + \": JVP\"); ok = false }")
    print("    let g1 = grad(fx_apply(f, ins), ins, grad_outputs=v, create_graph=true, allow_unused=true, materialize_grads=true)")
    print("    let g2 = fx_grad([sum(g1[0] * w)], ins, [tensor(1.0, dtype=float64)], false)   # zeros when g1 is constant")
    print("    for i in range(len(ins)) { if not close(g2[i], hs[i]) { print(\"FAIL \" + name + \": second derivative wrt input \" + str(i)); ok = false } }")
    print("    if not ok { nfail += 1 }")
    print("}")
    print()
    for name, src, tf, xs in CASES:
        ins = [x.clone().requires_grad_() for x in xs]
        out = tf(*ins)
        v = randn(*out.shape)
        g = torch.autograd.grad(out, ins, v, create_graph=True, allow_unused=True)
        g = [gi if gi is not None else torch.zeros_like(x) for gi, x in zip(g, ins)]
        w = randn(*ins[0].shape)
        h = torch.autograd.grad((g[0] * w).sum(), ins, allow_unused=True) if g[0].requires_grad else [None] * len(ins)
        h = [hi if hi is not None else torch.zeros_like(x) for hi, x in zip(h, ins)]
        ts = [randn(*x.shape) for x in xs]
        _, jt = torch.autograd.functional.jvp(tf, tuple(x.detach() for x in xs), tuple(ts))
        print("# " + name)
        print("check(\"%s\", %s," % (name, src))
        print("    %s," % lits(xs))
        print("    %s," % lit(v))
        print("    %s," % lits([gi.detach() for gi in g]))
        print("    %s," % lits(ts))
        print("    %s," % lit(jt))
        print("    %s," % lit(w))
        print("    %s)" % lits(h))
    print()
    print("print(\"reference: %d ops, \" + str(nfail) + \" failed\")" % len(CASES))
    print("# expect: reference: %d ops, 0 failed" % len(CASES))
    print("assert(nfail == 0, \"reference: some derivatives differ from PyTorch's\")")


main()
