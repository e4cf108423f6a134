#!/bin/sh
# architecture-map.sh: docs/architecture.md names every source file and no file
# that is gone, so its file map cannot drift from the tree as files move.
# - Every .c, .h, .cu and .def outside tests/ (tests/tests.am lists those) must
#   appear in backquotes by its full path (`vm/ast.[ch]` names both halves).
# - Every file the page names in backquotes with a source extension must exist:
#   a path from the top of the tree or a layer-qualified include name
#   (`tensor/heap.h`, found as the compiler finds it: vm/, builtins/, include/);
#   a bare name (`bi_linalg.c`) somewhere in the tree; a system header that the
#   sources include with <...>; or a file Makefile.am has a rule to generate.
# - Every other page of docs/ says at its top ("> Implemented in `FOLDER/`")
#   which folder implements it.
# The sources are the tracked files in a git checkout; elsewhere (a tarball)
# every such file under the source tree.
# shellcheck disable=SC2016
src=${srcdir:-.}
doc=$src/docs/architecture.md
[ -f "$doc" ] || { echo "FAIL: $doc is missing"; exit 1; }
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

# Every file of the tree ($tmp/all), and the sources the map must name ($tmp/sources).
if top=$(git -C "$src" rev-parse --show-toplevel 2>/dev/null) &&
   [ "$(cd "$top" && pwd -P)" = "$(cd "$src" && pwd -P)" ]; then
    git -C "$src" ls-files > "$tmp/all" || exit 99
else
    (cd "$src" && find . \( -name .git -o -name 'addsl-*' -o -name .libs -o -name .deps \) -prune \
        -o -type f -print | sed 's|^\./||') > "$tmp/all" || exit 99
fi
# Files the build writes (rules in Makefile.am and tests/*.am): a tarball made
# from a tree that ran its tests may hold some (samples/export/arm_cost.c).
sed -n 's/^\([A-Za-z0-9_./-]*\.[ch]\):.*/\1/p' "$src/Makefile.am" "$src"/tests/*.am 2>/dev/null | sort -u > "$tmp/generated"
grep -E '\.(c|h|cu|def)$' "$tmp/all" | grep -v '^tests/' | grep -vxF -f "$tmp/generated" | sort -u > "$tmp/sources"

# The names in backquotes: one token each, without blanks, a trailing :LINE
# dropped, X.[ch] expanded to X.c and X.h.
grep -oE '`[^`]+`' "$doc" | tr -d '`' | grep -v '[[:space:]]' | sed 's/:[0-9][0-9,:-]*$//' |
    grep -E '^[A-Za-z0-9_][A-Za-z0-9_./-]*(\.\[ch\])?$' |
    awk '/\.\[ch\]$/ { n = substr($0, 1, length($0) - 5); print n ".c"; print n ".h"; next } { print }' |
    grep -E '\.(c|h|cu|def|ad|re|y|sh|py|md|am|ac)$' | sort -u > "$tmp/named"

fail=0
# 1: every source is named by its path.
missing=$(comm -23 "$tmp/sources" "$tmp/named")
if [ -n "$missing" ]; then
    echo "FAIL: docs/architecture.md's file map does not name these source files (add a row each):"
    printf '  %s\n' $missing
    fail=1
fi

# 2: every name is a file. The basenames of the tree, the system headers the
# sources include, and the files the build generates.
sed 's|.*/||' "$tmp/all" | sort -u > "$tmp/basenames"
(cd "$src" && grep -ohE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<[^>]+>' $(cat "$tmp/sources") 2>/dev/null) |
    sed 's/.*<//; s/>.*//' | sort -u > "$tmp/system"
gone=
while read -r name; do
    case $name in
    */*)
        for f in "$name" "vm/$name" "builtins/$name" "include/$name"; do
            [ -f "$src/$f" ] && continue 2
        done
        grep -qxF "$name" "$tmp/generated" && continue ;;
    *)
        grep -qxF "$name" "$tmp/basenames" && continue
        grep -qxF "$name" "$tmp/system" && continue
        grep -qxF "$name" "$tmp/generated" && continue ;;
    esac
    gone="$gone $name"
done < "$tmp/named"
if [ -n "$gone" ]; then
    echo "FAIL: docs/architecture.md names files that do not exist (renamed? update the page):"
    printf '  %s\n' $gone
    fail=1
fi

# 3: every other page of docs/ says at its top which folder implements it (the
# folder -> page table of docs/architecture.md is the other direction).
for page in "$src"/docs/*.md; do
    case $page in */architecture.md) continue ;; esac
    if ! head -n 12 "$page" | grep -q '^> Implemented in `'; then
        echo "FAIL: ${page#"$src"/} lacks its '> Implemented in \`FOLDER/\` ...' line under the title"
        fail=1
    fi
done
[ $fail = 0 ] && echo "ok: docs/architecture.md names all $(wc -l < "$tmp/sources") source files; its $(wc -l < "$tmp/named") file names all exist"
exit $fail
