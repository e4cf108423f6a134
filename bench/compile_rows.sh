#!/usr/bin/env bash
# compile_rows.sh: the compile() rows of issue 14, each beside its target: compiled against eager,
# ADOL-C (bench/fk_adolc.sh) and PyTorch (when importable). bench/run.sh calls it; it also runs alone.
# Usage: ADDSL=./addsl bench/compile_rows.sh   ROUNDS=3 (interleaved rounds; medians over them)
#        MLP2=0 leaves out the MLP rows at 2 threads each (c5t, c5te)
#        COUNT=1 also prints callgrind instruction counts per call (needs valgrind; slow: minutes)
set -u

BENCH=$(cd "$(dirname "$0")" && pwd)
ADDSL=${ADDSL:-./addsl}
[ -d "$(dirname "$ADDSL")" ] && ADDSL="$(cd "$(dirname "$ADDSL")" && pwd -P)/$(basename "$ADDSL")"
PY=${BENCH_PYTHON:-/usr/bin/python3}
ROUNDS=${ROUNDS:-3}
COUNT=${COUNT:-0}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
MLP2=${MLP2:-1}   # also the MLP rows at 2 threads each (c5t, c5te); MLP2=0 leaves them out

if [ ! -x "$ADDSL" ]; then
    echo "compile_rows.sh: no addsl binary at $ADDSL (set ADDSL=...)" >&2
    exit 2
fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/addsl-compile.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT

declare -A R   # measurement name -> values, one per round
collect() {
    local name value
    while read -r name value; do
        [ -n "$name" ] && R["$name"]+="$value "
    done
}
med() {
    local v=${R[$1]:-}
    [ -z "$v" ] && return 0
    printf '%s\n' $v | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

# ADOL-C, built once (fk_adolc.sh prints why when it skips).
ADOLC=0
if FK_ADOLC_BIN="$TMP/fk_adolc" "$BENCH/fk_adolc.sh" > "$TMP/adolc.out" && [ -x "$TMP/fk_adolc" ]; then
    ADOLC=1
fi
# The MLP step's five products alone (bench/mlp_gemm.c): the floor under c5.
GEMM=0
if ${CC:-cc} -O2 $(pkg-config --cflags openblas 2>/dev/null) -o "$TMP/mlp_gemm" "$BENCH/mlp_gemm.c" \
        $(pkg-config --libs openblas 2>/dev/null) 2> "$TMP/mlp_gemm.err"; then
    GEMM=1
else
    echo "mlp_gemm.c: not built (row c5f left out):"; head -3 "$TMP/mlp_gemm.err"
fi
# This CPU's float32 multiply-add peak (bench/fma_peak.c): the ceiling under c5p and c5dp.
PEAK=0
if ${CC:-cc} -O2 -march=native -ffp-contract=fast -fopenmp -o "$TMP/fma_peak" "$BENCH/fma_peak.c" \
        2> "$TMP/fma_peak.err"; then
    PEAK=1
else
    echo "fma_peak.c: not built (rows c5p, c5dp left out):"; head -3 "$TMP/fma_peak.err"
fi
TORCH=0
if [ -x "$PY" ] && "$PY" -c 'import torch' 2>/dev/null; then TORCH=1; else echo "torch: not available"; fi

run_addsl() {  # run_addsl SCRIPT [ARGS...]: its "NAME VALUE" lines collected
    "$ADDSL" "$BENCH/$1" "${@:2}" > "$TMP/out" || { echo "compile_rows.sh: $* failed" >&2; exit 1; }
    collect < "$TMP/out"
}
run_mlp2() {  # run_mlp2 [compiled]: autograd_mlp.ad on 2 threads (passive waits: 2 shared cores), as mlp2_*
    OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive "$ADDSL" "$BENCH/autograd_mlp.ad" "$@" > "$TMP/out" \
        || { echo "compile_rows.sh: autograd_mlp.ad $* failed" >&2; exit 1; }
    collect < <(sed 's/^mlp_/mlp2_/' "$TMP/out")
}
run_mlpd() {  # run_mlpd: the compiled MLP step with OpenMP's defaults (every core, its own waits), as mlpd_*
    env -u OMP_NUM_THREADS -u OMP_WAIT_POLICY "$ADDSL" "$BENCH/autograd_mlp.ad" compiled > "$TMP/out" \
        || { echo "compile_rows.sh: autograd_mlp.ad compiled (defaults) failed" >&2; exit 1; }
    collect < <(sed 's/^mlp_/mlpd_/' "$TMP/out")
}

for round in $(seq "$ROUNDS"); do
    echo "== compile rows: round $round of $ROUNDS" >&2
    run_addsl chain_compile.ad
    run_addsl fk_chain.ad
    cp "$TMP/out" "$TMP/fk_chain.out"
    [ $ADOLC = 1 ] && { "$TMP/fk_adolc" > "$TMP/adolc.out"; collect < "$TMP/adolc.out"; }
    if [ $TORCH = 1 ]; then
        "$PY" "$BENCH/fk_torch.py" > "$TMP/fk_torch.out" && collect < "$TMP/fk_torch.out"
        # torch's intra-op threads (BENCH_TORCH_THREADS, else every core) and its OpenBLAS's (OMP_NUM_THREADS)
        # are set apart: both get addsl's count, so that c5 compares one thread with one thread
        BENCH_TORCH_THREADS=$OMP_NUM_THREADS "$PY" "$BENCH/autograd_torch.py" mlp | sed 's/^/torch_/' > "$TMP/mlp_torch.out" \
            && collect < "$TMP/mlp_torch.out"
        if [ "$MLP2" = 1 ]; then
            OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive BENCH_TORCH_THREADS=2 "$PY" "$BENCH/autograd_torch.py" mlp \
                | sed 's/^/torch2_/' > "$TMP/mlp_torch.out" && collect < "$TMP/mlp_torch.out"
            # torch as it starts: its own intra-op count, its OpenBLAS's own threads
            env -u OMP_NUM_THREADS -u OMP_WAIT_POLICY BENCH_TORCH_THREADS=default "$PY" "$BENCH/autograd_torch.py" mlp \
                | sed 's/^/torchd_/' > "$TMP/mlp_torch.out" && collect < "$TMP/mlp_torch.out"
        fi
    fi
    run_addsl autograd_lstm.ad
    run_addsl autograd_lstm.ad compiled
    run_addsl autograd_mlp.ad
    run_addsl autograd_mlp.ad compiled
    [ $GEMM = 1 ] && collect < <("$TMP/mlp_gemm")
    if [ "$MLP2" = 1 ]; then
        run_mlp2 compiled
        run_mlp2
        run_mlpd
    fi
    [ $PEAK = 1 ] && collect < <(env -u OMP_NUM_THREADS "$TMP/fma_peak")
    run_addsl traj_compile.ad
done

# crow ID LABEL UNIT VALUE BASE_NAME BASE_VALUE TARGET: VALUE and BASE_VALUE in seconds (or a
# plain ratio with UNIT "x"); TARGET "<=R" applies to VALUE / BASE_VALUE, "<=N unit" to VALUE
# itself, "-" for rows given for information.
crow() {
    awk -v id="$1" -v label="$2" -v unit="$3" -v a="$4" -v bn="$5" -v b="$6" -v tgt="$7" '
    BEGIN {
        s = (unit == "us") ? 1e6 : (unit == "ms") ? 1e3 : (unit == "ns") ? 1e9 : 1
        fa = (a == "") ? "-" : sprintf("%.3f", a * s)
        fb = (b == "") ? "-" : sprintf("%.3f", b * s)
        r = (a == "" || b == "" || b == 0) ? "" : a / b
        fr = (r == "") ? "-" : sprintf("%.3f", r)
        ok = ""
        if (tgt ~ /^<=[0-9.]+$/ && r != "") { ok = (r <= substr(tgt, 3) + 0) ? "MET" : "MISSED" }
        else if (tgt ~ /^<=[0-9.]+ / && a != "") { split(substr(tgt, 3), t, " "); ok = (a * s <= t[1] + 0) ? "MET" : "MISSED" }
        printf "%-4s %-44s %10s %-9s %10s %7s %9s %s\n", id, label, fa, bn, fb, fr, tgt, ok
    }'
}
floor() { awk -v f="$1" -v g="$2" 'BEGIN { if (f != "" && g != "" && g != 0) printf "%.12g", f / (g * 1e9) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "" && b != 0) printf "%.12g", a / b }'; }

echo
echo "compile() (issue 14): $ROUNDS rounds, medians; OMP_NUM_THREADS=$OMP_NUM_THREADS; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "addsl column: the compiled side; ratio = addsl / base (below 1: compiled faster)"
printf "%-4s %-44s %10s %-9s %10s %7s %9s %s\n" "#" "row (unit)" "addsl" "baseline" "base" "ratio" "target" ""
crow c1  "100k-op chain, grad in f, per op (ns)" ns "$(med chain100k_grad_compiled)" eager "$(med chain100k_grad_eager)" "<=30 ns"
crow c1b "100k-op chain, backward(cf(x)), per op (ns)" ns "$(med chain100k_backward_compiled)" eager "$(med chain100k_backward_eager)" "<=30 ns"
crow c2  "fk_chain cost+grad, batch 1 (us)" us "$(med fk_b1_compiled)" ADOL-C "$(med fk_b1_adolc)" "<=2.00"
crow c2e "  same, compiled vs eager (us)" us "$(med fk_b1_compiled)" eager "$(med fk_b1_eager)" -
crow c3  "fk_chain cost+grad, batch 1000 (ms)" ms "$(med fk_b1000_compiled)" torch "$(med fk_b1000_torch)" "<=0.50"
crow c3a "  same, vs ADOL-C (scalar loop) (ms)" ms "$(med fk_b1000_compiled)" ADOL-C "$(med fk_b1000_adolc)" -
crow c3e "  same, compiled vs eager (ms)" ms "$(med fk_b1000_compiled)" eager "$(med fk_b1000_eager)" -
crow c4  "LSTM (f+bwd) / f no_grad, compiled (x)" x "$(ratio "$(med lstm_cf_grad)" "$(med lstm_cf_nograd)")" "" "" "<=2 x"
crow c4e "  eager's (f+bwd) / f no_grad (x)" x "$(ratio "$(med lstm_f_grad)" "$(med lstm_f_nograd)")" "" "" -
crow c4r "LSTM (f+bwd) / f recording, compiled (x)" x "$(ratio "$(med lstm_cf_grad)" "$(med lstm_cf)")" "" "" -
crow c4g "  LSTM f+bwd, compiled vs eager (ms)" ms "$(med lstm_cf_grad)" eager "$(med lstm_f_grad)" -
crow c5  "MLP step 784-256-10 b256, $OMP_NUM_THREADS thread each (ms)" ms "$(med mlp_step_compiled)" torch "$(med torch_mlp_step)" "<=0.40"
crow c5e "  same, compiled vs eager (ms)" ms "$(med mlp_step_compiled)" eager "$(med mlp_step)" -
crow c5f "  its 5 products alone (OpenBLAS) (ms)" ms "$(med mlp_gemm)" torch "$(med torch_mlp_step)" -
# the products' floating-point operations at the FMA peak: no kernel can go below this
FLOOR1=$(floor "$(med mlp_gemm_flop)" "$(med fma_peak_1)")
crow c5p "  its products at the FMA peak, 1 thread (ms)" ms "$FLOOR1" torch "$(med torch_mlp_step)" -
if [ "$MLP2" = 1 ]; then
crow c5t "  same, 2 threads each, OMP passive (ms)" ms "$(med mlp2_step_compiled)" torch "$(med torch2_mlp_step)" -
crow c5te "  same, 2 threads, compiled vs eager (ms)" ms "$(med mlp2_step_compiled)" eager "$(med mlp2_step)" -
crow c5d "  same, each side at its defaults (ms)" ms "$(med mlpd_step_compiled)" torch "$(med torchd_mlp_step)" -
FLOORA=$(floor "$(med mlp_gemm_flop)" "$(med fma_peak_all)")
crow c5dp "  its products at the FMA peak, all cores (ms)" ms "$FLOORA" torch "$(med torchd_mlp_step)" -
fi
[ $PEAK = 1 ] && echo "FMA peak (bench/fma_peak.c, float32, best of 5): 1 thread $(med fma_peak_1) GFLOP/s," \
    "$(med fma_threads) threads $(med fma_peak_all) GFLOP/s; c5p and c5dp: the step's products there, a floor"
crow c6  "trajectory sample iteration (ms)" ms "$(med traj_iter_compiled)" eager "$(med traj_iter_eager)" "<=0.60"
echo "same results: chain grad $(med chain100k_same_grad), trajectory cost $(med traj_same_cost)," \
    "MLP loss after the steps: eager $(med mlp_loss), compiled $(med mlp_loss_compiled)"
echo "fk_chain values (eager / compiled / ADOL-C$( [ $TORCH = 1 ] && echo " / torch")):"
VALUES=("$TMP/fk_chain.out")
[ $ADOLC = 1 ] && VALUES+=("$TMP/adolc.out")
[ $TORCH = 1 ] && VALUES+=("$TMP/fk_torch.out")
grep -h -E '^fk_b1(000)?_(cost|grad)_' "${VALUES[@]}" | sort -s -k1,1 | sed 's/^/    /'
grep -h '^fk_fd_max_error' "$TMP/fk_chain.out" | sed 's/^/    /'

[ "$COUNT" = 1 ] || exit 0
if ! command -v valgrind > /dev/null; then echo "COUNT=1: no valgrind; instruction counts skipped"; exit 0; fi

# instr N CMD...: instructions per call of CMD ... CALLS ...: CMD is run with N + 1 and with 1
# in the place of the word CALLS, and the difference divided by N, so that the set-up, the trace
# and the first replay (where a compiled program may build its plan) are left out.
instr() {
    local n=$1; shift
    local with0=() withn=() w
    for w in "$@"; do
        if [ "$w" = CALLS ]; then with0+=(1); withn+=("$((n + 1))"); else with0+=("$w"); withn+=("$w"); fi
    done
    local c0 cn
    c0=$(valgrind --tool=callgrind --callgrind-out-file="$TMP/cg" "${with0[@]}" 2>&1 >/dev/null | sed -n 's/.*Collected : //p')
    cn=$(valgrind --tool=callgrind --callgrind-out-file="$TMP/cg" "${withn[@]}" 2>&1 >/dev/null | sed -n 's/.*Collected : //p')
    awk -v a="$c0" -v b="$cn" -v n="$n" 'BEGIN { if (a != "" && b != "") printf "%.0f", (b - a) / n; else printf "-" }'
}
echo
echo "instructions per call (callgrind; the set-up, the trace and the first replay subtracted)"
printf '    %-38s %14s %14s %8s\n' "row" "eager" "compiled" "ratio"
irow() {  # irow LABEL EAGER COMPILED
    printf '    %-38s %14s %14s %8s\n' "$1" "$2" "$3" "$(ratio "$3" "$2" | awk '{ if ($1 != "") printf "%.3f", $1 }')"
}
irow "fk_chain batch 1" "$(instr 50 "$ADDSL" "$BENCH/fk_chain.ad" b1 CALLS eager)" \
    "$(instr 50 "$ADDSL" "$BENCH/fk_chain.ad" b1 CALLS compiled)"
irow "fk_chain batch 1000" "$(instr 3 "$ADDSL" "$BENCH/fk_chain.ad" b1000 CALLS eager)" \
    "$(instr 3 "$ADDSL" "$BENCH/fk_chain.ad" b1000 CALLS compiled)"
if [ $ADOLC = 1 ]; then
    printf '    %-38s %14s (batch 1)  %s (batch 1000)\n' "ADOL-C gradient()" \
        "$(instr 200 "$TMP/fk_adolc" b1 CALLS)" "$(instr 3 "$TMP/fk_adolc" b1000 CALLS)"
fi
per_op() { awk -v a="$1" 'BEGIN { if (a != "-") printf "%.0f", a / 100000; else printf "-" }'; }
for r in grad backward; do
    irow "100k chain, $r (per op)" "$(per_op "$(instr 1 "$ADDSL" "$BENCH/chain_compile.ad" $r CALLS eager)")" \
        "$(per_op "$(instr 1 "$ADDSL" "$BENCH/chain_compile.ad" $r CALLS compiled)")"
done
irow "MLP step (bench/compile.ad mlp)" "$(instr 3 "$ADDSL" "$BENCH/compile.ad" mlp CALLS eager)" \
    "$(instr 3 "$ADDSL" "$BENCH/compile.ad" mlp CALLS compiled)"
irow "trajectory iteration" "$(instr 20 "$ADDSL" "$BENCH/traj_compile.ad" CALLS eager)" \
    "$(instr 20 "$ADDSL" "$BENCH/traj_compile.ad" CALLS compiled)"
# c4: the LSTM's f under no_grad and f+bwd, each side (their ratio is the row's)
for w in nograd grad; do
    irow "LSTM $([ $w = grad ] && echo "f+bwd" || echo "f no_grad") (bench/lstm_compile.ad)" "$(instr 10 "$ADDSL" "$BENCH/lstm_compile.ad" CALLS eager $w)" \
        "$(instr 10 "$ADDSL" "$BENCH/lstm_compile.ad" CALLS compiled $w)"
done
