/* trace/containers.c: the lists and tuples a traced record reads as
 * constants: held as copies of what they were at the call (f goes on
 * changing its own lists after it: append), a change a call made to one,
 * and whether code outside f can reach the list that changed. */
#include "trace/containers.h"

#include "dict.h"
#include "vm.h"

/* Past this depth a list is held as it is (the trace already refuses lists
 * holding tensors that deep, and a list holding itself ends here). */
#define COPY_DEPTH 64
/* Items looked at per reachability question: past it the answer is "maybe". */
#define REACH_ITEMS 65536

static int copy_at(ad_state *S, ad_value v, int depth, ad_value *out) {
    if (!ad_is_seq(v) || depth >= COPY_DEPTH) {
        *out = v;
        ad_value_incref(v);
        return ADDSL_OK;
    }
    ad_list *l = ad_list_new(S, v.t, v.u.l->len);
    if (!l) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    for (int64_t i = 0; i < v.u.l->len; i++) l->items[i] = ad_none();
    for (int64_t i = 0; i < v.u.l->len; i++) {
        int rc = copy_at(S, v.u.l->items[i], depth + 1, &l->items[i]);
        if (rc) {
            ad_value_decref(S, ad_list_value(l, v.t));
            return rc;
        }
    }
    if (v.t == AD_TTUPLE && v.u.l->names) ad_tuple_share_names(l, v.u.l->names);
    *out = ad_list_value(l, v.t);
    return ADDSL_OK;
}

int ad_tc_copy(ad_state *S, ad_value v, ad_value *out) { return copy_at(S, v, 0, out); }

static bool same_at(ad_value v, ad_value c, int depth) {
    if (v.t != c.t) return false;
    if (!ad_is_seq(v)) {
        if (v.t == AD_TSTR || v.t < AD_TSTR) return ad_values_equal(v, c);
        return v.u.o == c.u.o;
    }
    if (v.u.o == c.u.o) return true;
    if (depth >= COPY_DEPTH || v.u.l->len != c.u.l->len) return false;
    for (int64_t i = 0; i < v.u.l->len; i++)
        if (!same_at(v.u.l->items[i], c.u.l->items[i], depth + 1)) return false;
    return true;
}

bool ad_tc_same(ad_value v, ad_value copy) { return same_at(v, copy, 0); }

/* 1: 'obj' is 'v' or inside it; 0: not; -1: too much to tell. */
static int reach_at(ad_value v, const void *obj, int depth, int64_t *budget) {
    if (v.t < AD_TSTR || v.t == AD_TSTR || v.t == AD_TTENSOR) return 0;
    if (v.u.o == obj) return 1;
    if (--*budget < 0 || depth >= COPY_DEPTH) return -1;
    int r = 0, x = 0;
    if (ad_is_seq(v)) {
        for (int64_t i = 0; i < v.u.l->len && r != 1; i++)
            if ((x = reach_at(v.u.l->items[i], obj, depth + 1, budget)) != 0) r = x;
    } else if (v.t == AD_TDICT) {
        int64_t it = 0;
        ad_value k, y;
        while (r != 1 && ad_dict_next(v.u.d, &it, &k, &y))
            if ((x = reach_at(y, obj, depth + 1, budget)) != 0) r = x;
    } else if (v.t == AD_TCELL) {
        r = reach_at(v.u.cell->v, obj, depth + 1, budget);
    } else if (v.t == AD_TFUNC) {
        /* a function outside f reaches what it captured and its defaults */
        const ad_closure *f = v.u.fn;
        for (int i = 0; i < f->nupvals && r != 1; i++)
            if (f->upvals[i] && (x = reach_at(f->upvals[i]->v, obj, depth + 1, budget)) != 0) r = x;
        for (int i = 0; i < f->p->ndefaults && f->defaults && r != 1; i++)
            if ((x = reach_at(f->defaults[i], obj, depth + 1, budget)) != 0) r = x;
    } else if (v.t != AD_TBUILTIN && v.t != AD_TOP && v.t != AD_TSLICE && v.t != AD_TGRADFN) {
        /* modules, iterators: not walked, so a list behind one may be anyone's */
        r = -1;
    }
    return r;
}

int ad_tc_reaches(ad_value root, const void *obj, int64_t *budget) { return reach_at(root, obj, 0, budget); }

int64_t ad_tc_budget(void) { return REACH_ITEMS; }
