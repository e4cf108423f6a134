#!/bin/sh
# exit-status.sh: the command's exit codes (0 success, 1 error, 2 bad usage, exit(code)).
# Usage: exit-status.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
fail=0
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

# expect WANT-STATUS ARGS...: runs addsl with ARGS and compares its exit status.
expect() {
    want=$1; shift
    "$addsl" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAIL: addsl $* exited $got, expected $want"
        sed 's/^/  stderr: /' "$tmp/err"
        fail=1
    fi
}

expect 0 -e 'let x = 1'
expect 0 -e 'print(1 + 2)'
expect 1 -e 'let = 3'
expect 1 -e 'assert(false, "boom")'
expect 1 -e 'undefined_name_xyz + 1'
expect 3 -e 'exit(3)'
expect 0 -e 'exit(0)'
expect 2 --no-such-option
expect 2 -e
expect 2 "$tmp/missing.ad"
expect 2 --memory-limit
expect 2 --memory-limit 12Q -e '1'
expect 2 --max-depth 0 -e '1'

# A compile error runs nothing, not even the statements before it.
printf 'print("ran")\nlet = 3\n' >"$tmp/bad.ad"
expect 1 "$tmp/bad.ad"
if [ -s "$tmp/out" ]; then
    echo "FAIL: a file with a syntax error printed: $(cat "$tmp/out")"
    fail=1
fi

# Success output goes to stdout, nothing to stderr.
"$addsl" -e 'print(1 + 2)' >"$tmp/out" 2>"$tmp/err"
if [ "$(cat "$tmp/out")" != 3 ] || [ -s "$tmp/err" ]; then
    echo "FAIL: print(1 + 2) gave stdout '$(cat "$tmp/out")' stderr '$(cat "$tmp/err")'"
    fail=1
fi
exit $fail
