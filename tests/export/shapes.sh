#!/bin/sh
# shapes.sh: tests/export/shape_cases.ad's exported functions (row ops, index ops,
# trajectory steps on 0-d, 1-D, empty, broadcast and non-contiguous operands,
# float64 and float32), compiled with -std=c99 -Wall -Wextra -Werror -pedantic
# by gcc and clang and run against the interpreter (under valgrind when it is
# installed); the exported trajectory kernels are include/addsl/traj_kernels.h
# verbatim.
addsl=${1:-${ADDSL_BIN:?usage: $0 PATH-TO-ADDSL}}
src=${srcdir:-.}
dir=$(mktemp -d "${TMPDIR:-/tmp}/addsl-shapes.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM
"$addsl" "$src/tests/export/shape_cases.ad" "$dir" > "$dir/main.c" || { echo "FAIL: shape_cases.ad"; exit 1; }
cat "$dir"/t[0-9]*.c > "$dir/all.c"
flags="-std=c99 -Wall -Wextra -Werror -pedantic"
ran=
for cc in gcc clang; do
    command -v $cc >/dev/null 2>&1 || { echo "# $cc not installed: skipped"; continue; }
    if [ -n "$ran" ]; then
        $cc $flags -fsyntax-only -I"$dir" "$dir/all.c" || { echo "FAIL: $cc rejects the exported code"; exit 1; }
        continue
    fi
    $cc $flags -O2 -I"$dir" -c "$dir/all.c" -o "$dir/all.o" || { echo "FAIL: $cc rejects the exported code"; exit 1; }
    bad=$(nm -u "$dir/all.o" | awk '{print $NF}' | grep -E '^(malloc|calloc|realloc|free|alloca|ad_|addsl_)')
    [ -z "$bad" ] || { echo "FAIL: the exported code references: $bad"; exit 1; }
    $cc -std=c99 -O0 -g -I"$dir" "$dir/main.c" "$dir/all.o" -lm -o "$dir/main" || { echo "FAIL: driver"; exit 1; }
    "$dir/main" || { echo "FAIL: $cc build differs from the interpreter"; exit 1; }
    if command -v valgrind >/dev/null 2>&1 && ! ldd "$addsl" 2>/dev/null | grep -q libasan; then
        valgrind -q --error-exitcode=3 "$dir/main" > /dev/null || { echo "FAIL: valgrind"; exit 1; }
        echo "# valgrind: clean"
    fi
    ran=$cc
done
[ -n "$ran" ] || { echo "SKIP: no C compiler"; exit 77; }
# the trajectory kernels in an exported file are the library's header, verbatim
f=$(grep -l 'XC_TRAJ_KERNELS_f64' "$dir"/t[0-9]*.c | head -1)
[ -n "$f" ] || { echo "FAIL: no exported file holds the trajectory kernels"; exit 1; }
sed -n '/^#define TRAJ_FN/,/^#undef TRAJ_T/p' "$f" | sed '1d;$d' > "$dir/embedded.h"
cmp -s "$dir/embedded.h" "$src/include/addsl/traj_kernels.h" || { echo "FAIL: the embedded kernels differ from include/addsl/traj_kernels.h"; exit 1; }
echo "export shapes: ok"
