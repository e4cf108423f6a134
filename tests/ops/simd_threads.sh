#!/bin/sh
# simd_threads.sh: the kernels of issue 13 (SLEEF calls cut by their cost, column and row
# sums of reduce_simd.c, mean's gradient) give the same bytes with 1, 2 and 3 OpenMP threads.
# Runs tests/ops/simd_threads_script.ad (which checks its values against serial pieces) under
# each team size and compares every saved result byte for byte, as ew_threads.sh does.
addsl=${1:?usage: $0 PATH-TO-ADDSL}
script="${srcdir:-.}/tests/ops/simd_threads_script.ad"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/simd_threads.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
for t in 1 2 3; do
    mkdir "$tmp/$t"
    out=$(OMP_NUM_THREADS=$t "$addsl" "$script" "$tmp/$t") || { echo "FAIL: the script failed with $t threads: $out"; exit 1; }
    [ "$out" = ok ] || { echo "FAIL: with $t threads it printed: $out"; exit 1; }
done
n=$(ls "$tmp/1" | wc -l)
[ "$n" -eq 88 ] || { echo "FAIL: $n results saved, 88 expected"; exit 1; }
for f in "$tmp/1"/*.npy; do
    b=$(basename "$f")
    for t in 2 3; do
        cmp -s "$f" "$tmp/$t/$b" || { echo "FAIL: $b differs between 1 and $t threads"; exit 1; }
    done
done
echo "ok: $n results equal with 1, 2 and 3 threads"
