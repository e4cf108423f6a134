#!/bin/sh
# collectives.sh: mpi_rank, mpi_size, allreduce, broadcast, barrier, shard,
# all_gather and print on 2 ranks (tests/mpi/scripts/collectives.ad), and the errors of
# collectives called wrongly: every rank reports the same error, none hangs.
. "${srcdir:-.}/tests/mpi/common.sh"

mpi_run 2 "$here/scripts/collectives.ad"
expect_ok collectives.ad
printf 'once\nrank 0\nrank 1\n' > "$tmp/want"
sort "$tmp/out" > "$tmp/out.sorted" && mv "$tmp/out.sorted" "$tmp/out"
sort "$tmp/want" > "$tmp/want.sorted"
expect_out "print: rank 0 alone unless all_ranks=true" "$tmp/want.sorted"

# expect_error CODE TEXT: CODE fails with TEXT, in an error naming its rank
# (the first rank to fail stops the other, which may not get to print).
expect_error() {
    mpi_run 2 -e "$1"
    if [ "$status" -eq 0 ] || [ "$status" -eq 124 ]; then
        echo "FAIL: $1: exit status $status (expected an error, not a hang)"
        fail=1
    fi
    if ! grep -E "error: rank [01] of 2: " "$tmp/err" | grep -qF -- "$2"; then
        echo "FAIL: $1: no rank reported: $2"
        sed 's/^/  stderr: /' "$tmp/err"
        fail=1
    fi
}
expect_error 'allreduce(tensor([1.0]), op="prod")' 'allreduce: op must be "sum", "max", "min" or "mean", got "prod"'
expect_error 'allreduce(tensor([1, 2]), op="mean")' 'allreduce: op="mean" needs a floating point tensor, got int64'
expect_error 'allreduce(tensor([true]))' 'allreduce: a bool tensor cannot be reduced or sent'
expect_error 'allreduce(zeros(mpi_rank() + 1))' 'allreduce: the ranks passed tensors of different sizes or dtypes, or different ops'
expect_error 'allreduce(zeros(2), op=["sum", "max"][mpi_rank()])' 'different ops'
expect_error 'broadcast(tensor([1.0]), root=2)' 'broadcast: root 2 is not a rank (mpi_size() is 2)'
expect_error 'broadcast(tensor([1.0]), root=mpi_rank())' 'different roots'
expect_error 'all_gather(zeros(2, mpi_rank() + 1), dim=0)' 'all_gather: rank 1'"'"'s tensor differs from rank 0'"'"'s in dtype'
expect_error 'all_gather(tensor(1.0))' 'all_gather: a 0-d tensor has no dimension to split or join'
expect_error 'all_gather(zeros(2, 2), dim=mpi_rank())' 'all_gather: the ranks passed tensors of different dtypes or numbers of dimensions, or different dims'
expect_error 'if mpi_rank() == 0 { allreduce(zeros(2)) } else { broadcast(zeros(2)) }' 'the ranks are not all in the same collective (one is in allreduce, another in broadcast)'
expect_error 'if mpi_rank() == 0 { barrier() } else { all_gather(zeros(2)) }' 'the ranks are not all in the same collective (one is in all_gather, another in barrier)'
expect_error 'shard(tensor(1.0))' 'shard: a 0-d tensor has no dimension to split'
exit $fail
