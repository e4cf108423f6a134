# check_c.sh: sourced by the export tests (export_cases, at the end, runs a
# cases script and this). export_check DIR PREFIX VALGRIND
# builds the exported files DIR/PREFIX[0-9]*.c as one translation unit (one
# compiler run instead of thousands) with the first of gcc and clang, at -O2
# under -std=c99 -Wall -Wextra -Werror -pedantic, and has the other accept it
# too; checks that the object references no allocator and nothing of libaddsl
# (nm) and holds no writable data (no global state); links the driver the
# cases script wrote (DIR/main.c) and runs it against the interpreter's
# values, under valgrind when VALGRIND is 1 and valgrind is installed (not
# for an ASan build of addsl, $addsl). Returns 0, 1 after a FAIL line, or 77.
. "${srcdir:-.}/tests/valgrind/check.sh"
export_check() {
    _d=$1 _p=$2 _vg=$3
    cat "$_d"/"$_p"[0-9]*.c > "$_d/all.c"
    _flags="-std=c99 -Wall -Wextra -Werror -pedantic"
    _ran=
    for _cc in gcc clang; do
        command -v $_cc >/dev/null 2>&1 || { echo "# $_cc not installed: skipped"; continue; }
        if [ -n "$_ran" ]; then
            $_cc $_flags -fsyntax-only -I"$_d" "$_d/all.c" || { echo "FAIL: $_cc rejects the exported code"; return 1; }
            echo "# $_cc: compiles cleanly"
            continue
        fi
        $_cc $_flags -O2 -I"$_d" -c "$_d/all.c" -o "$_d/all.o" || { echo "FAIL: $_cc rejects the exported code"; return 1; }
        _bad=$(nm -u "$_d/all.o" | awk '{print $NF}' | grep -E '^(malloc|calloc|realloc|free|alloca|ad_|addsl_)')
        [ -z "$_bad" ] || { echo "FAIL: the exported code references: $_bad"; return 1; }
        [ -z "$(nm "$_d/all.o" | awk '$2 ~ /^[BDbd]$/')" ] || { echo "FAIL: the exported code has writable data"; return 1; }
        # the driver is mostly data: no optimisation, to keep its compile short
        $_cc -std=c99 -O0 -g -I"$_d" "$_d/main.c" "$_d/all.o" -lm -o "$_d/main" || { echo "FAIL: driver"; return 1; }
        "$_d/main" || { echo "FAIL: $_cc build differs from the interpreter"; return 1; }
        if [ "$_vg" = 1 ] && command -v valgrind >/dev/null 2>&1 && ! ldd "$addsl" 2>/dev/null | grep -q libasan; then
            _vg_out=$(valgrind_check "$_d/main")
            _vg_st=$?
            echo "$_vg_out" | sed 's/^valgrind:/# valgrind:/'
            [ "$_vg_st" -eq 0 ] || return 1
        fi
        _ran=$_cc
    done
    [ -n "$_ran" ] || { echo "SKIP: no C compiler"; return 77; }
    return 0
}

# export_cases CASES PREFIX VALGRIND: runs tests/export/CASES, which writes the
# exported files and their driver into a fresh $dir (removed at exit; the
# caller may look at it afterwards), then export_check's them. Exits the test
# on failure.
export_cases() {
    dir=$(mktemp -d "${TMPDIR:-/tmp}/addsl-export.XXXXXX") || exit 1
    trap 'rm -rf "$dir"' EXIT INT TERM
    "$addsl" "$src/tests/export/$1" "$dir" > "$dir/main.c" || { echo "FAIL: $1"; exit 1; }
    export_check "$dir" "$2" "$3" || exit $?
}
