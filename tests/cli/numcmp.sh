#!/bin/sh
# numcmp.sh: the tolerant comparison (tests/numcmp) that "# expect~" lines,
# .out.tol goldens and lib.sh's check_near share: it passes a number within
# its stated tolerance and fails one outside it, a changed word, a changed
# integer, a missing or extra number or line, and an exact line next to a
# tolerant one; tests/ad-driver reports each fixture of tests/fixtures/numcmp
# as its first line says.
addsl=$1
fail=0
. "$(dirname "$0")/lib.sh"
make_tmp
src=$(cd "$(dirname "$0")/../.." && pwd)

# ad-driver RESULT FIXTURE: the driver's verdict on tests/fixtures/numcmp/FIXTURE.ad.
driver() {
    got=$(${SHELL:-/bin/sh} "$src/tests/ad-driver" --test-name "$2" --log-file "$tmp/$2.log" \
        --trs-file "$tmp/$2.trs" -- "$addsl" "$src/tests/fixtures/numcmp/$2.ad" | sed 's/:.*//')
    if [ "$got" != "$1" ]; then
        echo "FAIL: ad-driver on $2.ad says $got, expected $1:"
        sed 's/^/  /' "$tmp/$2.log"
        fail=1
    fi
}
driver PASS within
driver PASS golden
driver FAIL outside
driver FAIL outside_last
driver FAIL text
driver FAIL integer
driver FAIL exact_line
driver FAIL count
driver FAIL golden_outside
driver FAIL golden_exact
driver ERROR bad_spec
# The log says what moved, and why a failure failed.
grep -q 'numcmp: matched, 3 number(s) within tolerance' "$tmp/within.log" || { echo "FAIL: within.log does not count the moved numbers"; fail=1; }
grep -q 'off by 0.0001, allowed 4.45e-05' "$tmp/outside.log" || { echo "FAIL: outside.log does not say how far off"; fail=1; }

# numcmp STATUS ARGS...: tests/numcmp's exit status on ARGS.
status() {
    want=$1; shift
    numcmp "$@" >"$tmp/out" 2>&1
    got=$?
    if [ "$got" != "$want" ]; then
        echo "FAIL: numcmp $*: exit status $got, expected $want:"
        sed 's/^/  /' "$tmp/out"
        fail=1
    fi
}
status 0 -T rtol=1e-5 -s 'grad [-33.1129, -44.5156]' 'grad [-33.1129, -44.5155]'
status 1 -T rtol=1e-6 -s 'grad [-33.1129, -44.5156]' 'grad [-33.1129, -44.5155]'
status 0 -T last=1 -s "max error 0.0677 at x = -1.000" "max error 0.0678 at x = -1.000"
status 1 -T last=1 -s "max error 0.0677" "max error 0.0679"
status 2 -T digits=1 -s 1 1
status 1 -s 'grad -44.5156' 'grad -44.5155'
status 0 -T atol=1e-3 -s '1e-05 2.5E+3' '0.0 2500.0004'
status 1 -T atol=1e-3 -s 'tensor([1.])' 'tensor([1.], dtype=float64)'
status 1 -T rtol=1 -s 'loss 1.0' 'loss 1.0 nan'
status 1 -T rtol=1 -s 'nan' 'inf'
status 1 -T rtol=1 -s 'one
two 2.0' 'one'
status 2 -T rtol=1e-5x -s 1 1
status 2 -T tol=1 -s 1 1
# Files: the final newline counts, as it does for cmp.
printf 'loss 1.5\n' >"$tmp/a"; printf 'loss 1.5' >"$tmp/b"
status 1 -T rtol=1 "$tmp/a" "$tmp/b"
status 0 -T rtol=1 "$tmp/a" "$tmp/a"
# A decimal-comma locale does not change what a number is.
if locale -a 2>/dev/null | grep -qi '^de_DE\.utf-\?8$'; then
    LC_ALL=de_DE.UTF-8 numcmp -T rtol=1e-5 -s 'loss 8.1544' 'loss 8.1543' >"$tmp/out" 2>&1 && { echo "FAIL: under de_DE.UTF-8 8.1543 passed for 8.1544 at rtol=1e-5"; fail=1; }
    LC_ALL=de_DE.UTF-8 numcmp -T rtol=1e-4 -s 'loss 8.1544' 'loss 8.1543' >"$tmp/out" 2>&1 || { echo "FAIL: under de_DE.UTF-8:"; cat "$tmp/out"; fail=1; }
fi

# lib.sh's own wrappers: check_near and check_golden set fail on a mismatch only.
fail_before=$fail
check_near "near" rtol=1e-5 'w = [0.7299, -0.6934]' 'w = [0.7299, -0.693405]'
check_golden "golden" "$src/tests/fixtures/numcmp/golden.out" "$src/tests/fixtures/numcmp/golden.out"
[ "$fail" = "$fail_before" ] || echo "FAIL: check_near or check_golden failed a match"
fail_before=$fail fail=0
check_near "near" rtol=1e-6 'w = [0.7299, -0.6934]' 'w = [0.7299, -0.693405]' >/dev/null
[ $fail = 1 ] || { echo "FAIL: check_near passed -0.693405 for 0.6934 at rtol=1e-6"; fail_before=1; }
fail=0
printf 'loss 8.1564 w [0.72990, -0.6934]\nsteps 3\n' >"$tmp/golden.txt"
check_golden "golden" "$src/tests/fixtures/numcmp/golden.out" "$tmp/golden.txt" >/dev/null
[ $fail = 1 ] || { echo "FAIL: check_golden passed 8.1564 for 8.1544 at golden.out.tol's rtol=2e-5"; fail_before=1; }
fail=$fail_before
[ $fail = 0 ] && echo "numcmp: ok"
exit $fail
