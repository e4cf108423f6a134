#!/bin/sh
# cmdline.sh: repeated -e, -i after a script or -e, -u, and failed writes to standard output.
# Usage: cmdline.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
fail=0
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
make_tmp

# Repeated -e: in order, in one state; the first error stops the rest.
check "two -e share names" 1 "$("$addsl" -e 'let a = 1' -e 'print(a)' 2>&1)"
check "three -e in order" "$(printf '1\n2\n3')" "$("$addsl" -e 'print(1)' -e 'print(2)' -e 'print(3)' 2>&1)"
check "words after the last -e are args" '["x", "-e"]' "$("$addsl" -e 'let n = 2' -e 'print(args)' x -e 2>&1)"
out=$("$addsl" -e 'print("one")' -e 'assert(false, "boom")' -e 'print("three")' 2>"$tmp/err")
rc=$?
check "an error stops the -e after it" one "$out"
check "status after an -e error" 1 "$rc"
grep -q '^<string>:1:.*boom' "$tmp/err" || { echo "FAIL: the failing -e is not named <string>: $(cat "$tmp/err")"; fail=1; }
check "exit() in an -e ends the run" 4 "$("$addsl" -e 'exit(4)' -e 'print(9)' >/dev/null 2>&1; echo $?)"
"$addsl" -e 'print(1)' -e >/dev/null 2>"$tmp/err"
check "a trailing -e without code is bad usage" 2 "$?"

# -i: the REPL follows, with the script's names (here reading the piped lines).
check "-i after -e" "$(printf '6\n10')" "$(printf 'print(a + 1)\na * 2\n' | "$addsl" -e 'let a = 5' -i 2>&1 | grep -v '^addsl ')"
printf 'let k = 40\nfn twice(v) {\n    return v * 2\n}\n' >"$tmp/lib.ad"
check "-i after a file" 82 "$(printf 'twice(k) + 2\n' | "$addsl" -i "$tmp/lib.ad" 2>&1 | grep -v '^addsl ')"
check "-i after a failing script" 7 "$(printf 'k + 7\n' | "$addsl" -i -e 'let k = 0' -e 'assert(false)' 2>/dev/null | grep -v '^addsl ')"
check "-i: exit() in the REPL gives its code" 5 "$(printf 'exit(5)\n' | "$addsl" -e 'let k = 0' -i >/dev/null 2>&1; echo $?)"
check "-i: exit() in the script skips the REPL" "" "$(printf 'print(8)\n' | "$addsl" -i -e 'exit(0)' 2>&1)"

# -u: a line reaches a pipe while the script still runs. The reader notes the
# time it read the first line; the script then keeps running for 3 s more.
for mode in -u ""; do
    rm -f "$tmp/first" "$tmp/end"
    # shellcheck disable=SC2086
    "$addsl" $mode -e 'print("hello"); let t = clock(); while clock() - t < 3 { }' |
        { read -r line; date +%s >"$tmp/first"; cat >/dev/null; }
    date +%s >"$tmp/end"
    gap=$(( $(cat "$tmp/end") - $(cat "$tmp/first") ))
    if [ "$mode" = -u ]; then
        [ "$gap" -ge 2 ] || { echo "FAIL: with -u the line came $gap s before the end (not at once)"; fail=1; }
    else
        [ "$gap" -le 1 ] || { echo "FAIL: without -u the pipe got the line before the end ($gap s): buffering not in effect"; fail=1; }
    fi
done

# A write to standard output that fails exits 1 with a message, also when the
# output is small enough to wait in the buffer until the end.
if [ -w /dev/full ]; then
    "$addsl" -e 'print(1)' >/dev/full 2>"$tmp/err"
    check "print to /dev/full" 1 "$?"
    grep -q 'cannot write to standard output' "$tmp/err" || { echo "FAIL: no message for /dev/full: $(cat "$tmp/err")"; fail=1; }
    timeout 30 "$addsl" -e 'let i = 0; while true { print(i); i += 1 }' >/dev/full 2>"$tmp/err"
    check "an endless printer stops on /dev/full" 1 "$?"
    check "one message for /dev/full" 1 "$(grep -c . "$tmp/err")"
    "$addsl" --help >/dev/full 2>/dev/null
    check "--help to /dev/full" 1 "$?"
    "$addsl" -u -e 'print(1)' >/dev/full 2>/dev/null
    check "-u print to /dev/full" 1 "$?"
fi
"$addsl" -e 'print(1)' >&- 2>"$tmp/err"
check "print with stdout closed" 1 "$?"
grep -q 'cannot write to standard output' "$tmp/err" || { echo "FAIL: no message for a closed stdout: $(cat "$tmp/err")"; fail=1; }
# With stdout closed, a file the script saves must not receive the output.
"$addsl" -e "save(\"$tmp/a.npy\", zeros(2)); print(\"leak\")" >&- 2>/dev/null
grep -q leak "$tmp/a.npy" 2>/dev/null && { echo "FAIL: output went into a file opened on descriptor 1"; fail=1; }
check "a script that prints nothing, stdout closed" 0 "$("$addsl" -e 'let a = 1' >&- 2>/dev/null; echo $?)"
exit $fail
