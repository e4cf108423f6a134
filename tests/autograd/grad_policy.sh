#!/bin/sh
# grad_policy.sh: no name in scope returns a float tensor cut off from an input that
# requires grad (tests/autograd/grad_policy.py says how it is checked).
addsl=${1:?usage: $0 PATH-TO-ADDSL}
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3 to drive the calls"; exit 77; }
exec python3 "${srcdir:-.}/tests/autograd/grad_policy.py" "$addsl"
