#!/bin/sh
# format_check.sh: clang-format (.clang-format) over the C lines a branch changed:
# `make format-check` lists the files whose changed lines it would reformat and
# fails; `make format` (--fix) reformats those lines in the working tree.
# Usage: tools/format_check.sh [--fix] SRCDIR [BASE]
# BASE is the commit the branch is compared with: FORMAT_BASE, else the
# merge-base of HEAD with main (origin/main, master). Only lines that differ
# from BASE (committed or not) are checked, never the rest of a file: the tree
# predates .clang-format, and reformatting it whole would collide with every
# branch in flight (HACKING.md, "Formatting"). Files in .clang-format-ignore
# are left alone; a file git does not track yet is checked once it is added.
# Skips (exit 0, with a message) outside a git checkout or without clang-format.
fix=
[ "${1:-}" = --fix ] && { fix=1; shift; }
src=${1:?usage: $0 [--fix] SRCDIR [BASE]}
base=${2:-${FORMAT_BASE:-}}
cd "$src" || exit 2
what=format-check
[ -n "$fix" ] && what=format

if ! git rev-parse --show-toplevel >/dev/null 2>&1 ||
   [ "$(git rev-parse --show-toplevel)" != "$(pwd -P)" ]; then
    echo "$what: skipped: $src is not the top of a git checkout"
    exit 0
fi
cf=${CLANG_FORMAT:-clang-format}
if ! command -v "$cf" >/dev/null 2>&1; then
    echo "$what: skipped: no $cf (Debian: apt-get install clang-format)"
    exit 0
fi
if ! git clang-format -h >/dev/null 2>&1; then
    echo "$what: skipped: no git-clang-format (it comes with Debian's clang-format package)"
    exit 0
fi

if [ -z "$base" ]; then
    for b in main origin/main master origin/master; do
        base=$(git merge-base HEAD "$b" 2>/dev/null) && break
        base=
    done
    [ -n "$base" ] || { echo "$what: no main branch to compare with: give one, make $what FORMAT_BASE=COMMIT"; exit 2; }
fi
git rev-parse --verify -q "$base^{commit}" >/dev/null || { echo "$what: FORMAT_BASE=$base is not a commit"; exit 2; }

# The C files changed since the base (and not deleted), less the ignored ones.
files=
for f in $(git diff --name-only --diff-filter=ACMR "$base" -- '*.c' '*.h' '*.cu'); do
    skip=
    if [ -f .clang-format-ignore ]; then
        while read -r pat; do
            case $pat in '' | '#'*) continue ;; esac
            # shellcheck disable=SC2254
            case $f in $pat) skip=1; break ;; esac
        done < .clang-format-ignore
    fi
    [ -n "$skip" ] || files="$files $f"
done
short=$(git rev-parse --short "$base")
if [ -z "$files" ]; then
    echo "$what: no C file to check changed since $short"
    exit 0
fi

if [ -n "$fix" ]; then
    # shellcheck disable=SC2086
    git clang-format --binary "$(command -v "$cf")" --force --extensions c,h,cu "$base" -- $files
    exit $?
fi
out=$(mktemp) || exit 2
trap 'rm -f "$out"' EXIT
# shellcheck disable=SC2086
git clang-format --binary "$(command -v "$cf")" --diff --extensions c,h,cu "$base" -- $files > "$out" 2>&1 || true
bad=$(sed -n 's|^diff --git a/\(.*\) b/.*|\1|p' "$out")
n=$(echo $files | wc -w)
if [ -n "$bad" ]; then
    echo "$what: lines changed since $short differ from .clang-format in:"
    printf '  %s\n' $bad
    echo "what clang-format would make of them:"
    cat "$out"
    echo "$what: FAIL: 'make format' rewrites those lines in place (then git diff shows what it did)"
    exit 1
fi
echo "$what: the lines changed since $short in $n C files follow .clang-format"
