#!/usr/bin/env python3
"""grad_policy.py ADDSL: every name in scope that returns a float tensor from an input
requiring grad either carries the graph (requires_grad) or refuses; none hands back a
float result silently cut off from its inputs (a gradient of zero no one asked for).

Each public name is called with a few argument patterns (a float64 vector or matrix that
requires grad, alone or with a number or a second tensor); the first pattern the name
accepts decides. The names whose result is detached by definition, as in torch, are listed
with the reason."""
import subprocess
import sys

addsl = sys.argv[1]
# Results that are not functions of the input's values, or are detached on purpose (torch agrees).
DETACHED = {
    'detach': 'detaches by definition',
    'tensor': "copies data without history (torch.tensor(t) warns likewise)",
    'empty_like': 'a new tensor of the shape only', 'zeros_like': 'a new tensor of the shape only',
    'ones_like': 'a new tensor of the shape only', 'full_like': 'a new tensor of the shape only',
    'rand_like': 'random, of the shape only', 'randn_like': 'random, of the shape only',
    'randint_like': 'random, of the shape only', 'bernoulli': 'a sample (torch gives no gradient)',
    'poisson': 'a sample (torch gives no gradient)', 'multinomial': 'integer samples',
    'normal': 'a sample; torch treats it as non-differentiable in mean/std', 'histc': 'counts',
}
# Names that do not compute from a tensor (I/O, the REPL, process control).
SKIP = {'exit', 'quit', 'help', 'input', 'progress', 'plot', 'save', 'load', 'print', 'kernel',
        'call_kernel', 'extern_fn', 'makedirs', 'dir', 'manual_seed', 'clock', 'error', 'assert',
        'load_state_dict', 'register_kernel'}
PATTERNS = ['x', 'm', 'x, 0', 'm, 0', 'm, m', 'x, x', 'm, 1, 0', 'x, 2.0']
PRELUDE = '''let x = tensor([0.3, 0.5, 0.7], dtype=float64, requires_grad=true)
let m = tensor([[0.9, 0.5], [0.1, 0.8]], dtype=float64, requires_grad=true)
fn cut(v) { return type(v) == "tensor" and is_floating_point(v) and not v.requires_grad }
# Several outputs: some may carry no gradient by definition (slogdet's sign, lu's
# permutation, lstsq's residuals), as torch's output_differentiability says; one float
# output at least must carry the graph.
fn any_cut(y) {
    if type(y) == "tuple" or type(y) == "list" {
        let nfloat = 0
        let ncut = 0
        for e in y {
            if type(e) == "tensor" and is_floating_point(e) { nfloat += 1 }
            if cut(e) { ncut += 1 }
        }
        return nfloat > 0 and ncut == nfloat
    }
    return cut(y)
}
'''

names = subprocess.run([addsl, '-e', 'for n in dir() { print(n) }'], capture_output=True, text=True, check=True).stdout.split()
bad, checked = [], 0
for n in names:
    if n in SKIP or n in DETACHED or n.endswith('_') or n[0].isupper():
        continue
    for pat in PATTERNS:
        src = PRELUDE + 'print("CUT", any_cut(%s(%s)))' % (n, pat)
        try:
            p = subprocess.run([addsl, '-e', src], capture_output=True, text=True, timeout=20)
        except subprocess.TimeoutExpired:
            continue
        if p.returncode == 0:
            checked += 1
            if 'CUT true' in p.stdout:
                bad.append('%s(%s)' % (n, pat))
            break
for b in bad:
    print('FAIL: %s returns a float tensor with no graph from an input that requires grad' % b)
print('grad_policy: %d names called, %d detach silently' % (checked, len(bad)))
sys.exit(1 if bad else 0)
