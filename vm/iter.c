/* iter.c: iterables with loop hooks (vm/iter.h): construction checks that the
 * wrapped value is a sequence the for loop can walk, so the loop need not. */
#include "iter.h"

#include "dict.h"
#include "gc.h"
#include "state.h"
#include "tensor/tensor.h"

int ad_iter_new(ad_state *S, const char *fn, const char *name, ad_value src, ad_iter **out) {
    ad_value seq = src;
    switch (src.t) {
    case AD_TLIST: case AD_TTUPLE: case AD_TSTR: ad_value_incref(src); break;
    case AD_TTENSOR:
        if (src.u.tensor->ndim == 0) return ad_error(S, "%s(): iteration over a 0-d tensor", fn);
        ad_value_incref(src);
        break;
    case AD_TDICT: {
        /* A snapshot of the keys, in insertion order, as the for loop takes. */
        int rc = ad_dict_list(S, src.u.d, 0, &seq);
        if (rc) return rc;
        break;
    }
    case AD_TITER: seq = src.u.it->src; ad_value_incref(seq); break;
    default: return ad_error(S, "%s(): %s is not iterable", fn, ad_type_name(src));
    }
    ad_iter *it = ad_calloc(S, 1, sizeof *it);
    if (!it) { ad_value_decref(S, seq); return ADDSL_ENOMEM; }
    it->hdr.refcount = 1;
    it->name = name;
    it->src = seq;
    ad_gc_track(S, &it->gc, AD_TITER);
    *out = it;
    return ADDSL_OK;
}

void ad_iter_free(ad_state *S, ad_iter *it) {
    ad_gc_untrack(S, &it->gc);
    if (it->fini) it->fini(S, it);
    ad_value_decref(S, it->src);
    ad_free(S, it);
}
