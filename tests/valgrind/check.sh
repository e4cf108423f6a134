# check.sh: sourced by the tests that run a program under valgrind.
# valgrind_check PROGRAM [ARG...] runs it under memcheck and prints
# "valgrind: clean" (returns 0), or the report and "FAIL: valgrind" (returns 1),
# or "valgrind: skipped (...)" (returns 0) where valgrind is not installed or
# cannot read the program: valgrind 3.19 gives up on the DWARF 5 that clang 14
# writes by default ("debuginfo reader: Possibly corrupted debuginfo file"),
# which is no fault of the program. Told apart by valgrind's own messages, so
# any compiler and any valgrind get the check where it works.
valgrind_check() {
    command -v valgrind >/dev/null 2>&1 || { echo "valgrind: skipped (not installed)"; return 0; }
    _vg_log=$(mktemp "${TMPDIR:-/tmp}/addsl-valgrind.XXXXXX") || return 1
    valgrind -q --error-exitcode=3 "$@" > /dev/null 2> "$_vg_log"
    _vg_rc=$?
    _vg_why=$(grep -m 1 -E "debuginfo reader|Serious error when reading debug info|unhandled DW_FORM|unhandled dwarf2" "$_vg_log")
    if [ -n "$_vg_why" ]; then
        echo "valgrind: skipped ($(valgrind --version) cannot read the debug info of $1: ${_vg_why#==*== })"
        _vg_rc=0
    elif [ "$_vg_rc" -ne 0 ]; then
        tail -40 "$_vg_log"
        echo "FAIL: valgrind (exit $_vg_rc)"
    else
        echo "valgrind: clean"
    fi
    rm -f "$_vg_log"
    [ "$_vg_rc" -eq 0 ]
}
