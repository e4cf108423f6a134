/* value.c: lifetime, equality, truth and printing of VM values.
 * Objects are refcounted; the last decref frees children first. */
#include "value.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ad_assert.h"
#include "buf.h"
#include "dict.h"
#include "gc.h"
#include "autograd/gradfn.h"
#include "tensor/heap.h"
#include "iter.h"
#include "import.h"
#include "state.h"
#include "tensor/tensor.h"
#include "autograd/op.h"
#include "vm.h"

void ad_value_incref(ad_value v) {
    ad_assert(ad_vtype_valid(v.t));
    if (v.t == AD_TTENSOR) ad_tensor_incref(v.u.tensor);
    else if (ad_is_obj(v)) {
        ad_assert(v.u.o && v.u.o->refcount > 0); /* a reference to a freed object */
        v.u.o->refcount++;
    }
}

void ad_list_free(ad_state *S, ad_list *l) {
    ad_assert(l->len >= 0 && l->len <= l->cap && (l->cap == 0 || l->items));
    ad_gc_untrack(S, &l->gc);
    for (int64_t i = 0; i < l->len; i++) ad_value_decref(S, l->items[i]);
    if (l->names) ad_value_decref(S, ad_list_value(l->names, AD_TTUPLE));
    ad_heap_discharge_objects(S, sizeof *l + (size_t)l->cap * sizeof(ad_value));
    ad_free(S, l->items);
    ad_free(S, l);
}

void ad_cell_free(ad_state *S, ad_cell *c) {
    ad_gc_untrack(S, &c->gc);
    ad_value_decref(S, c->v);
    ad_obj_free(S, c, sizeof *c);
}

ad_cell *ad_cell_new(ad_state *S, ad_value v) {
    ad_cell *c = ad_obj_alloc(S, sizeof *c);
    if (!c) return NULL;
    c->hdr.refcount = 1;
    c->v = v;
    ad_value_incref(v);
    ad_gc_track(S, &c->gc, AD_TCELL);
    return c;
}

/* Containers go through the collector's release, which frees them and what
 * they hold iteratively: a chain of a million nested lists is no deeper on
 * the C stack than one. */
void ad_value_decref(ad_state *S, ad_value v) {
    ad_assert(ad_vtype_valid(v.t));
    if (!ad_is_obj(v)) return;
    ad_assert(v.u.o != NULL);
    if (v.t == AD_TTENSOR) { ad_tensor_decref(S, v.u.tensor); return; }
    ad_assert(v.u.o->refcount > 0); /* released more often than referenced */
    if (--v.u.o->refcount > 0) return;
    switch (v.t) {
    case AD_TSTR: ad_heap_discharge_objects(S, sizeof(ad_str) + v.u.s->len + 1); ad_free(S, v.u.s); break;
    case AD_TLIST: case AD_TTUPLE: ad_gc_release(S, &v.u.l->gc); break;
    case AD_TSLICE:
        ad_value_decref(S, v.u.sl->start); ad_value_decref(S, v.u.sl->stop);
        ad_value_decref(S, v.u.sl->step); ad_heap_discharge_objects(S, sizeof(ad_slice)); ad_free(S, v.u.sl); break;
    case AD_TCELL: ad_gc_release(S, &v.u.cell->gc); break;
    case AD_TFUNC: ad_gc_release(S, &v.u.fn->gc); break;
    case AD_TBUILTIN: ad_vm_builtin_free(S, v.u.bi); break;
    case AD_TOP: ad_opdef_free(S, v.u.op); break;
    case AD_TDICT: ad_gc_release(S, &v.u.d->gc); break;
    case AD_TGRADFN: ad_gradfn_free(S, v.u.gf); break;
    case AD_TMODULE: ad_module_free(S, v.u.mod); break;
    case AD_TITER: ad_gc_release(S, &v.u.it->gc); break;
    default: break;
    }
}

void *ad_obj_alloc(ad_state *S, size_t n) {
    if (ad_heap_charge_objects(S, n)) return NULL;
    void *p = ad_calloc(S, 1, n);
    if (!p) ad_heap_discharge_objects(S, n);
    return p;
}

void ad_obj_free(ad_state *S, void *p, size_t n) {
    if (!p) return;
    ad_heap_discharge_objects(S, n);
    ad_free(S, p);
}

ad_str *ad_str_alloc(ad_state *S, size_t len) {
    if (len > AD_MAX_STRING) { ad_error(S, "string too long (%zu bytes; the limit is %zu)", len, (size_t)AD_MAX_STRING); return NULL; }
    if (ad_heap_charge_objects(S, sizeof(ad_str) + len + 1)) return NULL;
    ad_str *s = ad_malloc(S, sizeof *s + len + 1);
    if (!s) { ad_heap_discharge_objects(S, sizeof(ad_str) + len + 1); return NULL; }
    s->hdr.refcount = 1;
    s->len = len;
    s->data[len] = '\0';
    return s;
}

ad_str *ad_str_new(ad_state *S, const char *data, size_t len) {
    ad_str *s = ad_str_alloc(S, len);
    if (s && len) memcpy(s->data, data, len);
    return s;
}

int ad_string_value(ad_state *S, const char *data, size_t len, ad_value *out) {
    ad_str *s = ad_str_new(S, data, len);
    if (!s) return S->errcode;
    out->t = AD_TSTR; out->u.s = s;
    return ADDSL_OK;
}

ad_list *ad_list_new(ad_state *S, ad_vtype kind, int64_t len) {
    (void)kind;
    if (len < 0 || len > AD_MAX_LIST) { ad_error(S, "list too long (%lld items; the limit is %lld)", (long long)len, (long long)AD_MAX_LIST); return NULL; }
    size_t bytes = sizeof(ad_list) + (size_t)len * sizeof(ad_value);
    if (ad_heap_charge_objects(S, bytes)) return NULL;
    ad_list *l = ad_malloc(S, sizeof *l);
    if (!l) { ad_heap_discharge_objects(S, bytes); return NULL; }
    l->hdr.refcount = 1;
    l->len = len; l->cap = len;
    l->items = NULL;
    l->names = NULL;
    if (len) {
        l->items = ad_calloc(S, (size_t)len, sizeof(ad_value));
        if (!l->items) { ad_free(S, l); ad_heap_discharge_objects(S, bytes); return NULL; }
        for (int64_t i = 0; i < len; i++) l->items[i] = ad_none();
    }
    ad_gc_track(S, &l->gc, AD_TLIST);
    return l;
}

ad_list *ad_list_copy(ad_state *S, const ad_list *src, ad_vtype kind) {
    ad_assert(kind == AD_TLIST || kind == AD_TTUPLE);

    ad_list *l = ad_list_new(S, kind, src->len);
    if (!l) return NULL;
    for (int64_t i = 0; i < src->len; i++) { l->items[i] = src->items[i]; ad_value_incref(l->items[i]); }
    return l;
}

int ad_list_push(ad_state *S, ad_list *l, ad_value v) {
    ad_assert(ad_vtype_valid(v.t) && l->len >= 0 && l->len <= l->cap);
    if (l->len == l->cap) {
        if (l->len >= AD_MAX_LIST) { ad_value_decref(S, v); return ad_error(S, "list too long (the limit is %lld items)", (long long)AD_MAX_LIST); }
        int64_t cap = l->cap ? l->cap * 2 : 4;
        size_t more = (size_t)(cap - l->cap) * sizeof(ad_value);
        if (ad_heap_charge_objects(S, more)) { ad_value_decref(S, v); return ADDSL_ENOMEM; }
        ad_value *p = ad_realloc(S, l->items, (size_t)cap * sizeof *p);
        if (!p) { ad_heap_discharge_objects(S, more); ad_value_decref(S, v); return ADDSL_ENOMEM; }
        l->items = p; l->cap = cap;
    }
    l->items[l->len++] = v;
    return ADDSL_OK;
}

/* ---- named tuples ---- */

ad_list *ad_names_new(ad_state *S, const char *type, int nfields, const char *const *fields) {
    ad_list *n = ad_list_new(S, AD_TTUPLE, nfields + 1);
    if (!n) return NULL;
    for (int i = 0; i <= nfields; i++) {
        const char *s = i ? fields[i - 1] : type;
        if (ad_string_value(S, s, strlen(s), &n->items[i])) { ad_value_decref(S, ad_list_value(n, AD_TTUPLE)); return NULL; }
    }
    return n;
}

void ad_tuple_share_names(ad_list *t, ad_list *names) {
    ad_assert(names->hdr.refcount > 0 && names->len >= 1);
    if (t->names || names->len != t->len + 1) return; /* not this tuple's shape: stays plain */
    names->hdr.refcount++;
    t->names = names;
}

int ad_tuple_name(ad_state *S, ad_list *t, const char *type, const char *const *fields) {
    ad_list *n = ad_names_new(S, type, (int)t->len, fields);
    if (!n) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    ad_tuple_share_names(t, n);
    ad_value_decref(S, ad_list_value(n, AD_TTUPLE));
    return ADDSL_OK;
}

const ad_value *ad_tuple_field(const ad_list *t, const char *field) {
    if (!t->names) return NULL;
    ad_assert(t->names->len == t->len + 1); /* the type name, then one field per item */
    for (int64_t i = 0; i < t->len; i++)
        if (strcmp(t->names->items[i + 1].u.s->data, field) == 0) return &t->items[i];
    return NULL;
}

const char *ad_type_name(ad_value v) {
    switch (v.t) {
    case AD_TNONE: return "none";
    case AD_TBOOL: return "bool";
    case AD_TINT: case AD_TNUM: return "number";
    case AD_TDTYPE: return "dtype";
    case AD_TELLIPSIS: return "ellipsis";
    case AD_TSTR: return "string";
    case AD_TLIST: return "list";
    case AD_TTUPLE: return "tuple";
    case AD_TSLICE: return "slice";
    case AD_TTENSOR: return "tensor";
    case AD_TFUNC: return "function";
    case AD_TBUILTIN: return "builtin";
    case AD_TOP: return "op";
    case AD_TGRADFN: return "grad_fn";
    case AD_TCELL: return "cell";
    case AD_TDICT: return "dict";
    case AD_TMODULE: return "module";
    case AD_TITER: return "iterator";
    }
    ad_assert(!"a value with an unknown tag");
    return "?";
}

bool ad_truthy(ad_value v) {
    switch (v.t) {
    case AD_TNONE: return false;
    case AD_TBOOL: return v.u.b;
    case AD_TINT: case AD_TNUM: return v.u.n != 0;
    case AD_TSTR: return v.u.s->len != 0;
    case AD_TLIST: case AD_TTUPLE: return v.u.l->len != 0;
    case AD_TDICT: return v.u.d->len != 0;
    default: return true;
    }
}

/* Equality walking at most AD_MAX_NEST_DEPTH levels of containers; past
 * that *deep is set and the answer is false. */
static bool values_equal(ad_value a, ad_value b, int depth, bool *deep) {
    ad_assert(ad_vtype_valid(a.t) && ad_vtype_valid(b.t) && depth >= 0);

    if (ad_is_number(a) && ad_is_number(b)) return a.u.n == b.u.n;
    if (ad_is_number(a) && b.t == AD_TBOOL) return a.u.n == (double)b.u.b;
    if (a.t == AD_TBOOL && ad_is_number(b)) return (double)a.u.b == b.u.n;
    if (a.t != b.t) return false;
    switch (a.t) {
    case AD_TNONE: case AD_TELLIPSIS: return true;
    case AD_TBOOL: return a.u.b == b.u.b;
    case AD_TDTYPE: return a.u.dtype == b.u.dtype;
    case AD_TSTR: return a.u.s->len == b.u.s->len && memcmp(a.u.s->data, b.u.s->data, a.u.s->len) == 0;
    case AD_TLIST: case AD_TTUPLE:
        if (a.u.l == b.u.l) return true;
        if (a.u.l->len != b.u.l->len) return false;
        if (depth >= AD_MAX_NEST_DEPTH) { *deep = true; return false; }
        for (int64_t i = 0; i < a.u.l->len; i++)
            if (!values_equal(a.u.l->items[i], b.u.l->items[i], depth + 1, deep)) return false;
        return true;
    case AD_TDICT: return ad_dict_equal(a.u.d, b.u.d, depth, deep);
    case AD_TGRADFN: /* two reads of one t.grad_fn are the same node, as in torch */
        return a.u.gf->node == b.u.gf->node && a.u.gf->leaf == b.u.gf->leaf;
    default: return a.u.o == b.u.o;
    }
}

bool ad_values_equal_at(ad_value a, ad_value b, int depth, bool *deep) { return values_equal(a, b, depth, deep); }

bool ad_values_equal(ad_value a, ad_value b) {
    bool deep = false;
    return values_equal(a, b, 0, &deep);
}

int ad_values_eq(ad_state *S, ad_value a, ad_value b, bool *out) {
    bool deep = false;
    *out = values_equal(a, b, 0, &deep);
    if (deep)
        return ad_error(S, "RecursionError: maximum recursion depth exceeded in comparison (containers nested more than %d deep)",
                        AD_MAX_NEST_DEPTH);
    return ADDSL_OK;
}

/* Shortest text that reads back as the same double, up to 16 significant
 * digits; integral values have no fraction. Stopping at 16 digits hides the
 * last-bit noise of libm and of decimal fractions (cbrt(27.0) prints 3, as
 * the contract says, and 0.1 + 0.2 prints 0.3) at the price of not always
 * reading back bit-exactly; tensors and save() keep every bit. */
int ad_format_number(char *out, size_t n, double x) {
    if (isnan(x)) return snprintf(out, n, "nan");
    if (isinf(x)) return snprintf(out, n, x > 0 ? "inf" : "-inf");
    if (x == floor(x) && fabs(x) < 1e16) return snprintf(out, n, "%.0f", x == 0 ? 0.0 : x);
    for (int prec = 1; prec <= 16; prec++) {
        snprintf(out, n, "%.*g", prec, x);
        if (strtod(out, NULL) == x) break;
    }
    return (int)strlen(out);
}

/* As PyTorch prints torch.return_types: each field on its own line. */
static int format_named(ad_state *S, const ad_list *t, ad_buf *b) {
    ad_buf_printf(b, "torch.return_types.%s(", t->names->items[0].u.s->data);
    for (int64_t i = 0; i < t->len; i++) {
        ad_buf_printf(b, "\n%s=", t->names->items[i + 1].u.s->data);
        int rc = ad_value_format(S, t->items[i], b, true);
        if (rc) return rc;
        if (i + 1 < t->len) ad_buf_puts(b, ",");
    }
    return ad_buf_puts(b, ")");
}

static int format_items(ad_state *S, ad_value v, ad_buf *b) {
    bool tuple = v.t == AD_TTUPLE;
    if (tuple && v.u.l->names) return format_named(S, v.u.l, b);
    ad_buf_puts(b, tuple ? "(" : "[");
    for (int64_t i = 0; i < v.u.l->len; i++) {
        if (i) ad_buf_puts(b, ", ");
        int rc = ad_value_format(S, v.u.l->items[i], b, true);
        if (rc) return rc;
    }
    if (tuple && v.u.l->len == 1) ad_buf_puts(b, ",");
    return ad_buf_puts(b, tuple ? ")" : "]");
}

/* A list met again inside itself prints as [...] (a tuple as (...)), as in
 * Python; nesting deeper than AD_MAX_NEST_DEPTH is a RecursionError. */
static int format_seq(ad_state *S, ad_value v, ad_buf *b) {
    ad_gclink *g = &v.u.l->gc;
    if (g->flags & AD_GC_BUSY) return ad_buf_puts(b, v.t == AD_TTUPLE ? "(...)" : "[...]");
    int rc = ad_nest_enter(S, "while getting the str of an object");
    if (rc) return rc;
    g->flags |= AD_GC_BUSY;
    rc = format_items(S, v, b);
    g->flags &= (uint8_t)~AD_GC_BUSY;
    ad_nest_leave(S);
    return rc;
}

static int format_quoted(ad_buf *b, const ad_str *s) {
    ad_buf_puts(b, "\"");
    for (size_t i = 0; i < s->len; i++) {
        char c = s->data[i];
        switch (c) {
        case '\n': ad_buf_puts(b, "\\n"); break;
        case '\t': ad_buf_puts(b, "\\t"); break;
        case '"': ad_buf_puts(b, "\\\""); break;
        case '\\': ad_buf_puts(b, "\\\\"); break;
        default: ad_buf_add(b, &c, 1);
        }
    }
    return ad_buf_puts(b, "\"");
}

int ad_value_format(ad_state *S, ad_value v, ad_buf *b, bool quote_str) {
    char num[64];
    switch (v.t) {
    case AD_TNONE: return ad_buf_puts(b, "none");
    case AD_TBOOL: return ad_buf_puts(b, v.u.b ? "true" : "false");
    case AD_TINT: case AD_TNUM: ad_format_number(num, sizeof num, v.u.n); return ad_buf_puts(b, num);
    case AD_TDTYPE: return ad_buf_puts(b, ad_dtype_name((ad_dtype)v.u.dtype));
    case AD_TELLIPSIS: return ad_buf_puts(b, "...");
    case AD_TSTR: return quote_str ? format_quoted(b, v.u.s) : ad_buf_add(b, v.u.s->data, v.u.s->len);
    case AD_TLIST: case AD_TTUPLE: return format_seq(S, v, b);
    case AD_TSLICE: return ad_buf_puts(b, "<slice>");
    case AD_TTENSOR: return ad_tensor_format(S, v.u.tensor, b);
    case AD_TFUNC: return ad_buf_printf(b, "<function %s>", ad_vm_closure_name(v.u.fn));
    case AD_TBUILTIN: return ad_buf_printf(b, "<builtin %s>", v.u.bi->name);
    case AD_TOP: return ad_buf_printf(b, "<op %s>", v.u.op->name);
    case AD_TGRADFN: return ad_gradfn_format(v.u.gf, b);
    case AD_TCELL: return ad_buf_puts(b, "<cell>");
    case AD_TDICT: return ad_dict_format(S, v.u.d, b);
    case AD_TMODULE: return ad_buf_printf(b, "<module \"%s\">", v.u.mod->path);
    case AD_TITER: return ad_buf_printf(b, "<%s>", v.u.it->name);
    }
    return ADDSL_OK;
}
