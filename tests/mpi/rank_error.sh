#!/bin/sh
# rank_error.sh: one rank raises an error while the other waits in a
# collective: the job ends within seconds, non-zero, naming the failing rank.
. "${srcdir:-.}/tests/mpi/common.sh"
cat > "$tmp/fail.ad" <<'AD'
let t = tensor([1.0])
if mpi_rank() == 1 { assert(false, "rank one gives up") }
allreduce(t)
barrier()
print("not reached")
AD
start=$(date +%s)
mpi_run 2 "$tmp/fail.ad"
took=$(( $(date +%s) - start ))
if [ "$status" -eq 0 ] || [ "$status" -eq 124 ]; then
    echo "FAIL: exit status $status (expected non-zero, not a hang)"
    fail=1
fi
if [ "$took" -gt 30 ]; then
    echo "FAIL: the job took $took s to end"
    fail=1
fi
grep -q "error: rank 1 of 2: assertion failed: rank one gives up" "$tmp/err" || { echo "FAIL: the error does not name rank 1"; fail=1; }
grep -q "addsl: rank 1 of 2 failed (exit status 1): stopping the other ranks" "$tmp/err" || { echo "FAIL: no message about stopping the others"; fail=1; }
if grep -q "not reached" "$tmp/out"; then echo "FAIL: rank 0 went on"; fail=1; fi
[ "$fail" -eq 0 ] || sed 's/^/  stderr: /' "$tmp/err"

# exit(3) on one rank: the same, with its status.
mpi_run 2 -e 'if mpi_rank() == 0 { exit(3) }; barrier()'
if [ "$status" -eq 0 ] || [ "$status" -eq 124 ]; then
    echo "FAIL: exit(3) on rank 0: exit status $status"
    fail=1
fi
exit $fail
