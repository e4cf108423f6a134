/* bi_gc.c: the cycle collector seen from scripts (vm/gc.h): gc_collect runs
 * a full collection now, gc_stats reports what the collector has done. */
#include "../vm/dict.h"
#include "../vm/gc.h"
#include "../vm/tensor/heap.h"
#include "../vm/state.h"
#include "builtins.h"

static int bi_gc_collect(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argv; (void)argc;
    *out = ad_int((double)ad_gc_collect(S, true));
    return ADDSL_OK;
}

static int bi_gc_stats(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argv; (void)argc;
    const ad_gc *gc = &S->gc;
    ad_heap_stats hs;
    ad_heap_stats_get(S, &hs);
    ad_dict *d = ad_dict_new(S);
    if (!d) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    struct { const char *key; double v; bool is_int; } rows[] = {
        {"tracked", (double)(gc->nyoung + gc->nold), true},
        {"young", (double)gc->nyoung, true},
        {"collections", (double)gc->collections[0], true},
        {"full_collections", (double)gc->collections[1], true},
        {"collected", (double)gc->collected, true},
        {"threshold", (double)gc->threshold, true},
        {"max_pause_ms", gc->max_pause_s * 1e3, false},
        {"total_pause_ms", gc->total_pause_s * 1e3, false},
        {"tensor_bytes", (double)hs.live_bytes, true},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int rc = ad_dict_set_str(S, d, rows[i].key, rows[i].is_int ? ad_int(rows[i].v) : ad_num(rows[i].v));
        if (rc) { ad_value_decref(S, ad_dict_value(d)); return rc; }
    }
    *out = ad_dict_value(d);
    return ADDSL_OK;
}

const ad_builtin_def ad_bi_gc_defs[] = {
    {"gc_collect", bi_gc_collect, "",
         "Runs the cycle collector over every container now and returns how many objects it freed "
         "(Python's gc.collect()). Lists, tuples, dicts and closures that only reference cycles keep "
         "alive (d[\"self\"] = d) are also collected automatically as containers are made; the "
         "tensors they held are freed with them."
         "\nExample: fn f() { let d = {}; d[\"self\"] = d }; f(); print(gc_collect())   # 1"},
    {"gc_stats", bi_gc_stats, "",
         "A dict of the cycle collector's counters: tracked (containers alive), young, collections "
         "and full_collections (runs so far), collected (objects they freed), threshold, "
         "max_pause_ms and total_pause_ms, and tensor_bytes (bytes of tensor storage alive)."
         "\nExample: print(gc_stats()[\"collections\"] >= 0)"},
    {NULL, NULL, NULL, NULL}
};
