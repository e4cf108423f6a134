#!/bin/sh
# locale.sh: under a decimal-comma locale (de_DE.UTF-8) numbers are parsed and printed
# with a '.': a host that calls setlocale(LC_ALL, ...) (tests/api/test_locale) and the CLI.
# The locale is the system's, else built here by localedef into a temporary LOCPATH
# (no root needed; the sources come with Debian's 'locales' package); skips (77) without.
# Usage: locale.sh PATH-TO-ADDSL (its directory is the build dir)
addsl=${1:?usage: $0 PATH-TO-ADDSL}
fail=0
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/../cli/lib.sh"
make_tmp
top_build=$(cd "$(dirname "$addsl")" && pwd)
LOC=de_DE.UTF-8

has_comma() { [ "$(LC_ALL=$LOC locale decimal_point 2>/dev/null)" = "," ]; }
if ! has_comma; then
    mkdir "$tmp/locales"
    # -c: localedef exits 1 for mere warnings; has_comma below is the test that counts.
    localedef -c -i de_DE -f UTF-8 "$tmp/locales/$LOC" >"$tmp/localedef.log" 2>&1
    LOCPATH=$tmp/locales
    export LOCPATH
    has_comma || { echo "SKIP: no $LOC locale, and localedef could not build one:"; cat "$tmp/localedef.log"; exit 77; }
fi

# The host: setlocale(LC_ALL, "de_DE.UTF-8"), then the library's numbers.
"$top_build/tests/api/test_locale" || { echo "FAIL: tests/api/test_locale"; fail=1; }

# The CLI sets only LC_CTYPE from the environment; the library runs in the C locale.
printf '1.5,2.25\n' >"$tmp/data.csv"
cat >"$tmp/nums.ad" <<'EOF'
let x = 2.5
print(x, 1e-3, f"{x:.3f}", float("0.5"), str(0.125))
print(load(args[0]))
fn f(v) { return (v * 1.5 + 0.25).sum() }
export_c(f, [ones(3)], "unused.c", name="f")
EOF
out=$(LC_ALL=$LOC "$addsl" --export-c "$tmp/f.c" "$tmp/nums.ad" "$tmp/data.csv" 2>&1)
check "numbers under LC_ALL=$LOC" "2.5 0.001 2.500 0.5 0.125
tensor([[1.5000, 2.2500]])" "$out"
grep -q '\* 1\.5f' "$tmp/f.c" && grep -q '0\.25f' "$tmp/f.c" && ! grep -q '1,5' "$tmp/f.c" ||
    { echo "FAIL: export_c under LC_ALL=$LOC did not write 1.5f and 0.25f"; fail=1; }
out=$(LC_ALL=$LOC "$addsl" -e 'print(2.5 * 2, "é" + "x")' 2>&1)
check "-e under LC_ALL=$LOC" "5 éx" "$out"

# The REPL (its line editor reads UTF-8 through LC_CTYPE), where a terminal can be had.
if command -v script >/dev/null 2>&1 && command -v timeout >/dev/null 2>&1 &&
    script -qec true /dev/null </dev/null >/dev/null 2>&1; then
    feed() {
        sleep 1
        for line in 'let y = 0.5' 'y * 3' 'print("é", f"{y:.2f}")' 'exit(0)'; do
            printf '%s\n' "$line"
            sleep 0.3
        done
    }
    HOME=$tmp LC_ALL=$LOC
    export HOME LC_ALL
    unset ADDSL_HISTORY
    repl_session 30
    unset LC_ALL
    [ "$rc" = 0 ] || { echo "FAIL: the REPL under $LOC exited $rc"; fail=1; }
    grep -qx '1.5' "$tmp/out" || { echo "FAIL: the REPL under $LOC did not print 1.5 for y * 3"; fail=1; }
    grep -qx 'é 0.50' "$tmp/out" || { echo "FAIL: the REPL under $LOC did not print 'é 0.50'"; fail=1; }
    [ $fail -eq 0 ] || sed 's/^/  session: /' "$tmp/out"
else
    echo "note: no pty here ('script', 'timeout'): the REPL part is left out"
fi
exit $fail
