#!/bin/sh
# ew_table.sh: tests/export/ew_table_cases.ad's exported element-wise ops at
# their thresholds, +-inf and nan (float64, float32, int64), compiled with
# -std=c99 -Wall -Wextra -Werror -pedantic by gcc and clang and run against
# the interpreter; the C expression of each op is its row of
# builtins/kernels/ew_table.h, the CPU kernel's formula, and the functions it
# calls are kernels/scalar_math.h's and special_math.h's text, verbatim.
addsl=${1:-${ADDSL_BIN:?usage: $0 PATH-TO-ADDSL}}
src=${srcdir:-.}
. "$src/tests/export/check_c.sh"
export_cases ew_table_cases.ad t 0
# the softplus threshold and the SELU constants as the table writes them
grep -q -F '(20)' "$dir"/t[0-9]*.c || { echo "FAIL: mish's softplus threshold is not in the exported C"; exit 1; }
grep -q -F '(1.0507009873554804934193349852946)' "$dir"/t[0-9]*.c || { echo "FAIL: selu's scale is not the table's"; exit 1; }
# every copied scalar function is a run of kernels/scalar_math.h's lines
hdr="$src/builtins/kernels/scalar_math.h"
n=0
for f in "$dir"/t[0-9]*.c; do
    for fn in ad_wrap_neg ad_iremainder ad_ifloordiv ad_floordiv ad_fremainder_f64 ad_pow_f32; do
        grep -q "^AD_SPECIAL_FN .* $fn(" "$f" || continue
        line=$(grep -m 1 "^AD_SPECIAL_FN .* $fn(" "$f")
        grep -q -F -x -- "$line" "$hdr" || { echo "FAIL: $(basename "$f"): not kernels/scalar_math.h's: $line"; exit 1; }
        n=$((n + 1))
    done
done
[ "$n" -gt 5 ] || { echo "FAIL: only $n scalar_math.h functions in the exported files"; exit 1; }
echo "# $n kernels/scalar_math.h functions copied"
echo "export ew_table: ok"
