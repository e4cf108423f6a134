#!/usr/bin/python3
# gen_expect.py: prints real PyTorch's value of each expression as addsl `# expect:` lines.
# A maintainer's helper only (needs /usr/bin/python3 with torch); the tests never run it.
#
# Usage: /usr/bin/python3 tests/gen_expect.py 'torch.tensor([1., 2.]).exp()' ...
#        (or one expression per line on stdin). `torch`, `F` (torch.nn.functional)
#        and `np` are in scope.
#    or: /usr/bin/python3 tests/gen_expect.py --fill tests/ops/x.ad
#        rewrites the file in place: after every line with a `# torch: EXPR`
#        comment it puts the `# expect:` lines of EXPR (replacing those already
#        there, and keeping a "# expect~ TOL:" tolerance where the first of them
#        has one), so each expectation names the torch expression it came from.
#        `# torch-exec: STATEMENT` lines run Python first (shared names). Output is what addsl's print() must write:
#        torch's repr with `dtype=torch.float64` -> `dtype=float64`, `requires_grad=True`
#        -> `requires_grad=true`, Python scalars and lists in addsl's spelling.
import sys

import numpy as np
import torch
import torch.nn.functional as F

torch.set_printoptions(profile="default")


def fmt_number(x):
    if isinstance(x, bool):
        return "true" if x else "false"
    if float(x).is_integer() and abs(x) < 2**53:
        return str(int(x))
    return repr(float(x))


def fmt(v):
    if v is None:
        return "none"
    if isinstance(v, torch.Tensor):
        r = repr(v)
        r = r.replace("dtype=torch.", "dtype=")
        r = r.replace("requires_grad=True", "requires_grad=true")
        return r
    if isinstance(v, (bool, int, float)):
        return fmt_number(v)
    if isinstance(v, str):
        return v
    if isinstance(v, torch.Size):
        v = list(v)
    if isinstance(v, list):
        return "[" + ", ".join(fmt(e) for e in v) + "]"
    if isinstance(v, tuple):
        if len(v) == 1:
            return "(" + fmt(v[0]) + ",)"
        return "(" + ", ".join(fmt(e) for e in v) + ")"
    if isinstance(v, torch.dtype):
        return str(v).replace("torch.", "")
    return str(v)


def expect_lines(value, prefix="# expect: "):
    return [prefix + line for line in fmt(value).split("\n")]


def is_expect(line):
    s = line.lstrip()
    return s.startswith("# expect:") or (s.startswith("# expect~") and ":" in s)


def fill(path):
    env = {"torch": torch, "F": F, "np": np}
    lines = open(path).read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if "# torch-exec:" in line:
            exec(line.split("# torch-exec:", 1)[1].strip(), env)
        elif "# torch:" in line:
            expr = line.split("# torch:", 1)[1].strip()
            # Lines compared to a tolerance ("# expect~ last=1: ...") keep it.
            prefix = "# expect: "
            if i < len(lines) and lines[i].lstrip().startswith("# expect~"):
                prefix = lines[i].lstrip().split(":", 1)[0] + ": "
            while i < len(lines) and is_expect(lines[i]):
                i += 1
            out.extend(expect_lines(eval(expr, env), prefix))
    open(path, "w").write("\n".join(out))


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--fill":
        for path in sys.argv[2:]:
            fill(path)
        return
    exprs = sys.argv[1:] or [line.strip() for line in sys.stdin if line.strip()]
    env = {"torch": torch, "F": F, "np": np}
    for e in exprs:
        print("# " + e)
        print("\n".join(expect_lines(eval(e, env))))


if __name__ == "__main__":
    main()
