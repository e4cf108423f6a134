#!/usr/bin/env bash
# run.sh: the one entry point of the addsl benchmarks; prints addsl vs C / PyTorch side by side.
# Usage: ADDSL=/path/to/addsl bench/run.sh   (default: ./addsl in the current directory)
set -u

BENCH=$(cd "$(dirname "$0")" && pwd)
ADDSL=${ADDSL:-./addsl}
[ -d "$(dirname "$ADDSL")" ] && ADDSL="$(cd "$(dirname "$ADDSL")" && pwd -P)/$(basename "$ADDSL")"
PY=${BENCH_PYTHON:-/usr/bin/python3}
ROUNDS=${ROUNDS:-3}                     # interleaved rounds of every benchmark
STARTUP_RUNS=${STARTUP_RUNS:-50}        # addsl -e 1 runs
TORCH_STARTUP_RUNS=${TORCH_STARTUP_RUNS:-10}  # import torch takes about a second each

if [ ! -x "$ADDSL" ]; then
    echo "run.sh: no addsl binary at $ADDSL (set ADDSL=...)" >&2
    exit 2
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/addsl-bench.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT

declare -A R   # measurement name -> seconds, one value per round
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)

# Reads "NAME VALUE" lines, appending each value to R[$1NAME].
collect() {
    local prefix=$1 name value
    while read -r name value; do
        [ -n "$name" ] && R["$prefix$name"]+="$value "
    done
}

# The median over rounds of R[$1], empty if never measured.
med() {
    local v=${R[$1]:-}
    [ -z "$v" ] && return 0
    printf '%s\n' $v | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

echo "== building C baselines (cc -O2) in $TMP" >&2
CC=${CC:-cc}
$CC -O2 -o "$TMP/mul" "$BENCH/mul.c" || exit 1
$CC -O2 $(pkg-config --cflags openblas) -o "$TMP/sgemm" "$BENCH/sgemm.c" \
    $(pkg-config --libs openblas) || exit 1
# the CPU's float32 multiply-add peak, the ceiling of every product row (optional)
PEAK=0
$CC -O2 -march=native -ffp-contract=fast -fopenmp -o "$TMP/fma_peak" "$BENCH/fma_peak.c" 2> /dev/null && PEAK=1

TORCH=0
if [ -x "$PY" ] && "$PY" -c 'import torch' 2>/dev/null; then
    TORCH=1
else
    echo "torch: not available"
fi

for round in $(seq "$ROUNDS"); do
    echo "== round $round of $ROUNDS: addsl scripts" >&2
    for s in perop mul tanh matmul matmul_small sweep; do
        "$ADDSL" "$BENCH/$s.ad" > "$TMP/$s.out" || { echo "run.sh: $s.ad failed" >&2; exit 1; }
        collect addsl_ < "$TMP/$s.out"
    done

    # Again with sleeping OpenMP workers: on a busy machine, spinning idle workers
    # steal the core the main thread needs (see RESULTS.md).
    for s in mul tanh; do
        OMP_WAIT_POLICY=passive "$ADDSL" "$BENCH/$s.ad" > "$TMP/$s.passive.out" || exit 1
        collect addslp_ < "$TMP/$s.passive.out"
    done

    echo "== C baselines" >&2
    collect c_ < <("$TMP/mul")
    collect c_ < <("$TMP/sgemm")
    [ $PEAK = 1 ] && collect c_ < <("$TMP/fma_peak")

    if [ $TORCH = 1 ]; then
        echo "== PyTorch" >&2
        "$PY" "$BENCH/torch_bench.py" > "$TMP/torch.out" || { echo "run.sh: torch_bench.py failed" >&2; exit 1; }
        collect torch_ < "$TMP/torch.out"
    fi
done

# The sweep's rows at 1e5-1e6 are set by where each process's memory lands on this VM: the same
# row is 30 us in one process and 47 us in the next, on either side (RESULTS.md, session 12).
# Medians over more processes, each side's interleaved with the other's, make those rows
# steadier; the extra rounds run the sweep alone (bench/sweep.ad, torch_bench.py's BENCH_ONLY).
SWEEP_ROUNDS=${SWEEP_ROUNDS:-9}
for round in $(seq $((ROUNDS + 1)) "$SWEEP_ROUNDS"); do
    echo "== sweep round $round of $SWEEP_ROUNDS" >&2
    "$ADDSL" "$BENCH/sweep.ad" > "$TMP/sweep.out" || { echo "run.sh: sweep.ad failed" >&2; exit 1; }
    collect addsl_ < "$TMP/sweep.out"
    if [ $TORCH = 1 ]; then
        BENCH_ONLY=sweep "$PY" "$BENCH/torch_bench.py" > "$TMP/torch.out" || { echo "run.sh: torch_bench.py failed" >&2; exit 1; }
        collect torch_ < "$TMP/torch.out"
    fi
done
SWEEP_N=$(( SWEEP_ROUNDS > ROUNDS ? SWEEP_ROUNDS : ROUNDS ))

# The first run of a recorded loop against later runs in the same process (issue 13): its first
# run meets fresh pages, which land differently per process, so it runs in SWEEP_N processes too.
for round in $(seq "$SWEEP_N"); do
    "$ADDSL" "$BENCH/cold_warm.ad" > "$TMP/cold_warm.out" || { echo "run.sh: cold_warm.ad failed" >&2; exit 1; }
    collect addsl_ < "$TMP/cold_warm.out"
done

# Median and minimum wall time of command $1 over $2 runs, in seconds: hyperfine if present, else a date loop.
startup_time() {
    if command -v hyperfine > /dev/null; then
        hyperfine -N --warmup 5 --runs "$2" --export-json "$TMP/hf.json" \
            "$1" > /dev/null 2>&1 || return 1
        echo "$(sed -n 's/^ *"median": *\([0-9.eE+-]*\),*$/\1/p' "$TMP/hf.json" | head -n 1)" \
             "$(sed -n 's/^ *"min": *\([0-9.eE+-]*\),*$/\1/p' "$TMP/hf.json" | head -n 1)"
    else
        local i t0 t1
        for i in 1 2 3; do sh -c "$1" > /dev/null 2>&1; done
        for i in $(seq "$2"); do
            t0=$(date +%s%N); sh -c "$1" > /dev/null 2>&1; t1=$(date +%s%N)
            echo $((t1 - t0))
        done | sort -n | awk '{ a[NR] = $1 } END { printf "%.9f %.9f\n", a[int((NR + 1) / 2)] / 1e9, a[1] / 1e9 }'
    fi
}

echo "== start-up" >&2
read -r R[addsl_startup] R[addsl_startup_min] < <(startup_time "$ADDSL -e 1" "$STARTUP_RUNS")
if [ $TORCH = 1 ]; then
    read -r R[torch_startup] R[torch_startup_min] < <(startup_time "$PY -c 'import torch'" "$TORCH_STARTUP_RUNS")
fi
TOOL=$(command -v hyperfine > /dev/null && echo hyperfine || echo "date loop")

# row ID LABEL UNIT ADDSL_SECONDS BASE_NAME BASE_SECONDS MAX_RATIO
# The ratio is addsl time / baseline time (below 1: addsl is faster); MAX_RATIO is the
# target (- for rows given for information).
row() {
    awk -v id="$1" -v label="$2" -v unit="$3" -v a="$4" -v bn="$5" -v b="$6" -v max="$7" '
    BEGIN {
        s = (unit == "us") ? 1e6 : 1e3
        if (a == "" ) { a = "nan" }
        if (b == "" ) { printf "%-3s %-36s %10.3f %-9s %10s %8s %8s %s\n", id, label, a * s, bn, "-", "-", "-", ""; exit }
        ratio = a / b
        tgt = (max == "-") ? "-" : sprintf("<=%.2f", max)
        ok = (max == "-") ? "" : (ratio <= max ? "MET" : "MISSED")
        printf "%-3s %-36s %10.3f %-9s %10.3f %8.3f %8s %s\n", id, label, a * s, bn, b * s, ratio, tgt, ok
    }'
}

perop() { awk -v t="$1" 'BEGIN { if (t != "") printf "%.12g", t / 2 }'; }

echo
echo "addsl: $ADDSL ($("$ADDSL" --version 2>/dev/null | head -n 1))"
echo "cores: $(nproc)  openblas threads: $(med c_blas_threads)  torch threads: $(med torch_torch_threads)"
echo "load average before the run: $LOAD0  after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "times are medians ($ROUNDS rounds, row 1c $SWEEP_N, each the median of 7 runs); ratio = addsl time / baseline time (below 1: addsl faster)"
echo
printf "%-3s %-36s %10s %-9s %10s %8s %8s %s\n" "#" "benchmark (unit)" "addsl" "baseline" "base" "ratio" "target" ""
row 1  "per op, y = x*1.5 + x on [4] (us)" us "$(perop "$(med addsl_perop_iter)")" torch "$(perop "$(med torch_perop_iter)")" 0.10
row 1b "loop overhead per iteration (us)"  us "$(med addsl_empty_iter)" torch "$(med torch_empty_iter)" -
row 1c "first run of 400k recorded ops (us/op)" us "$(med addsl_coldwarm_first)" later "$(med addsl_coldwarm_later)" 1.30
row 2  "mul 1e7 f32 (ms)"                  ms "$(med addsl_mul)" C-loop "$(med c_mul_c_prealloc)" 1.25
row 2b "mul 1e7 f32 (ms)"                  ms "$(med addsl_mul)" C+malloc "$(med c_mul_c_alloc)" -
row 2c "mul 1e7 f32 (ms)"                  ms "$(med addsl_mul)" torch "$(med torch_mul)" -
row 2p "mul 1e7 f32, OMP passive (ms)"     ms "$(med addslp_mul)" C-loop "$(med c_mul_c_prealloc)" -
row 3  "tanh 1e7 f32 (ms)"                 ms "$(med addsl_tanh)" torch "$(med torch_tanh)" 0.50
row 3p "tanh 1e7 f32, OMP passive (ms)"    ms "$(med addslp_tanh)" torch "$(med torch_tanh)" -
row 4  "matmul 1000x1000 f32 (ms)"         ms "$(med addsl_matmul)" cblas "$(med c_matmul_c)" 1.111
row 4b "matmul 1000x1000 f32 (ms)"         ms "$(med addsl_matmul)" torch "$(med torch_matmul)" -
for dn in f64 f32; do
    for n in 2 4 8 16 32; do
        row "4$n" "bmm [1000,$n,$n] $dn (us)" us "$(med addsl_bmm_${n}_$dn)" torch "$(med torch_bmm_${n}_$dn)" 1.00
        row "4$n" "  same, forward + backward (us)" us "$(med addsl_bmm_${n}_${dn}_fb)" torch "$(med torch_bmm_${n}_${dn}_fb)" 1.00
    done
done
# sweeprow LABEL KEY: a sweep row; when it misses, each process's value on both sides below it.
sweeprow() {
    local line
    line=$(row "s" "$1" us "$(med addsl_$2)" torch "$(med torch_$2)" 1.00)
    echo "$line"
    case $line in
    *MISSED*)
        awk -v a="${R[addsl_$2]:-}" -v t="${R[torch_$2]:-}" 'BEGIN {
            n = split(a, x, " "); m = split(t, y, " ")
            printf "      per process (us), addsl:"; for (i = 1; i <= n; i++) printf " %.1f", x[i] * 1e6
            printf "  torch:"; for (i = 1; i <= m; i++) printf " %.1f", y[i] * 1e6
            printf "\n"
        }' ;;
    esac
}
echo
echo "sweep rows: medians over $SWEEP_N processes each side (SWEEP_ROUNDS), each the median of 7 calls"
for dn in f32 f64; do
    for op in mul exp tanh sum mean matmul; do
        for e in 3 4 5 6; do
            sweeprow "$op 1e$e $dn (us)" "sweep_${op}_1e${e}_$dn"
            sweeprow "  same, forward + backward (us)" "sweep_${op}_1e${e}_${dn}_fb"
        done
    done
done
# Cost per element of every sweep series (matmul: per multiply-add of its k x k product), so that
# a middle size slower per element than both its neighbours shows: such a row is flagged SLOW-MID.
echo
echo "sweep, ns per element (matmul: per multiply-add); SLOW-MID: a middle size above 1.2x both neighbours"
printf "%-22s %9s %9s %9s %9s\n" "series" 1e3 1e4 1e5 1e6
for dn in f32 f64; do
    for op in mul exp tanh sum mean matmul; do
        for fb in "" _fb; do
            vals=""
            for e in 3 4 5 6; do vals+="$(med addsl_sweep_${op}_1e${e}_$dn${fb}) "; done
            awk -v name="$op $dn${fb:+ f+b}" -v op="$op" -v vals="$vals" '
            BEGIN {
                n = split(vals, t, " ")
                for (i = 1; i <= 4; i++) {
                    e = 10 ^ (i + 2)
                    if (op == "matmul") { k = int(sqrt(e) + 0.5); e = k * k * k }
                    c[i] = (i <= n && t[i] != "") ? t[i] * 1e9 / e : -1
                }
                flag = ""
                for (i = 2; i <= 3; i++)
                    if (c[i] > 0 && c[i - 1] > 0 && c[i + 1] > 0 && c[i] > 1.2 * c[i - 1] && c[i] > 1.2 * c[i + 1])
                        flag = flag sprintf(" SLOW-MID(1e%d)", i + 2)
                printf "%-22s %9.3f %9.3f %9.3f %9.3f%s\n", name, c[1], c[2], c[3], c[4], flag
            }'
        done
    done
done
# The big products against the CPU's ceiling: both sides call an OpenBLAS kernel, so how near
# each runs to the peak says what a ratio of about 1 means.
if [ $PEAK = 1 ]; then
    awk -v p="$(med c_fma_peak_all)" -v n="$(med c_fma_threads)" -v a="$(med addsl_sweep_matmul_1e6_f32)" \
        -v t="$(med torch_sweep_matmul_1e6_f32)" -v c="$(med c_matmul_c)" '
    function at(s) { return (s == "" || s == 0) ? "-" : sprintf("%.1f GFLOP/s (%.0f%%)", 2e9 / s / 1e9, 2e9 / s / 1e9 / p * 100) }
    BEGIN {
        printf "\nmatmul 1000^3 f32 against the float32 FMA peak of %s threads, %.1f GFLOP/s (bench/fma_peak.c):\n", n, p
        printf "    addsl %s, torch %s, cblas_sgemm from C %s\n", at(a), at(t), at(c)
    }'
fi
echo
row 5  "start-up, -e 1 vs import torch (ms)" ms "$(med addsl_startup)" torch "$(med torch_startup)" -
row 5b "start-up, fastest run (ms)"        ms "$(med addsl_startup_min)" torch "$(med torch_startup_min)" -
awk -v t="$(med addsl_startup)" 'BEGIN { printf "    start-up target: addsl under 10 ms: %s (%s, %s and %s runs)\n", (t < 0.010 ? "MET" : "MISSED"), "'"$TOOL"'", '"$STARTUP_RUNS"', '"$TORCH_STARTUP_RUNS"' }'

# ---- the trajectory steps (issue 13: "the trajectory bench at least at PyTorch's speed"):
# traj_bench.ad's fused steps against traj_torch.py's matrix formulation, interleaved rounds ----
for round in $(seq "$ROUNDS"); do
    echo "== trajectory round $round of $ROUNDS" >&2
    "$ADDSL" "$BENCH/traj_bench.ad" > "$TMP/traj.out" || { echo "run.sh: traj_bench.ad failed" >&2; exit 1; }
    collect addsl_ < "$TMP/traj.out"
    if [ $TORCH = 1 ]; then
        BENCH_TORCH_THREADS=${BENCH_TORCH_THREADS:-$(nproc)} "$PY" "$BENCH/traj_torch.py" > "$TMP/traj_torch.out" \
            || { echo "run.sh: traj_torch.py failed" >&2; exit 1; }
        collect torch_ < "$TMP/traj_torch.out"
    fi
done
echo
echo "trajectory steps, b=1000 H=32 d=7 float32 ($ROUNDS rounds, each the median of 7x20 calls; torch: the matrix formulation)"
row t1 "acc step, forward + backward (ms)"  ms "$(med addsl_traj_acc_fwd_bwd)" torch "$(med torch_traj_acc_fwd_bwd)" 1.00
row t2 "jerk step, forward + backward (ms)" ms "$(med addsl_traj_jerk_fwd_bwd)" torch "$(med torch_traj_jerk_fwd_bwd)" 1.00
row t3 "position step central, f + b (ms)"  ms "$(med addsl_traj_pos_central_fwd_bwd)" torch "$(med torch_traj_pos_central_fwd_bwd)" 1.00
row t4 "position step backward, f + b (ms)" ms "$(med addsl_traj_pos_backward_fwd_bwd)" - "" -
row t5 "acc kernels alone, fwd + bwd (ms)"  ms "$(med addsl_traj_acc_kernels)" - "" -
row t6 "sample iteration, b=64 (ms)"        ms "$(med addsl_traj_sample_iteration)" - "" -

# ---- autograd (issue 3): autograd_*.ad against autograd_torch.py, interleaved rounds ----
AG_ROUNDS=${AG_ROUNDS:-$ROUNDS}
for round in $(seq "$AG_ROUNDS"); do
    echo "== autograd round $round of $AG_ROUNDS" >&2
    for s in chain mlp lstm gmm; do
        "$ADDSL" "$BENCH/autograd_$s.ad" > "$TMP/ag_$s.out" || { echo "run.sh: autograd_$s.ad failed" >&2; exit 1; }
        collect agaddsl_ < "$TMP/ag_$s.out"
        if [ $TORCH = 1 ]; then
            "$PY" "$BENCH/autograd_torch.py" "$s" > "$TMP/ag_torch.out" || { echo "run.sh: autograd_torch.py failed" >&2; exit 1; }
            collect agtorch_ < "$TMP/ag_torch.out"
        fi
    done
    # the MLP again with sleeping OpenMP workers on both sides (see rows 2p/3p and RESULTS.md)
    OMP_WAIT_POLICY=passive "$ADDSL" "$BENCH/autograd_mlp.ad" > "$TMP/ag_mlp.passive.out" || exit 1
    collect agaddslp_ < "$TMP/ag_mlp.passive.out"
    if [ $TORCH = 1 ]; then
        OMP_WAIT_POLICY=passive "$PY" "$BENCH/autograd_torch.py" mlp > "$TMP/ag_torch.passive.out" || exit 1
        collect agtorchp_ < "$TMP/ag_torch.passive.out"
    fi
done
AG_STARTUP='let x = tensor([1.0], requires_grad=true); backward(sum(x * 2))'
read -r R[addsl_agstartup] R[addsl_agstartup_min] < <(startup_time "$ADDSL -e '$AG_STARTUP'" "$STARTUP_RUNS")

# ratiorow ID LABEL ADDSL_NUM ADDSL_DEN TORCH_NUM TORCH_DEN MAX: the addsl and torch columns are
# ratios (num / den), the target applies to addsl's.
ratiorow() {
    awk -v id="$1" -v label="$2" -v an="$3" -v ad="$4" -v tn="$5" -v td="$6" -v max="$7" '
    BEGIN {
        a = (an == "" || ad == "") ? "nan" : an / ad
        t = (tn == "" || td == "") ? "-" : sprintf("%.3f", tn / td)
        ok = (a != "nan" && a <= max) ? "MET" : "MISSED"
        printf "%-3s %-36s %10.3f %-9s %10s %8s %8s %s\n", id, label, a, "torch", t, "-", sprintf("<=%.2f", max), ok
    }'
}

echo
echo "autograd ($AG_ROUNDS rounds; chain: median of 5 addsl / 3 torch runs, MLP: median of 50 steps, LSTM: median of 7x20 calls, GMM: median of 7x5 calls)"
echo "load average now: $(cut -d' ' -f1-3 /proc/loadavg)"
row 6  "chain 100k y*1.0001 [4], rec+bwd (ms)" ms "$(med agaddsl_chain_total)" torch "$(med agtorch_chain_total)" 0.10
row 6a "  of which recording (ms)"        ms "$(med agaddsl_chain_record)" torch "$(med agtorch_chain_record)" -
row 6b "  of which backward (ms)"         ms "$(med agaddsl_chain_backward)" torch "$(med agtorch_chain_backward)" -
row 7  "MLP step 256x784-256-10 SGD (ms)"  ms "$(med agaddsl_mlp_step)" torch "$(med agtorch_mlp_step)" 1.0
row 7p "MLP step, OMP passive both (ms)"   ms "$(med agaddslp_mlp_step)" torch "$(med agtorchp_mlp_step)" -
# The rows of one objective (LSTM, GMM): f without and with recording, f + backward, and the two ratios.
objective_rows() {  # objective_rows ID NAME KEY
    local id=$1 name=$2 k=$3
    row "${id}a" "$name f, no_grad (ms)" ms "$(med agaddsl_${k}_f_nograd)" torch "$(med agtorch_${k}_f_nograd)" -
    row "${id}b" "$name f, recording (ms)" ms "$(med agaddsl_${k}_f)" torch "$(med agtorch_${k}_f)" -
    row "${id}c" "$name f + backward (ms)" ms "$(med agaddsl_${k}_f_grad)" torch "$(med agtorch_${k}_f_grad)" -
    ratiorow "$id" "$name (f+bwd) / f no_grad (ratio)" "$(med agaddsl_${k}_f_grad)" "$(med agaddsl_${k}_f_nograd)" \
        "$(med agtorch_${k}_f_grad)" "$(med agtorch_${k}_f_nograd)" 3
    ratiorow "${id}r" "$name (f+bwd) / f recording (ratio)" "$(med agaddsl_${k}_f_grad)" "$(med agaddsl_${k}_f)" \
        "$(med agtorch_${k}_f_grad)" "$(med agtorch_${k}_f)" 3
}
objective_rows 8 LSTM lstm
objective_rows 10 GMM gmm
row 9  "start-up, -e autograd vs -e 1 (ms)" ms "$(med addsl_agstartup)" addsl-e1 "$(med addsl_startup)" -
row 9b "start-up, fastest run (ms)"       ms "$(med addsl_agstartup_min)" addsl-e1 "$(med addsl_startup_min)" -
awk -v t="$(med addsl_agstartup)" 'BEGIN { printf "    start-up with the library in use: addsl under 10 ms: %s\n", (t < 0.010 ? "MET" : "MISSED") }'

# C API (issue 4): calling a tiny script function from C, and a registered
# kernel through the registry versus the same C function called directly.
ADDSL_LIBDIR="$(dirname "$ADDSL")/.libs"
if [ -f "$ADDSL_LIBDIR/libaddsl.so" ] && $CC -O2 -std=c11 -D_POSIX_C_SOURCE=199309L -I"$BENCH/../include" \
        -o "$TMP/api_call" "$BENCH/api_call.c" -L"$ADDSL_LIBDIR" -laddsl -Wl,-rpath,"$ADDSL_LIBDIR"; then
    for r in $(seq "$ROUNDS"); do collect api_ < <("$TMP/api_call"); done
    echo
    echo "C API (median of $ROUNDS rounds, seconds per call)"
    for k in api_call_tensor api_callv_numbers script_fn_call kernel_call_kernel kernel_value_call kernel_direct_c; do
        printf '    %-22s %s\n' "$k" "$(med api_$k)"
    done
    awk -v t="$(med api_api_callv_numbers)" 'BEGIN { printf "    script function called from C under 1 us: %s\n", (t < 1e-6 ? "MET" : "MISSED") }'
else
    echo "api_call: no libaddsl.so beside $ADDSL; C API row skipped"
fi

# compile() (issue 14): compiled against eager, ADOL-C and PyTorch, each row beside its target.
echo
ADDSL="$ADDSL" ROUNDS="$ROUNDS" BENCH_PYTHON="$PY" "$BENCH/compile_rows.sh"

# export_c (issue 15): the exported gradient against ADOL-C and the compiled program, with
# callgrind counts (COUNT=0 skips them).
echo
ADDSL="$ADDSL" ROUNDS="$ROUNDS" "$BENCH/export_rows.sh"
