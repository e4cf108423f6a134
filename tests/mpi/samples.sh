#!/bin/sh
# samples.sh: the trajectory sample unchanged on 2 ranks (each rank its shard
# of the batch, the global cost printed: the one-rank golden, the same
# trajectory.npy), and the data-parallel MLP's losses on 2 and 3 ranks equal
# to the one-rank run's.
. "${srcdir:-.}/tests/mpi/common.sh"
mkdir "$tmp/one" "$tmp/two"
(cd "$tmp/one" && "$addsl" "$srcdir/samples/trajectory.ad" >"$tmp/traj1" 2>&1) || { echo "FAIL: trajectory.ad on one rank"; cat "$tmp/traj1"; fail=1; }
cd "$tmp/two" || exit 99
mpi_run 2 "$srcdir/samples/trajectory.ad"
expect_ok "trajectory.ad on 2 ranks"
expect_out "trajectory.ad on 2 ranks (the one-rank output)" "$tmp/traj1"
cmp -s "$tmp/one/out/trajectory.npy" "$tmp/two/out/trajectory.npy" || { echo "FAIL: trajectory.npy differs between 1 and 2 ranks"; fail=1; }
for np in 2 3; do
    mpi_run "$np" "$srcdir/samples/mpi_mlp.ad"
    expect_ok "mpi_mlp.ad on $np ranks"
    expect_out "mpi_mlp.ad on $np ranks" "$srcdir/samples/mpi_mlp.out"
done
exit $fail
