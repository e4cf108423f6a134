#!/bin/sh
# ew_threads.sh: results do not depend on the OpenMP team size. Runs
# tests/ops/ew_threads_script.ad (which checks its values against serial
# computations) with 1, 2 and 3 threads and compares every saved result byte for byte.
addsl=${1:?usage: $0 PATH-TO-ADDSL}
script="${srcdir:-.}/tests/ops/ew_threads_script.ad"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ew_threads.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
for t in 1 2 3; do
    mkdir "$tmp/$t"
    out=$(OMP_NUM_THREADS=$t "$addsl" "$script" "$tmp/$t") || { echo "FAIL: the script failed with $t threads: $out"; exit 1; }
    [ "$out" = ok ] || { echo "FAIL: with $t threads it printed: $out"; exit 1; }
done
n=$(ls "$tmp/1" | wc -l)
[ "$n" -eq 224 ] || { echo "FAIL: only $n results saved"; exit 1; }
for f in "$tmp/1"/*.npy; do
    b=$(basename "$f")
    for t in 2 3; do
        cmp -s "$f" "$tmp/$t/$b" || { echo "FAIL: $b differs between 1 and $t threads"; exit 1; }
    done
done
echo "ok: $n results equal with 1, 2 and 3 threads"
