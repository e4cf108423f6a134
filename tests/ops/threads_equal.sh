# threads_equal.sh: sourced by ew_threads.sh and simd_threads.sh. threads_equal
# ADDSL SCRIPT COUNT runs SCRIPT (which checks its own values against serial
# computations, saves its results as .npy files into the directory it is given
# and prints "ok") with 1, 2 and 3 OpenMP threads, and compares every saved
# result byte for byte across the team sizes; COUNT results are expected.
threads_equal() {
    _addsl=$1 _script=$2 _count=$3
    _tmp=$(mktemp -d "${TMPDIR:-/tmp}/threads_equal.XXXXXX") || return 1
    trap 'rm -rf "$_tmp"' EXIT
    for _t in 1 2 3; do
        mkdir "$_tmp/$_t"
        _out=$(OMP_NUM_THREADS=$_t "$_addsl" "$_script" "$_tmp/$_t") || { echo "FAIL: the script failed with $_t threads: $_out"; return 1; }
        [ "$_out" = ok ] || { echo "FAIL: with $_t threads it printed: $_out"; return 1; }
    done
    _n=$(ls "$_tmp/1" | wc -l)
    [ "$_n" -eq "$_count" ] || { echo "FAIL: $_n results saved, $_count expected"; return 1; }
    for _f in "$_tmp/1"/*.npy; do
        _b=$(basename "$_f")
        for _t in 2 3; do
            cmp -s "$_f" "$_tmp/$_t/$_b" || { echo "FAIL: $_b differs between 1 and $_t threads"; return 1; }
        done
    done
    echo "ok: $_n results equal with 1, 2 and 3 threads"
}
