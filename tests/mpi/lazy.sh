#!/bin/sh
# lazy.sh: libmpi is loaded only when a state needs MPI (docs/mpi.md,
# "Building with MPI"): neither addsl nor libaddsl.so links it, a plain run
# never loads it, and a missing or broken MPI module gives a clear error at
# the call under mpirun while a plain run still acts as one rank.
. "${srcdir:-.}/tests/mpi/common.sh"
bindir=$(dirname "$addsl")

# Linked: no libmpi in the command nor in the library (when ldd is there).
if command -v ldd >/dev/null 2>&1; then
    for f in "$addsl" "$bindir/.libs/libaddsl.so"; do
        [ -f "$f" ] || continue
        if ldd "$f" | grep -q 'libmpi'; then echo "FAIL: $f links libmpi"; ldd "$f" | sed 's/^/  /'; fail=1; fi
    done
fi

# Loaded: glibc's loader names every library it opens under LD_DEBUG=files.
# mpi_is_available() opens the module, which shows the check can see a load.
loads_libmpi() {
    LD_DEBUG=files "$addsl" -e "$1" 2>&1 >/dev/null | grep -q 'file=libmpi'
}
if loads_libmpi 'print(mpi_is_available())'; then
    if loads_libmpi '1'; then echo "FAIL: addsl -e 1 loads libmpi"; fail=1; fi
    if loads_libmpi 'print(mpi_rank(), mpi_size(), allreduce(tensor([1.0])), all_gather(tensor([2.0])))'; then
        echo "FAIL: the MPI builtins of a plain run (one rank) load libmpi"; fail=1
    fi
else
    echo "note: LD_DEBUG shows no libmpi load (not glibc?): the load checks are skipped"
fi

# A plain run without the module: one rank, and mpi_is_available() says so.
got=$(ADDSL_MPI_MODULE=/nonexistent/addsl_mpi.so "$addsl" -e \
    'print(mpi_is_available(), mpi_rank(), mpi_size(), allreduce(tensor([1.5, 2.5])).tolist(), mpi_offset(7))' 2>&1)
[ "$got" = "false 0 1 [1.5, 2.5] 0" ] || { echo "FAIL: plain run without the module: got '$got'"; fail=1; }

# Under mpirun, a missing module: the MPI call fails at its line and column,
# saying what failed and what to install.
printf 'let a = 1\nprint(mpi_size())\n' > "$tmp/size.ad"
ADDSL_MPI_MODULE=/nonexistent/addsl_mpi.so; export ADDSL_MPI_MODULE
mpi_run 2 "$tmp/size.ad"
if [ "$status" -eq 0 ] || [ "$status" -eq 124 ]; then echo "FAIL: missing module: exit status $status"; fail=1; fi
grep -q "size.ad:2:7: error: MPI is not available: cannot load ADDSL_MPI_MODULE=/nonexistent/addsl_mpi.so: .*apt-get install libopenmpi3" "$tmp/err" ||
    { echo "FAIL: missing module: no error at 2:7 naming the module and the package"; sed 's/^/  stderr: /' "$tmp/err"; fail=1; }

# A file that is not a shared object: the loader's reason.
echo 'not a library' > "$tmp/addsl_mpi.so"
ADDSL_MPI_MODULE=$tmp/addsl_mpi.so
mpi_run 2 -e 'barrier()'
if [ "$status" -eq 0 ] || [ "$status" -eq 124 ]; then echo "FAIL: broken module: exit status $status"; fail=1; fi
grep -q "<string>:1:.*error: MPI is not available: cannot load ADDSL_MPI_MODULE=$tmp/addsl_mpi.so: .*" "$tmp/err" ||
    { echo "FAIL: broken module: no error naming it"; sed 's/^/  stderr: /' "$tmp/err"; fail=1; }
unset ADDSL_MPI_MODULE

# With the module, a script that calls no MPI builtin keeps today's launcher
# behaviour: MPI is set up at start, so print() runs on rank 0 only.
mpi_run 2 -e 'print(1 + 1)'
expect_ok "no MPI call on 2 ranks"
printf '2\n' > "$tmp/want"
expect_out "no MPI call on 2 ranks" "$tmp/want"
exit $fail
