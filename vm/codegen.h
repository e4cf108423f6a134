/* codegen.h: from source text to a main function prototype.
 * Names are resolved here: locals to registers, captures to cells, the rest to global slots. */
#ifndef AD_COMPILE_H
#define AD_COMPILE_H

#include <stdbool.h>
#include <stddef.h>

#include "vm.h"

/* Compiles 'src' (named 'name' in messages). In REPL mode an expression
 * statement at top level prints its value. On failure returns NULL with a
 * formatted "NAME:L:C: error: ..." message set. */
ad_proto *ad_compile(ad_state *S, const char *src, size_t len, const char *name, bool repl);
/* The embedded op library: its names are the library's own slots, never a script's shadows. */
ad_proto *ad_compile_library(ad_state *S, const char *src, size_t len, const char *name);
/* A module (vm/import.c): its top-level names become global slots of their
 * own, named NAME "\x01" KEY, so they hide nothing of the importer's; 'names'
 * receives each such name mapped to its slot (an integer). */
struct ad_dict;
ad_proto *ad_compile_module(ad_state *S, const char *src, size_t len, const char *name,
                            const char *key, struct ad_dict *names);
/* 1 when 'src' ends inside an open bracket or string (the REPL asks for more). */
int ad_compile_incomplete(const char *src, size_t len);
/* Formats "NAME:LINE:COL: error: MSG\n<source line>\n<caret>\n" into b. */
struct ad_buf;
void ad_format_location(struct ad_buf *b, const char *name, const char *src, size_t len,
                        int line, int col, const char *msg);

#endif
