# lib.sh: sourced by the tests/cli scripts that compare outputs or drive the REPL
# on a terminal, so that each of them checks, skips and waits by the same rules.
# Usage, after addsl= and fail=0:  . "$(dirname "$0")/lib.sh"
# addsl, fail, tmp and rc are the sourcing script's variables:
# shellcheck shell=sh disable=SC2034,SC2154

# make_tmp: $tmp, a folder removed when the script exits.
make_tmp() {
    tmp=$(mktemp -d) || exit 99
    trap 'rm -rf "$tmp"' EXIT
}

# check NAME WANT GOT: compares one output.
check() {
    if [ "$3" != "$2" ]; then
        echo "FAIL: $1: expected '$2', got '$3'"
        fail=1
    fi
}

# numcmp ARGS: tests/numcmp, the comparison to a stated tolerance that the .ad
# tests share (the text and the integers exactly, other numbers to TOL); the
# sourcing script is one folder below tests/.
numcmp_path=$(cd "$(dirname "$0")/.." && pwd)/numcmp
numcmp() { ${SHELL:-/bin/sh} "$numcmp_path" "$@"; }

# check_near NAME TOL WANT GOT: compares one output whose numbers may move on a
# correct machine by TOL ("rtol=R", "atol=A" or both), as "# expect~" lines do.
check_near() {
    why=$(numcmp -T "$2" -s "$3" "$4" 2>&1) || {
        echo "FAIL: $1 (to $2):"
        printf '%s\n' "$why" | sed 's/^/  /'
        fail=1
    }
}

# check_golden NAME GOLDEN FILE: FILE equals the golden file GOLDEN, byte for
# byte or, where GOLDEN.tol states a tolerance, as tests/ad-driver compares a
# sample's .out with its .out.tol.
check_golden() {
    if [ -f "$2.tol" ]; then
        why=$(numcmp -t "$2.tol" "$2" "$3" 2>&1) || {
            echo "FAIL: $1 (to the tolerance of $2.tol):"
            printf '%s\n' "$why" | sed 's/^/  /'
            fail=1
        }
    elif ! cmp -s "$2" "$3"; then
        echo "FAIL: $1: differs from $2:"
        diff "$2" "$3" | sed 's/^/  /'
        fail=1
    fi
}

# need_pty: skips the test (77) where util-linux 'script' cannot give the REPL a
# terminal or 'timeout' cannot bound the session.
need_pty() {
    command -v script >/dev/null 2>&1 || { echo "SKIP: no 'script' command"; exit 77; }
    command -v timeout >/dev/null 2>&1 || { echo "SKIP: no 'timeout' command"; exit 77; }
    script -qec true /dev/null </dev/null >/dev/null 2>&1 || { echo "SKIP: 'script' cannot make a pty here"; exit 77; }
}

# seen PATTERN [-F]: how many lines of the session so far match PATTERN (a fixed
# string with -F; unquoted below, as it may be absent).
# shellcheck disable=SC2086
seen() {
    tr -d '\r' 2>/dev/null <"$tmp/raw" | grep -c -x $2 -- "$1"
}

# wait_for LINE COUNT [-F]: until LINE appears COUNT times (20 s at most). A step
# that waits for the output of the one before cannot be reordered by a loaded
# machine, as a fixed pause can.
# shellcheck disable=SC2086
wait_for() {
    i=0
    while [ "$(seen "$1" $3)" -lt "$2" ]; do
        i=$((i + 1))
        [ $i -le 200 ] || return 1
        sleep 0.1
    done
}

# repl_session SECONDS: pipes the output of the caller's feed() into the REPL on a
# pty, for SECONDS at most; the session goes to $tmp/raw and, without carriage
# returns, to $tmp/out; $rc is the REPL's own exit status ('none' if it did not
# end). The status goes through a file: script(1) from util-linux 2.39 reports 130
# after any Ctrl-C typed into the session, whatever the child's status. The
# wrapper's no-op trap keeps the shell alive through that Ctrl-C (a trap, unlike
# an ignored signal, is not inherited by the REPL) until the REPL has exited.
# shellcheck disable=SC2016
repl_session() {
    ADDSL_BIN=$addsl TERM=dumb SHELL=/bin/sh STATUS_FILE=$tmp/status
    export ADDSL_BIN TERM SHELL STATUS_FILE
    feed | timeout "$1" script -qec 'trap : INT; "$ADDSL_BIN"; echo $? >"$STATUS_FILE"' /dev/null >"$tmp/raw" 2>&1
    rc=$(cat "$tmp/status" 2>/dev/null || echo none)
    tr -d '\r' <"$tmp/raw" >"$tmp/out"
}
