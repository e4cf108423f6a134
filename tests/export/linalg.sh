#!/bin/sh
# linalg.sh: tests/export/linalg_cases.ad's exported functions (linear algebra,
# convolutions and pooling, FFTs: batched, broadcast, non-contiguous, empty,
# float64 and float32), compiled with -std=c99 -Wall -Wextra -Werror -pedantic
# by gcc and clang and run against the interpreter (under valgrind when it is
# installed).
addsl=${1:-${ADDSL_BIN:?usage: $0 PATH-TO-ADDSL}}
src=${srcdir:-.}
. "$src/tests/export/check_c.sh"
export_cases linalg_cases.ad t 1
echo "export linalg: ok"
