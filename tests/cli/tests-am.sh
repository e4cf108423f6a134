#!/bin/sh
# tests-am.sh: tests/tests_list.am is what tools/gen_tests_am.sh writes from the
# tree now; a test added, renamed or removed without `make tests-am` fails here
# (automake would not run it, or would fail on a missing file).
src=${srcdir:-.}
tmp=$(mktemp) || exit 99
trap 'rm -f "$tmp"' EXIT
${SHELL:-/bin/sh} "$src/tools/gen_tests_am.sh" "$src" > "$tmp" || { echo "FAIL: tools/gen_tests_am.sh did not run"; exit 1; }
if ! diff -u "$src/tests/tests_list.am" "$tmp"; then
    echo "FAIL: tests/tests_list.am is out of date: run 'make tests-am' and commit it"
    exit 1
fi
# The generator must still see the suite: a sample of each kind of entry.
for want in '	tests/lang/while.ad' '	tests/unit/test_heap' '	tests/cli/tests-am.sh' \
            'tests_unit_test_heap_LDADD = libaddsl_core.la'; do
    sed 's/ \\$//' "$tmp" | grep -qxF "$want" || { echo "FAIL: no line '$want' in the generated list"; exit 1; }
done
echo "ok: tests/tests_list.am is up to date ($(sed -n 's/^	\([a-z][^ ]*\).*/\1/p' "$tmp" | sort -u | wc -l | tr -d ' ') files)"
