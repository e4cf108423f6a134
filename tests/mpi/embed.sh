#!/bin/sh
# embed.sh: a host that runs MPI passes its communicator through addsl_config
# (tests/mpi/host.c, built with MPI only) on 4 ranks split in two halves.
. "${srcdir:-.}/tests/mpi/common.sh"
host=$(dirname "$addsl")/tests/mpi/host
[ -x "$host" ] || { echo "SKIP: tests/mpi/host was not built"; exit 77; }
timeout 120 "$mpirun" -np 4 --oversubscribe --allow-run-as-root "$host" >"$tmp/out" 2>"$tmp/err" </dev/null
status=$?
expect_ok "host on 4 ranks"
sort "$tmp/out" > "$tmp/sorted"
printf '0 2\n0 2\n1 2\n1 2\nok\n' > "$tmp/want"
cp "$tmp/sorted" "$tmp/out"
expect_out "host on 4 ranks" "$tmp/want"
exit $fail
