#!/bin/sh
# repl-interrupt.sh: Ctrl-C stops a running script and drops a half-typed line; Ctrl-D ends the REPL with 0.
# Usage: repl-interrupt.sh PATH-TO-ADDSL   (skips with 77 without 'script' or 'timeout')
addsl=${1:?usage: $0 PATH-TO-ADDSL}
fail=0
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
need_pty
make_tmp
ctrl_c=$(printf '\003')
ctrl_d=$(printf '\004')

# Each step waits for the output of the one before (wait_for, in lib.sh), not for
# a fixed time: a Ctrl-C typed before the loop has started would flush the loop's
# line from the terminal instead of interrupting it.
feed() {
    wait_for 'addsl [0-9.]* (Ctrl-D to exit.*)' 1
    printf 'let x = 5\n'
    printf 'print("loo" + "ping"); while true { x = x }\n'
    wait_for looping 1
    sleep 0.2
    printf '%s' "$ctrl_c"
    wait_for 'traceback (most recent call first):' 1
    printf 'x + 1\n'
    wait_for 6 1
    # A half-typed line then Ctrl-C: the line must be dropped, so 'y' stays undefined.
    printf 'let y = %s' "$ctrl_c"
    sleep 0.5
    printf 'x + 2\n'
    wait_for 7 1
    printf 'y\n'
    wait_for "<stdin>:1:1: error: name 'y' is not defined" 1
    printf '%s' "$ctrl_d"
    sleep 0.5
}

# The REPL's own exit status, through a file (repl_session, in lib.sh).
ADDSL_HISTORY=
export ADDSL_HISTORY
repl_session 30

[ "$rc" = 0 ] || { echo "FAIL: the REPL exited with status $rc after Ctrl-D"; fail=1; }
grep -qx 6 "$tmp/out" || { echo "FAIL: no '6': the REPL did not come back after Ctrl-C"; fail=1; }
grep -qx 7 "$tmp/out" || { echo "FAIL: no '7': Ctrl-C at the prompt did not drop the line"; fail=1; }
grep -q 'error: interrupted' "$tmp/out" || { echo "FAIL: no message for the interrupted script"; fail=1; }
grep -qx "<stdin>:1:1: error: name 'y' is not defined" "$tmp/out" || { echo "FAIL: the line dropped by Ctrl-C was run"; fail=1; }
[ $fail -eq 0 ] || sed 's/^/  session: /' "$tmp/out"

# Outside the REPL, SIGINT stops a script with status 1 and a message. The script
# saves a file once it runs, and only then is the signal sent, so a slow start
# cannot meet the signal before the handler is installed. (It runs in the
# foreground: a shell's background job would inherit SIGINT ignored.)
cat >"$tmp/loop.ad" <<EOF
save("$tmp/ready.npy", zeros(1))
while true {
}
EOF
(
    i=0
    while [ ! -s "$tmp/ready.npy" ] || [ ! -s "$tmp/pid" ]; do
        i=$((i + 1))
        [ $i -le 200 ] || exit 0
        sleep 0.1
    done
    kill -INT "$(cat "$tmp/pid")"
) &
timeout --foreground -s KILL 30 sh -c 'echo $$ >"$1"; exec "$2" "$3"' sh "$tmp/pid" "$addsl" "$tmp/loop.ad" \
    >/dev/null 2>"$tmp/err"
rc=$?
wait
[ $rc -eq 1 ] || { echo "FAIL: SIGINT to a script gave status $rc"; fail=1; }
[ -s "$tmp/err" ] || { echo "FAIL: SIGINT to a script printed no message"; fail=1; }
exit $fail
