#!/bin/sh
# index_sort.sh: tests/export/index_sort_cases.ad's exported functions (take,
# put, index_add, index_copy, index_fill, embedding, also run at indices out of
# range; values written over dying operands; the row ops on rows longer than
# 32 and 4096), compiled with -std=c99
# -Wall -Wextra -Werror -pedantic by gcc and clang and run against the
# interpreter (under valgrind when it is installed).
addsl=${1:-${ADDSL_BIN:?usage: $0 PATH-TO-ADDSL}}
src=${srcdir:-.}
dir=$(mktemp -d "${TMPDIR:-/tmp}/addsl-xindex.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM
"$addsl" "$src/tests/export/index_sort_cases.ad" "$dir" > "$dir/main.c" || { echo "FAIL: index_sort_cases.ad"; exit 1; }
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
    [ -z "$(nm "$dir/all.o" | awk '$2 ~ /^[BDbd]$/')" ] || { echo "FAIL: the exported code has writable data"; exit 1; }
    $cc -std=c99 -O0 -g -I"$dir" "$dir/main.c" "$dir/all.o" -lm -o "$dir/main" || { echo "FAIL: driver"; exit 1; }
    "$dir/main" || { echo "FAIL: $cc build differs from the interpreter"; exit 1; }
    if command -v valgrind >/dev/null 2>&1 && ! ldd "$addsl" 2>/dev/null | grep -q libasan; then
        valgrind -q --error-exitcode=3 "$dir/main" > /dev/null || { echo "FAIL: valgrind"; exit 1; }
        echo "# valgrind: clean"
    fi
    ran=$cc
done
[ -n "$ran" ] || { echo "SKIP: no C compiler"; exit 77; }
# the long rows go through the merge sort, the short ones still count
grep -q 'xc_msort_f64(' "$dir"/t*.c || { echo "FAIL: no exported file calls the merge sort"; exit 1; }
grep -q 'ranks by counting' "$dir"/t*.c && { echo "FAIL: a row longer than 32 was lowered by counting"; exit 1; }
# a slice's gradient added to the running sum is one index_add_at, no block of zeros
grep -q 'the index_add_at into zeros above, as one index_add_at' "$dir"/t*.c || { echo "FAIL: no gradient sum written as one index_add_at"; exit 1; }
echo "export index_sort: ok"
