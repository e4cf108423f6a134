#!/bin/sh
# host_sample.sh: runs samples/embed/host (built in the build tree) and compares
# its output with samples/embed/host.out. $1: the addsl binary (its directory is the build dir).
top_build=$(cd "$(dirname "$1")" && pwd)
out=$("$top_build/samples/embed/host") || exit 1
[ "$out" = "$(cat "$srcdir/samples/embed/host.out")" ] || { printf 'got:\n%s\n' "$out"; exit 1; }
