#!/bin/sh
# include-layers.sh: the include graph keeps the layer order of
# tools/include_layers.sh: an include from a layer to one above it fails
# unless that edge is on the tool's list of allowed ones (each with its
# reason in the note on issue 28). $1 (the addsl binary) is not used.
src=${srcdir:-.}
out=$(sh "$src/tools/include_layers.sh" --check "$src") && { echo "ok: every include goes down the layers or is an allowed edge"; exit 0; }
printf '%s\n' "$out"
echo "FAIL: an include goes up the layers: include the lower layer's header instead, or move the code"
exit 1
