#!/bin/sh
# repl-help.sh: the REPL on a terminal: Tab completion (names, methods, keyword arguments, file
# names), help, dir, '_', bracket errors, Ctrl-C in a multi-line entry, whole entries in history, quit.
# Usage: repl-help.sh PATH-TO-ADDSL   (skips with 77 without 'script' or 'timeout')
addsl=${1:?usage: $0 PATH-TO-ADDSL}
fail=0
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
need_pty
make_tmp
tab=$(printf '\t')
ctrl_c=$(printf '\003')
up=$(printf '\033[A')
printf '1,2\n3,4\n5,6\n' >"$tmp/vals_one.csv"
printf '1\n' >"$tmp/other.csv"

# Each step waits for the output of the one before (wait_for, in lib.sh).
# step TEXT WANT: types TEXT (a newline ends it) and waits for the line WANT.
step() {
    printf '%s\n' "$1"
    wait_for "$2" 1 -F || echo "step '$1': no line '$2'" >>"$tmp/missed"
}

feed() {
    wait_for 'addsl [0-9.]* (Ctrl-D to exit.*)' 1
    step 'let weights = 41' '> let weights = 41'
    step "weig$tab + 1" 42                                   # a global
    step 'let wt = tensor([4.0, 9.0])' '> let wt = tensor([4.0, 9.0])'
    step "wt.resh$tab(2, 1).shape" '[2, 1]'                   # a method
    step "zeros(2, dty${tab}int64).dtype" int64              # a keyword argument
    step "len(load(\"$tmp/vals_o$tab\"))" 3                  # a file name
    # Several candidates and no longer common prefix: Tab lists them, the line stays.
    printf 'ar%s' "$tab"
    wait_for '.*argsort.*' 1
    step 'ange(4).sum()' 'tensor(6)'
    step '6 * 7' '> 6 * 7'
    step '_ + 1' 43                                           # '_' is the last result
    step 'print("reshape" in dir(wt), "T" in dir(wt), "rs_sum" in dir(wt))' 'true true false'
    step 'print("rs_sum" in dir(), "weights" in dir())' 'false true'
    step 'help(relu)' 'op relu(self)'
    step 'tensor([1.0' '> tensor([1.0'
    step ')' "<stdin>:2:1: error: unexpected ')'"             # at once, not '...'
    step '1 + 1' 2
    printf 'fn h(a) {\n'
    wait_for '> fn h(a) {' 1
    printf '    return 5%s' "$ctrl_c"                         # Ctrl-C drops the whole entry
    sleep 0.5
    step 'h' "<stdin>:1:1: error: name 'h' is not defined"
    printf 'for i in range(2) {\n'
    printf '    print("tick")\n'
    step '}' tick
    printf '%s\n' "$up"                                      # the whole block comes back
    wait_for tick 4
    step 'exit' 'Use exit() or Ctrl-D to leave.'
    printf 'quit(3)\n'
    sleep 0.5
}

HOME=$tmp
export HOME
unset ADDSL_HISTORY
repl_session 60

[ "$rc" = 3 ] || { echo "FAIL: quit(3) gave status $rc"; fail=1; }
[ -s "$tmp/missed" ] && { sed 's/^/FAIL: /' "$tmp/missed"; fail=1; }
grep -q '^arange *argmax *argmin *args *argsort' "$tmp/out" || { echo "FAIL: Tab did not list the candidates in order"; fail=1; }
grep -q 'self: VJP formula' "$tmp/out" || { echo "FAIL: help(relu) does not give the derivatives"; fail=1; }
grep -q 'JVP (forward mode): auto_element_wise' "$tmp/out" || { echo "FAIL: help(relu) does not give the JVP"; fail=1; }
grep -qx 'tensor(5)' "$tmp/out" && { echo "FAIL: the entry dropped by Ctrl-C ran"; fail=1; }
[ "$(grep -cx tick "$tmp/out")" = 4 ] || { echo "FAIL: the up arrow did not bring back the whole block"; fail=1; }
# The history file holds the block as one entry (libedit writes a newline as \012).
grep -q 'for\\040i\\040in\\040range(2)\\040{\\012' "$tmp/.addsl_history" ||
    { echo "FAIL: the history file does not keep the block whole"; fail=1; }
grep -q '^}$' "$tmp/.addsl_history" && { echo "FAIL: a lone '}' in the history"; fail=1; }
[ $fail -eq 0 ] || sed 's/^/  session: /' "$tmp/out"
exit $fail
