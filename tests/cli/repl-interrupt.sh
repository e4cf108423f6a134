#!/bin/sh
# repl-interrupt.sh: Ctrl-C stops a running script and drops a half-typed line; Ctrl-D ends the REPL with 0.
# Usage: repl-interrupt.sh PATH-TO-ADDSL   (skips with 77 without 'script' or 'timeout')
addsl=${1:?usage: $0 PATH-TO-ADDSL}
command -v script >/dev/null 2>&1 || { echo "SKIP: no 'script' command"; exit 77; }
command -v timeout >/dev/null 2>&1 || { echo "SKIP: no 'timeout' command"; exit 77; }
script -qec true /dev/null </dev/null >/dev/null 2>&1 || { echo "SKIP: 'script' cannot make a pty here"; exit 77; }
fail=0
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
ctrl_c=$(printf '\003')
ctrl_d=$(printf '\004')

feed() {
    sleep 1
    printf 'let x = 5\n'; sleep 0.3
    printf 'while true { x = x }\n'; sleep 1
    printf '%s' "$ctrl_c"; sleep 0.5
    printf 'x + 1\n'; sleep 0.3
    printf 'let y = %s' "$ctrl_c"; sleep 0.3
    printf 'x + 2\n'; sleep 0.3
    printf '%s' "$ctrl_d"; sleep 0.5
}

ADDSL_BIN=$addsl TERM=dumb ADDSL_HISTORY=
export ADDSL_BIN TERM ADDSL_HISTORY
feed | timeout 30 script -qec '"$ADDSL_BIN"' /dev/null >"$tmp/raw" 2>&1
rc=$?
tr -d '\r' <"$tmp/raw" >"$tmp/out"

[ $rc -eq 0 ] || { echo "FAIL: the REPL exited $rc after Ctrl-D"; fail=1; }
grep -qx 6 "$tmp/out" || { echo "FAIL: no '6': the REPL did not come back after Ctrl-C"; fail=1; }
grep -qx 7 "$tmp/out" || { echo "FAIL: no '7': Ctrl-C at the prompt did not drop the line"; fail=1; }
grep -qi 'interrupt' "$tmp/out" || { echo "FAIL: no message for the interrupted script"; fail=1; }
[ $fail -eq 0 ] || sed 's/^/  session: /' "$tmp/out"

# Outside the REPL, SIGINT stops a script with status 1 and a message. (--foreground:
# plain timeout also signals its whole process group, and that second SIGINT
# would kill the script by design before the VM reaches its next poll.)
printf 'while true {\n}\n' >"$tmp/loop.ad"
timeout --foreground --preserve-status -s INT 1 "$addsl" "$tmp/loop.ad" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || { echo "FAIL: SIGINT to a script gave status $rc"; fail=1; }
[ -s "$tmp/err" ] || { echo "FAIL: SIGINT to a script printed no message"; fail=1; }
exit $fail
