/* sandbox.h: which builtins are doors to the file system or native code, and
 * the one check that refuses them when the host closed the door (cfg.deny). */
#ifndef AD_SANDBOX_H
#define AD_SANDBOX_H

#include "value.h"

/* The ADDSL_DENY_* bits that close builtin 'name' (0: it is no door). */
unsigned ad_sandbox_doors(const char *name);
/* The door table's names, for tests (tests/unit/test_sandbox.c): *n rows. */
const char *ad_sandbox_door_name(int i, unsigned *bits);
int ad_sandbox_door_count(void);
/* ADDSL_OK when S may call b; otherwise the refusal, naming the door and the
 * path or library among the arguments (bound as call_builtin binds them). */
int ad_sandbox_check(ad_state *S, const ad_builtin *b, const ad_value *args, int nargs, const struct ad_list *kw);

#endif
