#!/bin/sh
# uneven.sh: uneven shards and all_gather on 2 and 3 ranks (tests/mpi/scripts/uneven.ad).
. "${srcdir:-.}/tests/mpi/common.sh"
echo ok > "$tmp/want"
for np in 2 3; do
    mpi_run "$np" "$here/scripts/uneven.ad"
    expect_ok "uneven.ad on $np ranks"
    expect_out "uneven.ad on $np ranks" "$tmp/want"
done
exit $fail
