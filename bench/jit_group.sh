#!/usr/bin/env bash
# jit_group.sh: issue 14's "block interpreter or JIT", side by side in one run: the fused
# group of bench/compile.ad's chain rows (N records 'y = y * 1.0001' on float32, ended by a
# sum) replayed by compile()'s block interpreter (bench/jit_interp.ad) and compiled to
# machine code by the libgccjit prototype (bench/jit_group.c; Debian's libgccjit-12-dev,
# a bench-only dependency: the script says so and stops when it is missing).
# Usage: ADDSL=./addsl bench/jit_group.sh    COUNT=1 adds callgrind instructions per record
# (slow: gcc runs under valgrind for the JIT side, about a minute).
set -u
BENCH=$(cd "$(dirname "$0")" && pwd)
ADDSL=${ADDSL:-./addsl}
COUNT=${COUNT:-0}
GCCJIT=${GCCJIT:-/usr/lib/gcc/x86_64-linux-gnu/12}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
if [ ! -f "$GCCJIT/include/libgccjit.h" ]; then
    echo "jit_group.sh: libgccjit is not installed (apt-get install libgccjit-12-dev)" >&2
    exit 2
fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/addsl-jit.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
cc -O2 -I"$GCCJIT/include" "$BENCH/jit_group.c" -L"$GCCJIT" -Wl,-rpath,"$GCCJIT" -lgccjit -o "$TMP/jit_group" || exit 1

# row: records elements chunk calls
while read -r row n ne chunk calls; do
    echo "== $row"
    "$ADDSL" "$BENCH/jit_interp.ad" "$n" -1 "$ne" | head -1
    "$TMP/jit_group" "$n" 2 "$chunk" "$calls" 4 "$ne"
    [ "$n" -le 1000 ] && "$TMP/jit_group" "$n" 0 "$chunk" "$calls" 4 "$ne"
done <<'ROWS'
chain100 100 4 100 20000
chain1k 1000 4 100 2000
chain100k 100000 4 100 20
wide10 10 1000000 10 20
ROWS

if [ "$COUNT" = 1 ] && command -v valgrind >/dev/null; then
    count() { valgrind --tool=callgrind --callgrind-out-file="$TMP/cg" "$@" 2>&1 | sed -n 's/.*Collected : //p'; }
    a=$(count "$ADDSL" "$BENCH/jit_interp.ad" 1000 0)
    b=$(count "$ADDSL" "$BENCH/jit_interp.ad" 1000 20)
    echo "interp instructions per record (1000 records, float32[4]): $(( (b - a) / 20 / 1000 ))"
    # the JIT side counts only inside run() (the group's calls, the first one included)
    c=$(count --toggle-collect=run "$TMP/jit_group" 1000 2 100 10 4)
    echo "jit instructions per record (1000 records, float32[4], -O2): $(awk -v c="$c" 'BEGIN { printf "%.2f", c / 11 / 1000 }')"
fi
