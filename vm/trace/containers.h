/* trace/containers.h: lists and tuples a traced record reads as constants
 * (vm/trace/containers.c). */
#ifndef AD_TRACE_CONTAINERS_H
#define AD_TRACE_CONTAINERS_H

#include <stdbool.h>
#include <stdint.h>

#include "state.h"
#include "value.h"

/* A copy of v, nested lists and tuples copied too (other values shared). */
int ad_tc_copy(ad_state *S, ad_value v, ad_value *out);
/* Whether v still holds what 'copy' holds (numbers and strings by value, other objects by identity). */
bool ad_tc_same(ad_value v, ad_value copy);
/* 1: obj is root or reachable from it (through lists, tuples, dicts, cells, closures);
 * 0: not; -1: cannot tell within *budget items (start from ad_tc_budget()). */
int ad_tc_reaches(ad_value root, const void *obj, int64_t *budget);
int64_t ad_tc_budget(void);

#endif
