#!/bin/sh
# op_table.sh: every op of the op table that lowers, exported by export_c on its
# test input sets (tests/export/op_table.ad), compiled with -std=c99 -Wall -Wextra
# -Werror -pedantic by gcc and clang (each when installed), run against the
# interpreter's outputs; the objects reference no allocator and nothing of
# libaddsl (nm); valgrind runs the driver when installed.
addsl=${1:?usage: $0 PATH-TO-ADDSL}
src=${srcdir:-.}
dir=$(mktemp -d "${TMPDIR:-/tmp}/addsl-export.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM
"$addsl" "$src/tests/export/op_table.ad" "$dir" > "$dir/main.c" || { echo "FAIL: op_table.ad"; exit 1; }
# One translation unit for all cases: one compiler run instead of thousands.
cat "$dir"/c[0-9]*.c > "$dir/cases.c"
ncomp=0
for cc in gcc clang; do
    command -v $cc >/dev/null 2>&1 || { echo "# $cc not installed: skipped"; continue; }
    $cc -std=c99 -Wall -Wextra -Werror -pedantic -O2 -I"$dir" -c "$dir/cases.c" -o "$dir/cases-$cc.o" \
        || { echo "FAIL: $cc rejects the exported code"; exit 1; }
    bad=$(nm -u "$dir/cases-$cc.o" | awk '{print $NF}' | grep -E '^(malloc|calloc|realloc|free|ad_|addsl_)' )
    [ -z "$bad" ] || { echo "FAIL: the exported code references: $bad"; exit 1; }
    [ -z "$(nm "$dir/cases-$cc.o" | awk '$2 ~ /^[BDbd]$/')" ] || { echo "FAIL: the exported code has writable data"; exit 1; }
    # the driver is mostly data: no optimisation, to keep the compile short
    $cc -std=c99 -O0 -I"$dir" "$dir/main.c" "$dir/cases-$cc.o" -lm -o "$dir/main-$cc" || { echo "FAIL: driver"; exit 1; }
    "$dir/main-$cc" || { echo "FAIL: $cc build differs from the interpreter"; exit 1; }
    ncomp=$((ncomp + 1))
done
[ $ncomp -gt 0 ] || { echo "SKIP: no C compiler"; exit 77; }
grep -E '^/\* (lowered|not lowered)' "$dir/main.c"
if command -v valgrind >/dev/null 2>&1; then
    cc=$(command -v gcc >/dev/null 2>&1 && echo gcc || echo clang)
    valgrind -q --error-exitcode=3 "$dir/main-$cc" > /dev/null || { echo "FAIL: valgrind"; exit 1; }
    echo "valgrind: clean"
fi
echo "export op_table: ok"
