#!/usr/bin/env bash
# ew_pages.sh: bench/ew_pages.ad with big blocks in 2 MB pages (the default) and in 4 KB pages
# (ADDSL_NO_HUGE_PAGES=1), beside PyTorch, in ROUNDS interleaved rounds (issue 13).
# Prints per series the median over rounds of each run's best and median time, in us, with
# the range of the bests. Usage: ADDSL=./addsl ROUNDS=5 bench/ew_pages.sh
set -u
BENCH=$(cd "$(dirname "$0")" && pwd)
ADDSL=${ADDSL:-./addsl}
PY=${BENCH_PYTHON:-/usr/bin/python3}
ROUNDS=${ROUNDS:-5}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ew_pages.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT

TORCH=$(cat <<'PYEOF'
import statistics, time, torch
torch.set_num_threads(2)
torch.manual_seed(0)
def series(name, f, reps=300):
    f(); ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
    print(f"{name}_min {min(ts)}"); print(f"{name}_med {statistics.median(ts)}")
for dt, dn in ((torch.float32, "f32"), (torch.float64, "f64")):
    for n in (100000, 1000000):
        a = torch.randn(n, dtype=dt); b = torch.randn(n, dtype=dt)
        series(f"ewp_mul_{n}_{dn}", lambda: a * b)
        series(f"ewp_add_{n}_{dn}", lambda: a + b)
        series(f"ewp_exp_{n}_{dn}", lambda: torch.exp(a))
        series(f"ewp_tanh_{n}_{dn}", lambda: torch.tanh(a))
        c = [a * b]
        def keep(): c[0] = a * b
        series(f"ewp_mulkeep_{n}_{dn}", keep)
PYEOF
)
HAVE_TORCH=0
"$PY" -c 'import torch' 2>/dev/null && HAVE_TORCH=1
for r in $(seq "$ROUNDS"); do
    echo "== round $r of $ROUNDS" >&2
    "$ADDSL" "$BENCH/ew_pages.ad" | sed 's/^/huge /' >> "$TMP/all" || exit 1
    ADDSL_NO_HUGE_PAGES=1 "$ADDSL" "$BENCH/ew_pages.ad" | sed 's/^/small /' >> "$TMP/all" || exit 1
    [ $HAVE_TORCH = 1 ] && { "$PY" -c "$TORCH" | sed 's/^/torch /' >> "$TMP/all" || exit 1; }
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); medians over $ROUNDS rounds, us"
awk '
{ v[$1 " " $2] = v[$1 " " $2] " " $3; if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 } }
function med(s,   a, k, i, j, t) { k = split(s, a, " "); for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j] < a[j-1]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return k ? a[int((k + 1) / 2)] * 1e6 : -1 }
function rng(s,   a, k, i, lo, hi) { k = split(s, a, " "); lo = hi = a[1]; for (i = 2; i <= k; i++) { if (a[i] < lo) lo = a[i]; if (a[i] > hi) hi = a[i] }
    return k ? sprintf("%.1f-%.1f", lo * 1e6, hi * 1e6) : "-" }
END {
    printf "%-28s %9s %9s %9s  %-13s %-13s %-13s\n", "series", "2MB", "4KB", "torch", "2MB range", "4KB range", "torch range"
    for (i = 1; i <= n; i++) {
        s = order[i]
        printf "%-28s %9.1f %9.1f %9.1f  %-13s %-13s %-13s\n", s, med(v["huge " s]), med(v["small " s]), med(v["torch " s]),
            rng(v["huge " s]), rng(v["small " s]), rng(v["torch " s])
    }
}' "$TMP/all"
