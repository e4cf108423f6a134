#!/bin/sh
# ffi_sample.sh: runs samples/ffi (a user kernel in a shared library bound with
# extern, wrapped in an op, differentiated) against its golden output.
# $1: the addsl binary; srcdir and the build dir come from the environment.
top_build=$(cd "$(dirname "$1")" && pwd)
exec sh "$srcdir/samples/ffi/run.sh" "$1" "$srcdir/samples/ffi" "$top_build/samples/ffi/.libs"
