#!/bin/sh
# shapes.sh: tests/export/shape_cases.ad's exported functions (row ops, index ops,
# trajectory steps on 0-d, 1-D, empty, broadcast and non-contiguous operands,
# float64 and float32), compiled with -std=c99 -Wall -Wextra -Werror -pedantic
# by gcc and clang and run against the interpreter (under valgrind when it is
# installed); the exported trajectory kernels are include/addsl/traj_kernels.h
# verbatim.
addsl=${1:-${ADDSL_BIN:?usage: $0 PATH-TO-ADDSL}}
src=${srcdir:-.}
. "$src/tests/export/check_c.sh"
export_cases shape_cases.ad t 1
# the trajectory kernels in an exported file are the library's header, verbatim
f=$(grep -l 'XC_TRAJ_KERNELS_f64' "$dir"/t[0-9]*.c | head -1)
[ -n "$f" ] || { echo "FAIL: no exported file holds the trajectory kernels"; exit 1; }
# between the pragmas that silence unused-function warnings around the text
sed -n '/^#define TRAJ_FN/,/^#undef TRAJ_T/p' "$f" | sed '1,5d' | head -n -4 > "$dir/embedded.h"
cmp -s "$dir/embedded.h" "$src/include/addsl/traj_kernels.h" || { echo "FAIL: the embedded kernels differ from include/addsl/traj_kernels.h"; exit 1; }
echo "export shapes: ok"
