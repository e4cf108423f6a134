/* jit/compiled.h: compile(f): a function that traces f once per signature of its
 * arguments and replays the traced program (vm/trace/trace.h) on later calls. */
#ifndef AD_COMPILED_H
#define AD_COMPILED_H

#include "value.h"

/* compile, compiled_graph, print_compiled. */
extern const ad_builtin_def ad_compiled_defs[];

#endif
