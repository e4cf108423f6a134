#!/bin/sh
# special.sh: tests/export/special_cases.ad's exported special functions on
# their hard domains (poles, tails, reflections, large arguments; 0-d, empty,
# broadcast, non-contiguous, float64 and float32), compiled with -std=c99
# -Wall -Wextra -Werror -pedantic by gcc and clang and run against the
# interpreter (under valgrind when it is installed); the functions and macros
# in an exported file are builtins/kernels/special_math.h's text, verbatim.
addsl=${1:-${ADDSL_BIN:?usage: $0 PATH-TO-ADDSL}}
src=${srcdir:-.}
. "$src/tests/export/check_c.sh"
export_cases special_cases.ad t 1
hdr="$src/builtins/kernels/special_math.h"
# every function block (between '#define XC_SP_name' and its '#endif') is a
# run of the header's lines; every line of the macro block is a header line
nblocks=0
for f in "$dir"/t[0-9]*.c; do
    rm -f "$dir"/blk.*
    awk -v d="$dir" '/^#define XC_SP_/ { n++; out = d "/blk." n; next }
        out && /^#endif$/ { close(out); out = ""; next }
        out { print > out }' "$f"
    for b in "$dir"/blk.*; do
        [ -f "$b" ] || continue
        first=$(head -n 1 "$b")
        at=$(grep -n -F -x -- "$first" "$hdr" | head -n 1 | cut -d: -f1)
        [ -n "$at" ] || { echo "FAIL: $(basename "$f"): not in kernels/special_math.h: $first"; exit 1; }
        len=$(wc -l < "$b")
        sed -n "${at},$((at + len - 1))p" "$hdr" | cmp -s - "$b" ||
            { echo "FAIL: $(basename "$f"): the block from '$first' differs from kernels/special_math.h"; exit 1; }
        nblocks=$((nblocks + 1))
    done
    sed -n '/^#define XC_SPECIAL_MATH_DEFS$/,/^#endif$/p' "$f" | sed '1d;$d' > "$dir/defs"
    while IFS= read -r l; do
        grep -q -F -x -- "$l" "$hdr" || { echo "FAIL: $(basename "$f"): macro line not in kernels/special_math.h: $l"; exit 1; }
    done < "$dir/defs"
done
[ "$nblocks" -gt 100 ] || { echo "FAIL: only $nblocks function blocks found in the exported files"; exit 1; }
echo "# $nblocks function blocks are kernels/special_math.h's text"
echo "export special: ok"
