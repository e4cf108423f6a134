#!/usr/bin/env bash
# export_rows.sh: the export_c rows of issue 15: bench/fk_chain.ad's 7-joint cost at batch 1,
# exported as C (fk_vjp, cc -O2), against ADOL-C's tape replay (bench/fk_adolc.sh) and the
# compiled program (compile()), wall times and callgrind instruction counts side by side.
# bench/run.sh calls it; it also runs alone.
# Usage: ADDSL=./addsl bench/export_rows.sh   ROUNDS=3 (interleaved; medians)  COUNT=0 skips callgrind
set -u

BENCH=$(cd "$(dirname "$0")" && pwd)
ADDSL=${ADDSL:-./addsl}
[ -d "$(dirname "$ADDSL")" ] && ADDSL="$(cd "$(dirname "$ADDSL")" && pwd -P)/$(basename "$ADDSL")"
ROUNDS=${ROUNDS:-3}
COUNT=${COUNT:-1}
CC=${CC:-cc}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
if [ ! -x "$ADDSL" ]; then
    echo "export_rows.sh: no addsl binary at $ADDSL (set ADDSL=...)" >&2
    exit 2
fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/addsl-export.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT

declare -A R
collect() {
    local name value
    while read -r name value; do [ -n "$name" ] && R["$name"]+="$value "; done
}
med() {
    local v=${R[$1]:-}
    [ -z "$v" ] && return 0
    printf '%s\n' $v | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

# build VARIANT [BLAS]: export fk_cost into $TMP/VARIANT and build the driver there
build() {
    mkdir -p "$TMP/$1"
    "$ADDSL" "$BENCH/fk_chain.ad" export "$TMP/$1/fk.c" ${2:-} > /dev/null || return 1
    $CC -O2 -std=c99 -Wall -Wextra -Werror -pedantic -D_POSIX_C_SOURCE=199309L ${3:-} -I"$TMP/$1" \
        -o "$TMP/$1/fk_export" "$BENCH/fk_export.c" "$TMP/$1/fk.c" ${4:-} -lm
}
build loops || { echo "export_rows.sh: exporting or building fk_vjp failed" >&2; exit 1; }
BLAS=0
if [ -f /usr/include/cblas.h ] || [ -f /usr/include/x86_64-linux-gnu/cblas.h ] ||
        pkg-config --exists openblas 2>/dev/null; then
    build blas blas "$(pkg-config --cflags openblas 2>/dev/null)" "$(pkg-config --libs openblas 2>/dev/null || echo -lblas)" &&
        BLAS=1
fi
[ $BLAS = 1 ] || echo "export_rows.sh: no cblas.h (or the blas=true build failed): the CBLAS row is skipped" >&2
ADOLC=0
FK_ADOLC_BIN="$TMP/fk_adolc" "$BENCH/fk_adolc.sh" > "$TMP/adolc.out" && [ -x "$TMP/fk_adolc" ] && ADOLC=1

for round in $(seq "$ROUNDS"); do
    echo "== export rows: round $round of $ROUNDS" >&2
    "$TMP/loops/fk_export" > "$TMP/export.out" && collect < "$TMP/export.out"
    [ $BLAS = 1 ] && collect < <("$TMP/blas/fk_export" | sed 's/^fk_b1_export/fk_b1_export_blas/')
    [ $ADOLC = 1 ] && { "$TMP/fk_adolc" > "$TMP/adolc.out"; collect < "$TMP/adolc.out"; }
    collect < <("$ADDSL" "$BENCH/fk_chain.ad" b1time)
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "" && b != 0) printf "%.3f", a / b; else printf "-" }'; }
us() { awk -v a="$1" 'BEGIN { if (a != "") printf "%.3f", a * 1e6; else printf "-" }'; }
# xrow ID LABEL SECONDS BASE_NAME BASE_SECONDS TARGET(<=R or -)
xrow() {
    local r ok=""
    r=$(ratio "$3" "$5")
    if [ "$6" != - ] && [ "$r" != - ]; then
        ok=$(awk -v r="$r" -v t="${6#<=}" 'BEGIN { print (r <= t) ? "MET" : "MISSED" }')
    fi
    printf "%-4s %-44s %10s %-9s %10s %7s %9s %s\n" "$1" "$2" "$(us "$3")" "$4" "$(us "$5")" "$r" "$6" "$ok"
}
echo
echo "export_c (issue 15): fk_chain's gradient at batch 1, float64; $ROUNDS rounds, medians;" \
    "load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "addsl column: fk_vjp() exported and built with $CC -O2; ratio = addsl / base"
printf "%-4s %-44s %10s %-9s %10s %7s %9s %s\n" "#" "row (unit)" "addsl" "baseline" "base" "ratio" "target" ""
xrow x1  "fk gradient, batch 1, exported (us)" "$(med fk_b1_export)" ADOL-C "$(med fk_b1_adolc)" "<=0.25"
xrow x1c "  same, vs the compiled program (us)" "$(med fk_b1_export)" compiled "$(med fk_b1_compiled)" -
[ $BLAS = 1 ] && xrow x1b "  blas=true (cblas_dgemm) vs ADOL-C (us)" "$(med fk_b1_export_blas)" ADOL-C "$(med fk_b1_adolc)" -
echo "work buffer: $(med fk_export_work_bytes) bytes (FK_WORK_BYTES)"
echo "gradient (export / ADOL-C):"
grep -h -E '^fk_b1_grad_(export|adolc)' "$TMP/export.out" "$TMP/adolc.out" 2>/dev/null | sed 's/^/    /'

[ "$COUNT" = 1 ] || exit 0
if ! command -v valgrind > /dev/null; then echo "no valgrind: instruction counts skipped"; exit 0; fi
# instr N CMD...: instructions per call: CMD run with N + 1 and with 1 in place of the word
# CALLS, the difference divided by N (set-up, tracing and the first call left out)
instr() {
    local n=$1; shift
    local with0=() withn=() w c0 cn
    for w in "$@"; do
        if [ "$w" = CALLS ]; then with0+=(1); withn+=("$((n + 1))"); else with0+=("$w"); withn+=("$w"); fi
    done
    c0=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "${with0[@]}" 2>&1 >/dev/null | sed -n 's/.*Collected : //p')
    cn=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "${withn[@]}" 2>&1 >/dev/null | sed -n 's/.*Collected : //p')
    awk -v a="$c0" -v b="$cn" -v n="$n" 'BEGIN { if (a != "" && b != "") printf "%.0f", (b - a) / n; else printf "-" }'
}
echo
echo "instructions per gradient (callgrind; set-up and first call subtracted)"
IE=$(instr 1000 "$TMP/loops/fk_export" b1 CALLS)
printf '    %-40s %12s\n' "fk_vjp exported (loops)" "$IE"
[ $BLAS = 1 ] && printf '    %-40s %12s\n' "fk_vjp exported (blas=true)" "$(instr 1000 "$TMP/blas/fk_export" b1 CALLS)"
if [ $ADOLC = 1 ]; then
    IA=$(instr 200 "$TMP/fk_adolc" b1 CALLS)
    printf '    %-40s %12s   export / ADOL-C %s\n' "ADOL-C gradient()" "$IA" "$(ratio "$IE" "$IA")"
fi
IC=$(instr 50 "$ADDSL" "$BENCH/fk_chain.ad" b1 CALLS compiled)
printf '    %-40s %12s   export / compiled %s\n' "compiled cost+grad (compile())" "$IC" "$(ratio "$IE" "$IC")"
