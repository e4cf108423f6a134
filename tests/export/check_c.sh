# check_c.sh: sourced by the export tests (export_cases, at the end, runs a
# cases script and this). export_check DIR PREFIX VALGRIND
# builds the exported files DIR/PREFIX[0-9]*.c as a few translation units (one
# per core, not one compiler run per file) with the first of gcc and clang, at -O2
# under -std=c99 -Wall -Wextra -Werror -pedantic, and has the other accept it
# too; checks that the object references no allocator and nothing of libaddsl
# (nm) and holds no writable data (no global state); links the driver the
# cases script wrote (DIR/main.c) and runs it against the interpreter's
# values, under valgrind when VALGRIND is 1 and valgrind is installed (not
# for an ASan build of addsl, $addsl). Returns 0, 1 after a FAIL line, or 77.
# With ADDSL_TEST_CC_CACHE naming a directory, an object built before from the
# same text by the same compiler and flags is taken from there: CI runs the
# suite three times over the same exported code (minutes of -O2 each).
. "${srcdir:-.}/tests/valgrind/check.sh"
# export_split DIR PREFIX: DIR/PREFIX[0-9]*.c dealt round-robin into one file per
# core, DIR/part<i>.c, so the compiles run side by side.
export_split() {
    _n=${ADDSL_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
    [ "$_n" -ge 1 ] 2>/dev/null || _n=2
    rm -f "$1"/part[0-9]*.c
    _i=0
    for _f in "$1"/"$2"[0-9]*.c; do
        cat "$_f" >> "$1/part$((_i % _n)).c"
        _i=$((_i + 1))
    done
}

# export_cc DIR CC FLAGS...: compiles every DIR/part<i>.c with CC FLAGS (adding
# -o part<i>.o after -c) in parallel; 0 when all succeed. Objects come from
# $ADDSL_TEST_CC_CACHE when it holds one for the same text, compiler and flags.
export_cc() {
    _cd=$1; shift
    _pids=
    for _c in "$_cd"/part[0-9]*.c; do
        _o=${_c%.c}.o
        (
            _key=
            if [ -n "${ADDSL_TEST_CC_CACHE:-}" ] && mkdir -p "$ADDSL_TEST_CC_CACHE" 2>/dev/null; then
                _key=$( { "$1" --version; echo "$*"; cat "$_c"; } 2>&1 | sha1sum | cut -d' ' -f1)
                if [ -f "$ADDSL_TEST_CC_CACHE/$_key" ]; then
                    case " $* " in *" -c "*) cp "$ADDSL_TEST_CC_CACHE/$_key" "$_o" ;; esac
                    exit 0
                fi
            fi
            case " $* " in
            *" -c "*) "$@" -I"$_cd" "$_c" -o "$_o" || exit 1 ;;
            *) "$@" -I"$_cd" "$_c" || exit 1; : > "$_o.ok" ;;
            esac
            if [ -n "$_key" ]; then
                case " $* " in *" -c "*) cp "$_o" "$ADDSL_TEST_CC_CACHE/$_key.$$" ;; *) : > "$ADDSL_TEST_CC_CACHE/$_key.$$" ;; esac
                mv "$ADDSL_TEST_CC_CACHE/$_key.$$" "$ADDSL_TEST_CC_CACHE/$_key"
            fi
        ) &
        _pids="$_pids $!"
    done
    _st=0
    for _pid in $_pids; do wait "$_pid" || _st=1; done
    return $_st
}

export_check() {
    _d=$1 _p=$2 _vg=$3
    cat "$_d"/"$_p"[0-9]*.c > "$_d/all.c"
    export_split "$_d" "$_p"
    _flags="-std=c99 -Wall -Wextra -Werror -pedantic"
    _ran=
    for _cc in gcc clang; do
        command -v $_cc >/dev/null 2>&1 || { echo "# $_cc not installed: skipped"; continue; }
        if [ -n "$_ran" ]; then
            export_cc "$_d" $_cc $_flags -fsyntax-only || { echo "FAIL: $_cc rejects the exported code"; return 1; }
            echo "# $_cc: compiles cleanly"
            continue
        fi
        export_cc "$_d" $_cc $_flags -O2 -c || { echo "FAIL: $_cc rejects the exported code"; return 1; }
        ld -r -o "$_d/all.o" "$_d"/part[0-9]*.o || { echo "FAIL: ld -r of the parts"; return 1; }
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
