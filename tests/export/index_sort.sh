#!/bin/sh
# index_sort.sh: tests/export/index_sort_cases.ad's exported functions (take,
# put, index_add, index_copy, index_fill, embedding, also run at indices out of
# range; values written over dying operands; the row ops on rows longer than
# 32 and 4096), compiled with -std=c99
# -Wall -Wextra -Werror -pedantic by gcc and clang and run against the
# interpreter (under valgrind when it is installed).
addsl=${1:-${ADDSL_BIN:?usage: $0 PATH-TO-ADDSL}}
src=${srcdir:-.}
. "$src/tests/export/check_c.sh"
export_cases index_sort_cases.ad t 1
# the long rows go through the merge sort, the short ones still count
grep -q 'xc_msort_f64(' "$dir"/t*.c || { echo "FAIL: no exported file calls the merge sort"; exit 1; }
grep -q 'ranks by counting' "$dir"/t*.c && { echo "FAIL: a row longer than 32 was lowered by counting"; exit 1; }
# a slice's gradient added to the running sum is one index_add_at, no block of zeros
grep -q 'the index_add_at into zeros above, as one index_add_at' "$dir"/t*.c || { echo "FAIL: no gradient sum written as one index_add_at"; exit 1; }
echo "export index_sort: ok"
