#!/bin/sh
# gc_soak.sh: reference cycles a loop makes (a dict holding itself and a tensor,
# a list appended to itself, a closure kept in a list it captures) are
# collected while the loop runs: the resident memory after 4N iterations is
# what it was after N. Without the collector each iteration kept ~1 KB alive.
# The loops run in one REPL fed through a FIFO, so the same process is
# measured between them (VmRSS of /proc/PID/status).
# Usage: gc_soak.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
[ -r /proc/self/status ] || { echo "SKIP: no /proc/self/status"; exit 77; }
# Under AddressSanitizer freed blocks wait in a quarantine (256 MB by default)
# before they are reused, which reads as growth here: no quarantine for this test.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0"
export ASAN_OPTIONS
tmp=$(mktemp -d) || exit 99
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
mkfifo "$tmp/in" || exit 99
"$addsl" -i <"$tmp/in" >"$tmp/out" 2>&1 &
pid=$!
exec 3>"$tmp/in"

N=40000
SLACK_KB=16384   # 3N leaking iterations kept > 100 MB before the collector

send() { printf '%s\n' "$1" >&3; }
# Waits (up to 120 s) for the line "mark $1" on the REPL's output.
await() {
    i=0
    while ! grep -qx "mark $1" "$tmp/out"; do
        i=$((i + 1))
        if [ $i -gt 1200 ] || ! kill -0 "$pid" 2>/dev/null; then
            echo "FAIL: no 'mark $1' from the REPL"; cat "$tmp/out"; exit 1
        fi
        sleep 0.1
    done
}
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status"; }

send 'fn cycles(n) { for i in range(n) { let d = {"p": zeros(16)}; d["s"] = d; let l = [i]; append(l, l); let c = [none]; c[0] = fn() => c } }'
send "cycles($N); print(\"mark 1\")"
await 1
r1=$(rss)
send "cycles($((3 * N))); print(\"mark 2\")"
await 2
r2=$(rss)
exec 3>&-
wait "$pid" || { echo "FAIL: the REPL exited with $?"; cat "$tmp/out"; exit 1; }
pid=
echo "VmRSS after $N iterations: $r1 kB, after $((4 * N)): $r2 kB"
if [ "$r2" -gt $((r1 + SLACK_KB)) ]; then
    echo "FAIL: resident memory grew by $((r2 - r1)) kB over $((3 * N)) iterations of cycles"
    exit 1
fi
echo "PASS"
