#!/bin/sh
# grad.sh: gradients (reverse, forward, second order) through allreduce,
# broadcast, shard and all_gather on 2 ranks against finite differences.
. "${srcdir:-.}/tests/mpi/common.sh"
mpi_run 2 "$here/scripts/grad.ad"
expect_ok grad.ad
echo ok > "$tmp/want"
expect_out grad.ad "$tmp/want"
exit $fail
