# common.sh: sourced by the tests/mpi/*.sh tests (given the addsl binary as $1).
# Skips (77) with a message when addsl was built without MPI or mpirun is missing;
# mpi_run N SCRIPT [ARGS...] runs SCRIPT on N ranks, stdout and stderr to
# $tmp/out and $tmp/err, and sets $status. CI runs as root: root is allowed.
addsl=${1:?usage: $0 PATH-TO-ADDSL}
case $addsl in /*) ;; *) addsl=$(pwd)/$addsl ;; esac
srcdir=$(cd "${srcdir:-.}" && pwd)
here=$srcdir/tests/mpi
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0

if [ "$("$addsl" -e 'print(mpi_is_available())' 2>/dev/null)" != true ]; then
    echo "SKIP: addsl was built without MPI (configure --with-mpi; apt-get install libopenmpi-dev openmpi-bin)"
    exit 77
fi
mpirun=${MPIRUN:-mpirun}
if ! command -v "$mpirun" >/dev/null 2>&1; then
    echo "SKIP: mpirun not found (apt-get install openmpi-bin)"
    exit 77
fi
# One thread per rank: the ranks share the machine's cores.
OMP_NUM_THREADS=1; export OMP_NUM_THREADS
# In the sanitizer build, leak checking is off for the ranks: Open MPI leaves
# allocations of its plugins (unloaded at MPI_Finalize, so no stack names
# them) that no suppression can match. Memory errors are still caught, and the
# same library code runs leak-checked in the one-process tests.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"; export ASAN_OPTIONS

mpi_run() {
    np=$1; shift
    timeout 120 "$mpirun" -np "$np" --oversubscribe --allow-run-as-root "$addsl" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    status=$?
}

# expect_ok WHAT: the last mpi_run succeeded.
expect_ok() {
    if [ "$status" -ne 0 ]; then
        echo "FAIL: $1: exit status $status"
        sed 's/^/  stdout: /' "$tmp/out"
        sed 's/^/  stderr: /' "$tmp/err"
        fail=1
    fi
}

# expect_out WHAT FILE: the last mpi_run's stdout equals FILE, to the tolerance
# of FILE.tol where there is one (tests/numcmp, as tests/ad-driver compares a
# sample with its golden).
expect_out() {
    if [ -f "$2.tol" ]; then
        ${SHELL:-/bin/sh} "$srcdir/tests/numcmp" -t "$2.tol" "$2" "$tmp/out" >"$tmp/diff" 2>&1
    else
        diff "$2" "$tmp/out" >"$tmp/diff"
    fi
    if [ $? -ne 0 ]; then
        echo "FAIL: $1: stdout differs from $2"
        sed 's/^/  /' "$tmp/diff"
        fail=1
    fi
}
