#!/bin/sh
# ops-md.sh: docs/ops.md is what tools/gen_ops_md.ad writes from the op library now;
# an op added, renamed or given new derivatives without `make ops-md` fails here.
addsl=${1:?usage: $0 PATH-TO-ADDSL}
src=${srcdir:-.}
tmp=$(mktemp) || exit 99
trap 'rm -f "$tmp"' EXIT
"$addsl" "$src/tools/gen_ops_md.ad" > "$tmp" || { echo "FAIL: tools/gen_ops_md.ad did not run"; exit 1; }
if ! diff -u "$src/docs/ops.md" "$tmp"; then
    echo "FAIL: docs/ops.md is out of date: run 'make ops-md' and commit it"
    exit 1
fi
grep -q '^| `mm` | `mm(self, mat2)` | self, mat2 | formula | yes |$' "$tmp" || { echo "FAIL: the mm row is missing or wrong"; exit 1; }
echo "ok: docs/ops.md is up to date ($(grep -c '^| `' "$tmp") op rows)"
