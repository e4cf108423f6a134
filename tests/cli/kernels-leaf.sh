#!/bin/sh
# kernels-leaf.sh: builtins/kernels/ is a leaf (docs/architecture.md): its files
# include system headers, each other ("kernels/NAME.h" or a name beside them)
# and the public include/addsl/traj_kernels.h (itself free of includes, as
# the C that export_c writes copies it), never vm/, the builtin tables or
# builtins/system/. A kernel that needs a limit takes it from
# kernels/kernel_limits.h. $1 (the addsl binary) is not used.
src=${srcdir:-.}
dir=$src/builtins/kernels
[ -d "$dir" ] || { echo "FAIL: no $dir"; exit 1; }
fail=0
n=0
for f in "$dir"/*.c "$dir"/*.h "$dir"/*.def; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    # Every quoted include, with its line number.
    grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
        sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1 \2/' > "${TMPDIR:-/tmp}/kleaf.$$"
    while read -r line inc; do
        case $inc in
        kernels/*) target=$dir/${inc#kernels/} ;;
        ../../include/addsl/traj_kernels.h) target=$src/include/addsl/traj_kernels.h ;;
        */*) target= ;;
        *) target=$dir/$inc ;;
        esac
        if [ -z "$target" ] || [ ! -f "$target" ]; then
            echo "FAIL: ${f#"$src"/}:$line includes \"$inc\", which is not a kernels header"
            fail=1
        fi
    done < "${TMPDIR:-/tmp}/kleaf.$$"
    rm -f "${TMPDIR:-/tmp}/kleaf.$$"
done
# The one header from outside must stay a leaf itself.
if grep -q '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$src/include/addsl/traj_kernels.h"; then
    echo "FAIL: include/addsl/traj_kernels.h includes a project header"
    fail=1
fi
[ "$n" -gt 0 ] || { echo "FAIL: no files under $dir"; exit 1; }
[ "$fail" -eq 0 ] && echo "ok: the $n files under builtins/kernels/ include only kernels headers"
exit "$fail"
