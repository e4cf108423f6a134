#!/bin/sh
# format-check.sh: tools/format_check.sh (make format-check, make format) in a
# scratch git repository with the tree's .clang-format: a change off the style
# fails and names its file, the old lines around it are not held to the style,
# an ignored file is skipped, 'make format' repairs the change, and a missing
# clang-format is a skip with a message rather than a failure.
src=${srcdir:-.}
command -v git >/dev/null 2>&1 || { echo "SKIP: no git"; exit 77; }
command -v "${CLANG_FORMAT:-clang-format}" >/dev/null 2>&1 || { echo "SKIP: no clang-format"; exit 77; }
git clang-format -h >/dev/null 2>&1 || { echo "SKIP: no git-clang-format"; exit 77; }
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { # NAME WANT-RC GOT-RC
    if [ "$2" != "$3" ]; then echo "FAIL: $1: exit $3, expected $2"; sed 's/^/  /' "$tmp/out"; fail=1; fi
}

r=$tmp/repo
mkdir -p "$r/tools" "$r/vm" || exit 99
cp "$src/.clang-format" "$src/.clang-format-ignore" "$r/" || exit 99
cp "$src/tools/format_check.sh" "$r/tools/" || exit 99
# The base: a file in today's style, two statements on a line (off .clang-format).
cat > "$r/vm/a.c" <<'EOF'
static int f(int *p, int n) {
    if (!p) { n = 0; return -1; }
    for (int i = 0; i < n; i++) p[i] = 0;
    return n;
}
EOF
cp "$r/vm/a.c" "$r/vm/vm.c"
(cd "$r" && git init -q -b main . && git add . &&
 git -c user.name=t -c user.email=t@t commit -q -m base && git checkout -q -b work) || exit 99
fc() { (cd "$r" && sh tools/format_check.sh . "$@") > "$tmp/out" 2>&1; }

fc; check "no change" 0 $?
grep -q 'no C file to check changed since' "$tmp/out" || { echo "FAIL: no change: $(cat "$tmp/out")"; fail=1; }

# A new function in the style: passes, though the old line above it is off it.
cat >> "$r/vm/a.c" <<'EOF'
static int g(const char *s) {
    if (!s) return 0;
    return s[0] == 'x';
}
EOF
fc; check "a change in the style" 0 $?

# A change off the style fails and names the file; the ignored vm/vm.c gets the
# same change and is not named.
printf 'static int  h( int x ){return x*2;}\n' | tee -a "$r/vm/vm.c" >> "$r/vm/a.c"
fc; check "a change off the style" 1 $?
grep -qx '  vm/a.c' "$tmp/out" || { echo "FAIL: vm/a.c is not listed"; fail=1; }
grep -q 'vm/vm.c' "$tmp/out" && { echo "FAIL: the ignored vm/vm.c is listed"; fail=1; }
grep -q '^+static int h(int x) { return x \* 2; }' "$tmp/out" || { echo "FAIL: no suggested line"; sed 's/^/  /' "$tmp/out"; fail=1; }

# make format rewrites the changed lines only, and then the check passes.
(cd "$r" && sh tools/format_check.sh --fix .) > "$tmp/out" 2>&1; check "format --fix" 0 $?
grep -qx 'static int h(int x) { return x \* 2; }' "$r/vm/a.c" || { echo "FAIL: h() is not reformatted"; fail=1; }
grep -qx '    if (!p) { n = 0; return -1; }' "$r/vm/a.c" || { echo "FAIL: an old line was reformatted"; fail=1; }
fc; check "after format" 0 $?

# An explicit base, and no clang-format: a skip with its reason.
fc main; check "FORMAT_BASE=main" 0 $?
(cd "$r" && FORMAT_BASE=nosuchcommit sh tools/format_check.sh .) > "$tmp/out" 2>&1; check "a bad base" 2 $?
(cd "$r" && CLANG_FORMAT=no-such-clang-format sh tools/format_check.sh .) > "$tmp/out" 2>&1; check "no clang-format" 0 $?
grep -q 'skipped: no no-such-clang-format' "$tmp/out" || { echo "FAIL: no skip message: $(cat "$tmp/out")"; fail=1; }

[ $fail = 0 ] && echo "ok: format-check fails on changed lines off the style, skips the rest"
exit $fail
