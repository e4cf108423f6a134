#!/bin/sh
# repl.sh: the REPL on a terminal (a pty made by util-linux 'script'): state survives an error, '...' continues.
# Usage: repl.sh PATH-TO-ADDSL   (skips with 77 without 'script' or 'timeout')
addsl=${1:?usage: $0 PATH-TO-ADDSL}
fail=0
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
need_pty
make_tmp

# The lines are typed with pauses, as a person would, so each reaches the line editor.
feed() {
    sleep 1
    for line in 'let x = 2' 'x * 3' 'assert(false, "boom")' 'x' \
                'fn f(a) {' '    return a * 10' '}' 'f(x) + 1' \
                "import \"$tmp/mod.ad\" as m" 'm.k + 1' 'exit(0)'; do
        printf '%s\n' "$line"
        sleep 0.3
    done
}

printf 'let k = 42\n' >"$tmp/mod.ad"

# HOME points at the temporary folder so the user's own history is left alone.
HOME=$tmp
export HOME
unset ADDSL_HISTORY
repl_session 30

[ "$rc" = 0 ] || { echo "FAIL: the REPL exited $rc"; fail=1; }
# expect_line TEXT WHY: TEXT must be a whole line of the session.
expect_line() {
    grep -qx -- "$1" "$tmp/out" || { echo "FAIL: no line '$1' ($2)"; fail=1; }
}
expect_line 6 "x * 3"
expect_line 2 "x after an error: the state is kept"
expect_line 21 "f(x) + 1 after a multi-line definition"
expect_line 43 "a module imported in the REPL"
grep -q boom "$tmp/out" || { echo "FAIL: the error message was not shown"; fail=1; }
grep -q '^> ' "$tmp/out" || { echo "FAIL: no '> ' prompt"; fail=1; }
grep -q '^\.\.\. ' "$tmp/out" || { echo "FAIL: no '... ' continuation prompt"; fail=1; }
grep -q 'x \* 3' "$tmp/.addsl_history" 2>/dev/null || grep -q 'x\\040\*\\0403' "$tmp/.addsl_history" 2>/dev/null ||
    { echo "FAIL: ~/.addsl_history does not hold the typed lines"; fail=1; }
[ $fail -eq 0 ] || sed 's/^/  session: /' "$tmp/out"
exit $fail
