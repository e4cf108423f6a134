#!/bin/sh
# trajectory.sh: samples/trajectory.ad with --compiled ends at the eager run's final cost
# (to 1e-12) and positions (byte for byte), and its step really replays a compiled program.
addsl=${1:?usage: $0 PATH-TO-ADDSL}
src=${srcdir:-.}
iters=30
tmp=$(mktemp -d "${TMPDIR:-/tmp}/addsl-traj.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# run NAME [FLAGS]: the sample as a module (so that its final cost 'c' can be printed in
# full), its output in $tmp/NAME.out, its files in $tmp/NAME/.
run() {
    name=$1; shift
    "$addsl" -e "import \"$src/samples/trajectory.ad\" as m" \
        -e 'print(f"final_cost {m.c:.17g}")' -e 'print(compiled_graph(m.step_compiled))' \
        --iters $iters --out "$tmp/$name" "$@" > "$tmp/$name.out" 2> "$tmp/$name.err" ||
        { echo "FAIL: the $name run failed"; cat "$tmp/$name.err"; exit 1; }
}
run eager
run compiled --compiled

e=$(sed -n 's/^final_cost //p' "$tmp/eager.out")
c=$(sed -n 's/^final_cost //p' "$tmp/compiled.out")
echo "final cost: eager $e, compiled $c"
awk -v e="$e" -v c="$c" 'BEGIN { d = e - c; if (d < 0) d = -d; exit !(e != "" && c != "" && d <= 1e-12) }' ||
    { echo "FAIL: final costs differ"; exit 1; }
cmp "$tmp/eager/trajectory.npy" "$tmp/compiled/trajectory.npy" || { echo "FAIL: positions differ"; exit 1; }
# The printed costs (every 50 iterations, and the last) are the same lines.
grep '^iter ' "$tmp/eager.out" > "$tmp/e.iter"
grep '^iter ' "$tmp/compiled.out" > "$tmp/c.iter"
cmp "$tmp/e.iter" "$tmp/c.iter" || { echo "FAIL: printed costs differ"; exit 1; }
# Iteration 0 traced, the other iters - 1 replayed; nothing fell back to eager.
grep -q "^signature 0: (), $((iters - 1)) replays" "$tmp/compiled.out" ||
    { echo "FAIL: the compiled step did not replay"; cat "$tmp/compiled.out"; exit 1; }
grep -q "^compiled iteration: 0 signatures cached" "$tmp/eager.out" || { echo "FAIL: the eager run called the compiled step"; exit 1; }
if grep -q "runs eagerly" "$tmp/compiled.out" "$tmp/compiled.err"; then
    echo "FAIL: the compiled step fell back to eager"; exit 1
fi
echo "PASS"
