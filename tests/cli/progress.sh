#!/bin/sh
# progress.sh: progress() draws its bar (count, percent, rate, ETA) on stderr when
# that is a terminal, ends the line when the loop ends or breaks, and writes
# nothing to a pipe unless disable=false. Usage: progress.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
fail=0
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
check() {   # check WHAT FILE PATTERN: the file holds the (extended) pattern
    if grep -Eq -- "$3" "$2"; then echo "ok: $1"; else echo "FAIL: $1: no /$3/ in:"; cat -v "$2"; fail=1; fi
}
cat > "$tmp/p.ad" <<'AD'
let s = 0
for x in progress(range(300), desc="steps") { s = s + x }
print(s)
for x in progress(range(3), desc="talk") { print(f"line {x}") }
for x in progress([1, 2, 3, 4]) { if x == 2 { break } }
print("done")
AD

# A pipe: stdout as always, stderr empty.
"$addsl" "$tmp/p.ad" >"$tmp/out" 2>"$tmp/err"
check "pipe: stdout" "$tmp/out" '^44850$'
check "pipe: print inside the loop" "$tmp/out" '^line 2$'
if [ -s "$tmp/err" ]; then echo "FAIL: pipe: stderr not empty:"; cat -v "$tmp/err"; fail=1; else echo "ok: pipe: quiet"; fi

# disable=false draws on a pipe too (a log file that wants the bar).
printf 'for x in progress(range(5), disable=false) { }\n' > "$tmp/forced.ad"
"$addsl" "$tmp/forced.ad" >/dev/null 2>"$tmp/err"
check "forced: final bar" "$tmp/err" '100%\|.*\| 5/5 \[[0-9:]+<00:00, [0-9.]+it/s\]'

# A terminal: script(1) gives the command a pty for stdout and stderr alike.
if ! command -v script >/dev/null 2>&1 || ! script -qec true /dev/null </dev/null >/dev/null 2>&1; then
    echo "SKIP (terminal part): 'script' cannot make a pty here"
    exit $fail
fi
COLUMNS=100 LC_ALL=C script -qec "\"$addsl\" \"$tmp/p.ad\"" /dev/null </dev/null >"$tmp/tty" 2>&1
tr '\r' '\n' <"$tmp/tty" >"$tmp/lines"
check "tty: first bar" "$tmp/lines" '^steps:   0%\|  +\| 0/300 \[00:00<\?, \?it/s\]'
check "tty: last bar" "$tmp/lines" '^steps: 100%\|#+\| 300/300 \[[0-9:]+<00:00, [0-9.]+it/s\]'
check "tty: break ends the line" "$tmp/lines" '^ 25%\|#*  +\| 1/4 '
check "tty: stdout after the bar" "$tmp/lines" '^44850$'
# Text printed inside the loop wipes the bar first, so it starts its own line.
check "tty: print inside the loop" "$tmp/lines" '^(.\[K)?line 1$'
check "tty: stdout after the break" "$tmp/lines" '^done$'
# The bar fits the terminal (one cell short of COLUMNS=100; the pty's own size wins when it has one).
awk '{ sub(/\033\[K/, ""); if (length($0) > 100) { print "too long: " $0; bad = 1 } } END { exit bad }' "$tmp/lines" || fail=1
exit $fail
