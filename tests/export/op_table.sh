#!/bin/sh
# op_table.sh: every op of the op table that lowers, exported by export_c with
# its VJP and JVP on its test input sets (tests/export/cases.ad), compiled
# with -std=c99 -Wall -Wextra -Werror -pedantic -O2 and run against the
# interpreter's outputs (float64 to 1e-12, float32 to 1e-5). The first of gcc
# and clang builds and runs it, the other checks that it compiles cleanly too;
# the object references no allocator and nothing of libaddsl (nm). valgrind
# runs one exported function in tests/export/sample.sh.
addsl=${1:?usage: $0 PATH-TO-ADDSL}
src=${srcdir:-.}
. "$src/tests/export/check_c.sh"
export_cases cases.ad c 0
# Each exported file compiles alone too, also when it uses only some of the
# helpers it embeds (clang warns on unused static inline functions of a .c file).
for f in $(grep -l 'XC_TRAJ_KERNELS' "$dir"/c[0-9]*.c | head -n 4); do
    for cc in gcc clang; do
        command -v $cc >/dev/null 2>&1 || continue
        $cc -std=c99 -Wall -Wextra -Werror -pedantic -fsyntax-only -I"$dir" "$f" ||
            { echo "FAIL: $cc rejects $(basename "$f") alone"; exit 1; }
    done
done
grep -E '^/\* (lowered|not lowered)' "$dir/main.c"
echo "export op_table: ok"
