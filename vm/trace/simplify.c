/* trace/simplify.c: algebraic simplification of a compiled program (a pass of
 * vm/trace/trace.c): identities that the VJP formulas leave behind, each exact. */
#include "trace/simplify.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "tensor/device.h"
#include "jit/fuse.h"
#include "autograd/op.h"
#include "tensor/tensor.h"
#include "vm.h"

/* What each rule rewrites (counted and printed in this order). */
static const char *const rule_names[AD_SIMP_NRULES] = {
    "pow(x, 1)", "pow(x, 2)", "mul(x, 1)", "div(x, 1)", "add/sub(x, 0)", "neg(neg(x))", "add/sub(a, neg(b))",
    "add(a, index_add_at(0, i, v))",
};

typedef struct simp {
    ad_state *S;
    ad_trace *T;
    const bool *folded;    /* per value: a constant made by constant folding */
    int *rep;              /* per value: the value that replaces it */
    bool *bad_reader;      /* per value: read by a record other than a no_grad op or a comparison, or returned */
    bool *layout_reader;   /* per value: read by a record that may look at its strides (not element-wise) */
    const void **written;  /* storages some effect record reads or writes (sorted) */
    int nwritten;
} simp;

static int cmp_ptr(const void *a, const void *b) {
    uintptr_t x = (uintptr_t) * (const void *const *)a, y = (uintptr_t) * (const void *const *)b;
    return x < y ? -1 : x > y;
}

static ad_tensor *tensor_of(const ad_trace *T, int v) {
    return v >= 0 && v < T->nvals && T->vals[v].v.t == AD_TTENSOR ? T->vals[v].v.u.tensor : NULL;
}

static void mark(const ad_targ *a, bool *set) {
    if (a->ref >= 0) set[a->ref] = true;
    for (int i = 0; i < a->nsub; i++) mark(&a->sub[i], set);
}

static void replace(ad_targ *a, const int *rep) {
    if (a->ref >= 0) a->ref = rep[a->ref];
    for (int i = 0; i < a->nsub; i++) replace(&a->sub[i], rep);
}

static int add_storages(simp *s, const ad_targ *a, int *cap) {
    const ad_tensor *t = tensor_of(s->T, a->ref);
    if (t) {
        if (s->nwritten == *cap) {
            int c = *cap ? 2 * *cap : 32;
            const void **p = ad_realloc(s->S, (void *)s->written, (size_t)c * sizeof *p);
            if (!p) return -1;
            s->written = p;
            *cap = c;
        }
        s->written[s->nwritten++] = t->storage;
    }
    for (int i = 0; i < a->nsub; i++) if (add_storages(s, &a->sub[i], cap)) return -1;
    return 0;
}

static bool written(const simp *s, int v) {
    const ad_tensor *t = tensor_of(s->T, v);
    if (!t) return true;
    const void *key = t->storage;
    return s->nwritten && bsearch(&key, s->written, (size_t)s->nwritten, sizeof *s->written, cmp_ptr);
}

static bool shipped(ad_value v, int id);

static bool live(const ad_tnode *n) { return !n->dead && !n->folded; }

/* The shipped op 'id' (its forward is the kernel builtin of that name, as
 * the plan requires of the records it fuses), not a user's op of that name. */
static bool is_op(const ad_tnode *n, int id, int nargs) {
    if (n->kind != AD_TN_OP || !live(n) || n->effect || n->random || n->kw || n->nargs != nargs) return false;
    return n->op == id && shipped(n->fn, id);
}

/* A rule applies to a record that autograd does not see (under no_grad,
 * as a flattened backward's are) and whose output is one tensor. */
static bool candidate(const ad_tnode *n) {
    return n->kind == AD_TN_OP && live(n) && !n->grad_enabled && !n->effect && !n->random && n->out.ref >= 0 &&
           !n->out.sub;
}

/* Whether argument 'a' is the number 'c' (1 or 0), or a constant tensor
 * (given or folded) of that value everywhere; 'negzero': -0.0 (for floats;
 * an integer 0 counts, which only integer outputs accept: see add_zero). */
static bool is_const(const simp *s, const ad_targ *a, double c, bool negzero) {
    if (a->sub) return false;
    if (a->ref < 0) {
        if (a->c.t == AD_TINT) return !negzero && (double)a->c.u.n == c;
        if (a->c.t != AD_TNUM) return false;
        return a->c.u.n == c && (c != 0 || (signbit(a->c.u.n) != 0) == negzero);
    }
    const ad_tval *x = &s->T->vals[a->ref];
    if (x->kind != AD_TV_CONST && !s->folded[a->ref]) return false;
    const ad_tensor *t = tensor_of(s->T, a->ref);
    if (!t || written(s, a->ref) || ad_tensor_device(t) != 0 || t->numel > 4096) return false;
    ad_tensor *c2 = ad_tensor_contiguous(s->S, (ad_tensor *)t);
    if (!c2) { ad_clear_error(s->S); return false; }
    const void *p = ad_tensor_data(c2);
    bool ok = true;
    for (int64_t i = 0; i < t->numel && ok; i++) {
        double v;
        switch (t->dtype) {
        case AD_FLOAT32: v = ((const float *)p)[i]; break;
        case AD_FLOAT64: v = ((const double *)p)[i]; break;
        case AD_INT64: v = (double)((const int64_t *)p)[i]; ok = !negzero; break;
        default: v = ((const bool *)p)[i]; break;
        }
        ok = ok && v == c && (c != 0 || t->dtype == AD_INT64 || (signbit(v) != 0) == negzero);
    }
    ad_tensor_decref(s->S, c2);
    return ok;
}

/* Output 'o' may be replaced by value 'x': the same dtype, shape and device,
 * x laid out as o is (contiguous, so a reader that looks at strides sees
 * eager's) unless o's readers are all element-wise, neither one's storage written by the program, and o read only
 * by records that ignore requires_grad and identity (no_grad ops,
 * comparisons), not returned. */
static bool may_alias(const simp *s, int o, int x) {
    if (x < 0 || s->bad_reader[o]) return false;
    const ad_tensor *to = tensor_of(s->T, o), *tx = tensor_of(s->T, x);
    if (!to || !tx || to->dtype != tx->dtype || ad_tensor_device(tx) != 0 || ad_tensor_device(to) != 0) return false;
    if (!ad_shape_equal(to->ndim, to->shape, tx->ndim, tx->shape)) return false;
    if (s->layout_reader[o] && !ad_tensor_is_contiguous(tx)) return false;
    return !written(s, o) && !written(s, x);
}

static bool is_float(const simp *s, int v) {
    const ad_tensor *t = tensor_of(s->T, v);
    return t && (t->dtype == AD_FLOAT32 || t->dtype == AD_FLOAT64);
}

/* The record that makes value v, when it is a live neg() this pass may read
 * through (its operand not written, so reading it later reads the same). */
static const ad_tnode *neg_of(const simp *s, int v) {
    if (v < 0 || s->T->vals[v].kind != AD_TV_NODE) return NULL;
    const ad_tnode *m = &s->T->nodes[s->T->vals[v].node];
    if (!is_op(m, AD_OP_neg, 1) || m->out.ref != v || m->args[0].ref < 0 || written(s, m->args[0].ref)) return NULL;
    return m;
}

static bool shipped(ad_value v, int id) {
    if (v.t != AD_TOP) return false;
    const ad_opdef *op = v.u.op;
    const char *name = ad_op_id_name(id);
    return op->id == id && name && op->forward.t == AD_TBUILTIN && op->forward.u.bi->kid < 0 &&
           strcmp(op->forward.u.bi->name, name) == 0;
}

/* The shipped op 'name': from a record of the program, else the library's
 * global of that name (a script's own 'mul' shadows it, not replaces it). */
static ad_value find_op(ad_state *S, const ad_trace *T, int id, int nargs) {
    for (int i = 0; i < T->nnodes; i++)
        if (is_op(&T->nodes[i], id, nargs)) return T->nodes[i].fn;
    int slot = ad_global_slot(S, ad_op_id_name(id), false);
    if (slot < 0) { ad_clear_error(S); return ad_none(); }
    ad_value v = S->globals->values[slot];
    return shipped(v, id) ? v : ad_none();
}

static void set_fn(ad_state *S, ad_tnode *n, ad_value fn) {
    ad_value_incref(fn);
    ad_value_decref(S, n->fn);
    n->fn = fn;
    n->op = ad_trace_fn_id(fn);
}

/* x + 0 is x for integers only: for floats -0.0 + 0 is +0.0, so a float
 * add keeps a +0 (it is dropped only for -0.0, which is exact: x + -0.0
 * is x for every x, -0.0 and +0.0 included); x - 0 is x for both. */
static int add_zero(const simp *s, const ad_tnode *n, int o) {
    bool f = is_float(s, o);
    if (is_op(n, AD_OP_sub, 2) && is_const(s, &n->args[1], 0, false) && may_alias(s, o, n->args[0].ref)) return n->args[0].ref;
    if (!is_op(n, AD_OP_add, 2)) return -1;
    for (int k = 0; k < 2; k++) {
        const ad_targ *c = &n->args[1 - k];
        bool zero = f ? is_const(s, c, 0, true) : is_const(s, c, 0, false);
        if (zero && may_alias(s, o, n->args[k].ref)) return n->args[k].ref;
    }
    return -1;
}

/* The value that record n's output equals exactly, or -1; *rule set. */
static int alias_rule(const simp *s, const ad_tnode *n, int *rule) {
    int o = n->out.ref;
    if (is_op(n, AD_OP_pow, 2) && is_const(s, &n->args[1], 1, false) && may_alias(s, o, n->args[0].ref)) {
        *rule = AD_SIMP_POW1;
        return n->args[0].ref;
    }
    if (is_op(n, AD_OP_mul, 2))
        for (int k = 0; k < 2; k++)
            if (is_const(s, &n->args[1 - k], 1, false) && may_alias(s, o, n->args[k].ref)) {
                *rule = AD_SIMP_MUL1;
                return n->args[k].ref;
            }
    if (is_op(n, AD_OP_div, 2) && is_const(s, &n->args[1], 1, false) && may_alias(s, o, n->args[0].ref)) {
        *rule = AD_SIMP_DIV1;
        return n->args[0].ref;
    }
    int z = add_zero(s, n, o);
    if (z >= 0) { *rule = AD_SIMP_ADD0; return z; }
    const ad_tnode *m;
    if (is_op(n, AD_OP_neg, 1) && (m = neg_of(s, n->args[0].ref)) && may_alias(s, o, m->args[0].ref)) {
        *rule = AD_SIMP_NEGNEG;
        return m->args[0].ref;
    }
    return -1;
}

/* Rewrites in place: pow(x, 2) -> mul(x, x) (the pow kernel computes x * x
 * for that exponent, so the values are the same); a + neg(b) -> a - b,
 * neg(a) + b -> b - a, a - neg(b) -> a + b (IEEE defines a - b as a + -b;
 * only a NaN's sign bit may differ). Returns the rule, or -1. */
static int rewrite_rule(simp *s, ad_tnode *n) {
    if (is_op(n, AD_OP_pow, 2) && n->args[0].ref >= 0 && is_float(s, n->args[0].ref) && is_const(s, &n->args[1], 2, false) &&
        is_float(s, n->out.ref) && tensor_of(s->T, n->out.ref)->dtype == tensor_of(s->T, n->args[0].ref)->dtype) {
        ad_value mul = find_op(s->S, s->T, AD_OP_mul, 2);
        if (mul.t != AD_TOP) return -1;
        set_fn(s->S, n, mul);
        ad_value_decref(s->S, n->args[1].c);
        n->args[1] = (ad_targ){.ref = n->args[0].ref, .c = ad_none()};
        return AD_SIMP_POW2;
    }
    bool add = is_op(n, AD_OP_add, 2), sub = is_op(n, AD_OP_sub, 2);
    if (!add && !sub) return -1;
    const ad_tnode *m1 = neg_of(s, n->args[1].ref), *m0 = add ? neg_of(s, n->args[0].ref) : NULL;
    if (!m1 && !m0) return -1;
    ad_value fn = find_op(s->S, s->T, add ? AD_OP_sub : AD_OP_add, 2);
    if (fn.t != AD_TOP) return -1;
    set_fn(s->S, n, fn);
    if (m1) n->args[1].ref = m1->args[0].ref;
    else { n->args[0].ref = n->args[1].ref; n->args[1].ref = m0->args[0].ref; }
    return AD_SIMP_NEGADD;
}

/* The live index_add_at(base, idx, v) record that makes float value x
 * (idx constant ints and slices, as the plan's kernel takes it), or NULL. */
static const ad_tnode *addat_of(const simp *s, int x) {
    if (x < 0 || s->T->vals[x].kind != AD_TV_NODE || written(s, x) || !is_float(s, x)) return NULL;
    const ad_tnode *m = &s->T->nodes[s->T->vals[x].node];
    if (!is_op(m, AD_OP_index_add_at, 3) || m->grad_enabled || m->out.ref != x || m->args[0].ref < 0 || m->args[1].ref >= 0 ||
        m->args[1].sub || m->args[2].sub)
        return NULL;
    return m;
}

/* Argument b is a constant (given or folded) of +0.0 everywhere, at any size
 * (is_const stops at 4096 elements: the trajectory's zeros are 14336). */
static bool zeros_arg(const simp *s, const ad_targ *b) {
    if (b->ref < 0 || b->sub || (s->T->vals[b->ref].kind != AD_TV_CONST && !s->folded[b->ref])) return false;
    const ad_tensor *t = tensor_of(s->T, b->ref);
    if (!t || written(s, b->ref) || ad_tensor_device(t) != 0 || !ad_tensor_is_contiguous(t) ||
        (t->dtype != AD_FLOAT32 && t->dtype != AD_FLOAT64))
        return false;
    const unsigned char *p = ad_tensor_data(t);
    size_t bytes = (size_t)t->numel * (t->dtype == AD_FLOAT64 ? 8 : 4);
    for (size_t i = 0; i < bytes; i++)
        if (p[i]) return false;
    return true;
}

/* Value x holds no -0.0: index_add_at's of a +0.0 constant, one into
 * another (0 + v and a + v are -0.0 only when both operands are). */
static bool no_negzero(const simp *s, int x) {
    for (int depth = 0; depth < 1 << 16; depth++) {
        const ad_tnode *m = addat_of(s, x);
        if (!m) return false;
        if (zeros_arg(s, &m->args[0])) return true;
        x = m->args[0].ref;
    }
    return false;
}

static int reads_of(const ad_targ *a, int v) {
    int c = a->ref == v;
    for (int k = 0; k < a->nsub; k++) c += reads_of(&a->sub[k], v);
    return c;
}

/* How many reads of value v the live records and the result make. */
static int readers(const simp *s, int v) {
    int c = reads_of(&s->T->result, v);
    for (int i = 0; i < s->T->nnodes; i++) {
        const ad_tnode *n = &s->T->nodes[i];
        if (live(n))
            for (int k = 0; k < n->nargs; k++) c += reads_of(&n->args[k], v);
    }
    return c;
}

/* a in general: index_add_at(zeros, i, v) (read by n only, after a is
 * made) becomes index_add_at(a, i, v) and n add(it, 0): a + 0 outside the
 * selection, (a + v) + 0 inside, which is a + (0 + v) for every a and v
 * (-0.0 only when a and v are, and + 0 makes it +0.0 on both sides; nan
 * as before). The plan runs the index_add_at in place when a dies there:
 * one pass over a instead of a copy of the zeros and a pass over a and it. */
static bool pad_general(simp *s, ad_tnode *n, ad_tnode *m, int a) {
    int p = m->out.ref, mi = (int)(m - s->T->nodes);
    if (s->T->vals[a].kind == AD_TV_NODE && s->T->vals[a].node >= mi) return false;
    if (readers(s, p) != 1) return false;
    ad_value_decref(s->S, m->args[0].c);
    m->args[0] = (ad_targ){.ref = a, .c = ad_none()};
    n->args[0] = (ad_targ){.ref = p, .c = ad_none()};
    n->args[1] = (ad_targ){.ref = -1, .c = ad_num(0.0)};
    return true;
}

/* The VJPs of slices and chunks, summed: add(a, index_add_at(zeros, i, v))
 * -> index_add_at(a, i, v) (a pass over a's selection instead of a copy
 * of the zeros and a pass over all), where a holds no -0.0: then a + 0 is
 * a outside the selection and a + (0 + v) is a + v inside it, nan
 * included (a's comes first as in eager's add). Rewritten in place (three
 * arguments); the index_add_at left unread is dead code. Else pad_general.
 * Returns the rule, or -1. */
static int pad_rule(simp *s, ad_tnode *n) {
    if (!is_op(n, AD_OP_add, 2) || n->args[0].ref < 0 || n->args[1].ref < 0 || n->args[0].sub || n->args[1].sub) return -1;
    int a = n->args[0].ref, o = n->out.ref;
    ad_tnode *m = (ad_tnode *)addat_of(s, n->args[1].ref);
    if (!m) return -1;
    bool plain = no_negzero(s, a);
    if (!zeros_arg(s, &m->args[0])) return -1;
    const ad_tensor *to = tensor_of(s->T, o), *ta = tensor_of(s->T, a), *tp = tensor_of(s->T, n->args[1].ref);
    if (!to || !ta || !tp || to->dtype != ta->dtype || to->dtype != tp->dtype || written(s, a) ||
        !ad_shape_equal(to->ndim, to->shape, ta->ndim, ta->shape) || !ad_shape_equal(to->ndim, to->shape, tp->ndim, tp->shape))
        return -1;
    if (!plain) return pad_general(s, n, m, a) ? AD_SIMP_PADADD : -1;
    ad_targ *args = ad_realloc(s->S, n->args, 3 * sizeof *args);
    if (!args) return -1;
    n->args = args;
    args[1] = (ad_targ){.ref = -1, .c = m->args[1].c};
    ad_value_incref(args[1].c);
    args[2] = (ad_targ){.ref = m->args[2].ref, .c = m->args[2].c};
    ad_value_incref(args[2].c);
    n->nargs = 3;
    set_fn(s->S, n, m->fn);
    return AD_SIMP_PADADD;
}

/* A record whose result depends on its operands' values only, not their
 * strides: the element-wise ops the plan fuses, where, comparisons. */
static bool elementwise(const ad_tnode *n) {
    if (n->kind == AD_TN_COMPARE) return true;
    if (n->kind != AD_TN_OP) return false;
    return (ad_fuse_find(n->op) >= 0 || n->op == AD_OP_where) && is_op(n, n->op, n->nargs);
}

static int setup(simp *s) {
    ad_trace *T = s->T;
    size_t nv = (size_t)(T->nvals ? T->nvals : 1);
    s->rep = ad_malloc(s->S, nv * sizeof *s->rep);
    s->bad_reader = ad_calloc(s->S, nv, sizeof *s->bad_reader);
    s->layout_reader = ad_calloc(s->S, nv, sizeof *s->layout_reader);
    if (!s->rep || !s->bad_reader || !s->layout_reader) return -1;
    for (int v = 0; v < T->nvals; v++) s->rep[v] = v;
    mark(&T->result, s->bad_reader);
    int cap = 0;
    for (int i = 0; i < T->nnodes; i++) {
        const ad_tnode *n = &T->nodes[i];
        if (n->dead) continue;
        if (n->effect)
            for (int k = 0; k < n->nargs; k++) if (add_storages(s, &n->args[k], &cap)) return -1;
        if (n->folded) continue;
        bool plain = (n->kind == AD_TN_OP && !n->grad_enabled && !n->effect) || n->kind == AD_TN_COMPARE;
        if (!plain) for (int k = 0; k < n->nargs; k++) mark(&n->args[k], s->bad_reader);
        if (!elementwise(n)) for (int k = 0; k < n->nargs; k++) mark(&n->args[k], s->layout_reader);
    }
    if (s->nwritten) qsort((void *)s->written, (size_t)s->nwritten, sizeof *s->written, cmp_ptr);
    return 0;
}

int ad_simplify(ad_state *S, ad_trace *T, const bool *folded) {
    simp s = {.S = S, .T = T, .folded = folded};
    int total = 0;
    if (setup(&s) == 0) {
        for (int i = 0; i < T->nnodes; i++) {
            ad_tnode *n = &T->nodes[i];
            if (n->dead) continue;
            for (int k = 0; k < n->nargs; k++) replace(&n->args[k], s.rep);
            if (!candidate(n)) continue;
            int rule = -1, x = alias_rule(&s, n, &rule);
            if (x >= 0) {
                s.rep[n->out.ref] = x;
                n->dead = true;
            } else if ((rule = rewrite_rule(&s, n)) < 0) rule = pad_rule(&s, n);
            if (rule < 0) continue;
            T->simplified[rule]++;
            total++;
        }
        replace(&T->result, s.rep);
    }
    ad_clear_error(S);
    ad_free(S, s.rep);
    ad_free(S, s.bad_reader);
    ad_free(S, s.layout_reader);
    ad_free(S, (void *)s.written);
    return total;
}

void ad_simplify_print(const ad_trace *T, ad_buf *b) {
    int total = 0;
    for (int r = 0; r < AD_SIMP_NRULES; r++) total += T->simplified[r];
    if (!total) return;
    ad_buf_printf(b, "  simplified %d record%s:", total, total == 1 ? "" : "s");
    const char *sep = " ";
    for (int r = 0; r < AD_SIMP_NRULES; r++) {
        if (!T->simplified[r]) continue;
        ad_buf_printf(b, "%s%s %d", sep, rule_names[r], T->simplified[r]);
        sep = ", ";
    }
    ad_buf_puts(b, "\n");
}
