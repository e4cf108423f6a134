#!/bin/sh
# run.sh: runs one command-line test script with the built addsl as its $1.
# automake calls it as the log compiler for tests/cli/*.sh.
script=$1
exec ${SHELL:-/bin/sh} "$script" "$ADDSL_BIN"
