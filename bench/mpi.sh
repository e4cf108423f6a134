#!/bin/sh
# mpi.sh: MPI scaling of the trajectory loop (bench/mpi_traj.ad) on 1 and 2
# ranks and the cost of a 1 MB allreduce (bench/mpi_allreduce.ad, and from C:
# bench/mpi_allreduce.c).
# Usage: [ADDSL=./addsl] [BATCH=4096] [ITERS=30] bench/mpi.sh
# One OpenMP thread per rank, so that N ranks use N cores (the 1-rank row is
# given the same single core: the efficiency is that of the split alone).
here=$(cd "$(dirname "$0")" && pwd)
addsl=${ADDSL:-./addsl}
batch=${BATCH:-4096}
iters=${ITERS:-30}
run="mpirun --oversubscribe --allow-run-as-root --bind-to none -x OMP_NUM_THREADS=1"
t1=$($run -np 1 "$addsl" "$here/mpi_traj.ad" "$batch" "$iters" | awk '{print $3}')
t2=$($run -np 2 "$addsl" "$here/mpi_traj.ad" "$batch" "$iters" | awk '{print $3}')
echo "trajectory b=$batch, $iters Adam iterations: 1 rank $t1 s, 2 ranks $t2 s"
awk -v a="$t1" -v b="$t2" 'BEGIN { printf "speed-up %.2f, scaling efficiency %.0f %%\n", a / b, 100 * a / (2 * b) }'
# On a shared machine the wall times above depend on what else runs; the CPU
# seconds each rank spends (user + system, start-up included) do not: the
# work split is efficient when 2 ranks together spend what 1 rank spends.
if [ -x /usr/bin/time ]; then
    c1=$($run -np 1 /usr/bin/time -f "cpu %U %S" "$addsl" "$here/mpi_traj.ad" "$batch" "$iters" 2>&1 >/dev/null | awk '/^cpu/ {s += $2 + $3} END {print s}')
    c2=$($run -np 2 /usr/bin/time -f "cpu %U %S" "$addsl" "$here/mpi_traj.ad" "$batch" "$iters" 2>&1 >/dev/null | awk '/^cpu/ {s += $2 + $3} END {print s}')
    awk -v a="$c1" -v b="$c2" 'BEGIN { printf "CPU seconds: 1 rank %.2f, 2 ranks %.2f together: CPU efficiency %.0f %%\n", a, b, 100 * a / b }'
fi
$run -np 2 "$addsl" "$here/mpi_allreduce.ad"
# The same 1 MB allreduce from C (mpicc), what MPI itself costs on this machine.
if command -v mpicc >/dev/null 2>&1; then
    tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
    mpicc -O2 "$here/mpi_allreduce.c" -o "$tmp/mpi_allreduce" && $run -np 2 "$tmp/mpi_allreduce"
fi
