#!/bin/sh
# inplace_eig.sh: tests/export/inplace_eig_cases.ad's exported functions
# (in-place updates inside f, fill/copy, as_strided(_scatter),
# split_with_sizes, eigh/eigvalsh/svd/svdvals: 0-d, 1-D, empty, broadcast,
# non-contiguous, batched, float64 and float32), compiled with -std=c99 -Wall
# -Wextra -Werror -pedantic by gcc and clang and run against the interpreter
# (under valgrind when it is installed).
addsl=${1:-${ADDSL_BIN:?usage: $0 PATH-TO-ADDSL}}
src=${srcdir:-.}
. "$src/tests/export/check_c.sh"
export_cases inplace_eig_cases.ad t 1
echo "export inplace_eig: ok"
