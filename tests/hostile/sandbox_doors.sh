#!/bin/sh
# sandbox_doors.sh: no builtin reaches the file system or dlopen except through a door of
# vm/sandbox.c (which cfg.deny closes, tests/unit/test_sandbox.c), and no keyword of the grammar
# is new to this review. A source check: it reads every function of vm/ and builtins/, follows the
# calls (by name, so it over-approximates), and fails for a builtin that reaches a file call
# without being in the door table or the reviewed list below.
# Usage: sandbox_doors.sh PATH-TO-ADDSL (unused; the sources are read)
top=${srcdir:-$(dirname "$0")/../..}
[ -f "$top/vm/sandbox.c" ] || { echo "FAIL: no vm/sandbox.c under '$top'"; exit 1; }
fail=0

# Calls that open, create, remove, resolve or map a file or a library by name.
file_calls='fopen freopen open openat creat opendir stat lstat fstatat access mkdir mkdirat unlink unlinkat
remove rmdir rename renameat link linkat symlink readlink realpath truncate chmod chown mkfifo mknod
mkstemp mkstemps tmpfile popen dlopen zip_open cairo_surface_write_to_png cairo_svg_surface_create'

# Functions whose file calls take fixed names chosen by addsl or the host, never by a script:
# each was read and is listed with what it opens.
fixed='ad_dlmodule_open:addsl_cuda.so_and_addsl_mpi.so,_in_addsl_own_directories_or_the_host_env_variable
try_path:the_same
my_dir:readlink_of_/proc/self/exe
ad_dl_table_load:BLAS,_cairo,_libzip_by_the_sonames_the_build_linked'

# Builtins that reach a file call but are no door, reviewed: NAME:why (none today).
reviewed=''

# The gates: a function that checks cfg.deny before anything it opens (vm/vm.c call_builtin,
# every builtin call; vm/import.c ad_module_begin, every import). Calls through them are not
# followed: each door behind them is checked by its own bits.
gates='call_builtin ad_module_begin'

awk -v calls="$file_calls" -v fixed="$fixed" -v reviewed="$reviewed" -v gates="$gates" '
BEGIN {
    n = split(calls, c, /[ \n]+/); for (i = 1; i <= n; i++) if (c[i] != "") seed[c[i]] = 1
    n = split(fixed, c, /\n/); for (i = 1; i <= n; i++) { split(c[i], kv, ":"); isfixed[kv[1]] = 1 }
    n = split(reviewed, c, /\n/); for (i = 1; i <= n; i++) { split(c[i], kv, ":"); isreviewed[kv[1]] = 1 }
    n = split(gates, c, / /); for (i = 1; i <= n; i++) isgate[c[i]] = 1
}
FNR == 1 { cur = ""; file = FILENAME; sub(/.*\//, "", file); d = FILENAME; sub(/\/[^\/]*$/, "", d); sub(/.*\//, "", d); file = d "/" file }
# A definition: a line at column 0 that names a function and does not end in ";".
/^[A-Za-z_][A-Za-z_0-9 \*]*[A-Za-z_0-9]+\(/ && !/;[ \t]*$/ && !/^(if|for|while|return|typedef|extern)[ (]/ {
    s = $0; sub(/\(.*/, "", s); m = split(s, w, /[ \*]+/); cur = w[m]
    node = file ":" cur; defined[node] = 1; fname[node] = cur
    if (!(cur in deffile)) deffile[cur] = file; else if (deffile[cur] != file) deffile[cur] = deffile[cur] " " file
    next
}
/^}/ { cur = ""; next }
# A row of a builtin table: {"name", c_function, ...
/\{"[A-Za-z_0-9]+", *[A-Za-z_][A-Za-z_0-9]*,/ {
    s = $0; sub(/.*\{"/, "", s); name = s; sub(/".*/, "", name)
    f = s; sub(/^[^"]*", */, "", f); sub(/[^A-Za-z_0-9].*/, "", f)
    if (file != "vm/sandbox.c") { bfn[name] = f; bfile[name] = file }
}
/\{"[a-z_]+", ADDSL_DENY_/ { s = $0; sub(/.*\{"/, "", s); sub(/".*/, "", s); door[s] = 1 }
cur != "" {
    node = file ":" cur
    s = $0; gsub(/"([^"\\]|\\.)*"/, "", s); sub(/\/\/.*/, "", s)
    while (match(s, /[A-Za-z_][A-Za-z_0-9]*[ \t]*\(/)) {
        callee = substr(s, RSTART, RLENGTH); sub(/[ \t]*\($/, "", callee)
        s = substr(s, RSTART + RLENGTH)
        if (callee == cur) continue
        if (seed[callee]) { if (!isfixed[cur] && !(node in touch)) touch[node] = callee "()" }
        else { edge[node, ++ne[node]] = callee; efile[node] = file }
    }
}
# The nodes a call of g from a function of file f may reach: its own file static first.
function targets(f, g, out,    k, n, fs, i) {
    if ((f ":" g) in defined) { out[1] = f ":" g; return 1 }
    if (!(g in deffile)) return 0
    n = split(deffile[g], fs, / /)
    for (i = 1; i <= n; i++) out[i] = fs[i] ":" g
    return n
}
END {
    # Follow the calls to a fixed point: a function touches files if it calls one that does.
    for (changed = 1; changed; ) {
        changed = 0
        for (f in ne) {
            if ((f in touch) || isfixed[fname[f]] || isgate[fname[f]]) continue
            for (i = 1; i <= ne[f] && !(f in touch); i++) {
                delete out; k = targets(efile[f], edge[f, i], out)
                for (j = 1; j <= k; j++)
                    if ((out[j] in touch) && !isgate[fname[out[j]]]) { touch[f] = fname[out[j]] " -> " touch[out[j]]; changed = 1; break }
            }
        }
    }
    bad = 0
    for (b in bfn) {
        node = bfile[b] ":" bfn[b]
        if (!(node in touch)) { if (b in door) { print "FAIL: door " b " (" bfn[b] ") reaches no file call: a stale row?"; bad = 1 } continue }
        if (b in door || isreviewed[b]) continue
        print "FAIL: builtin " b " (" bfile[b] ": " bfn[b] ") reaches a file call: " bfn[b] " -> " touch[node]
        print "      add it to the door table in vm/sandbox.c (and see that the sandbox must refuse it), or review it here"
        bad = 1
    }
    for (b in door) if (!(b in bfn)) { print "FAIL: door " b " is no builtin of the tables"; bad = 1 }
    nd = 0; for (b in door) nd++
    nb = 0; for (b in bfn) nb++
    if (nb < 200) { print "FAIL: read only " nb " builtin rows"; bad = 1 }
    if (!bad) print "# " nb " builtin rows read, " nd " doors, every file call behind one"
    exit bad
}' $(find "$top/vm" "$top/builtins" -name '*.c' | LC_ALL=C sort) || fail=1

# The grammar's keywords: 'import' and 'extern' are doors (vm/import.c checks cfg.deny for import;
# extern compiles to the extern_fn door). A new keyword must be reviewed here.
known='and break continue detect_anomaly else extern false fn for if import in let no_grad none not op or return true while'
got=$(sed -n 's/^ *"\([a-z_]*\)" { return TK_[A-Z_]*; }.*/\1/p' "$top/lexer.re" | sort | tr '\n' ' ' | sed 's/ $//')
want=$(printf '%s\n' $known | sort | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "$want" ] || { echo "FAIL: the keywords of lexer.re changed (review them as doors): got '$got', reviewed '$want'"; fail=1; }
grep -q 'ADDSL_DENY_IMPORT' "$top/vm/import.c" && grep -q 'ADDSL_DENY_FILES' "$top/vm/import.c" ||
    { echo "FAIL: vm/import.c no longer checks the deny bits for import"; fail=1; }
[ $fail -eq 0 ] && echo PASS
exit $fail
