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
dir=$(mktemp -d "${TMPDIR:-/tmp}/addsl-export.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM
"$addsl" "$src/tests/export/cases.ad" "$dir" > "$dir/main.c" || { echo "FAIL: op_table.ad"; exit 1; }
# One translation unit for all cases: one compiler run instead of thousands.
cat "$dir"/c[0-9]*.c > "$dir/cases.c"
flags="-std=c99 -Wall -Wextra -Werror -pedantic"
ran=
for cc in gcc clang; do
    command -v $cc >/dev/null 2>&1 || { echo "# $cc not installed: skipped"; continue; }
    if [ -n "$ran" ]; then
        $cc $flags -fsyntax-only -I"$dir" "$dir/cases.c" || { echo "FAIL: $cc rejects the exported code"; exit 1; }
        echo "# $cc: compiles cleanly"
        continue
    fi
    $cc $flags -O2 -I"$dir" -c "$dir/cases.c" -o "$dir/cases.o" || { echo "FAIL: $cc rejects the exported code"; exit 1; }
    bad=$(nm -u "$dir/cases.o" | awk '{print $NF}' | grep -E '^(malloc|calloc|realloc|free|ad_|addsl_)')
    [ -z "$bad" ] || { echo "FAIL: the exported code references: $bad"; exit 1; }
    [ -z "$(nm "$dir/cases.o" | awk '$2 ~ /^[BDbd]$/')" ] || { echo "FAIL: the exported code has writable data"; exit 1; }
    # the driver is mostly data: no optimisation, to keep its compile short
    $cc -std=c99 -O0 -I"$dir" "$dir/main.c" "$dir/cases.o" -lm -o "$dir/main" || { echo "FAIL: driver"; exit 1; }
    "$dir/main" || { echo "FAIL: $cc build differs from the interpreter"; exit 1; }
    ran=$cc
done
[ -n "$ran" ] || { echo "SKIP: no C compiler"; exit 77; }
grep -E '^/\* (lowered|not lowered)' "$dir/main.c"
echo "export op_table: ok"
