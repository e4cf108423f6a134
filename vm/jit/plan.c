/* jit/plan.c: the static plan of a compiled program: which records run outside
 * the op seam, fused into element-wise groups, and the arena buffer of each
 * value they make (liveness over the final order, reuse by size class, in
 * place where an input dies). */
#include "jit/plan.h"

#include <math.h>
#include <string.h>

#include "ad_assert.h"
#include "tensor/device.h"
#include "jit/fuse.h"
#include "autograd/op.h"
#include "jit/plan_into.h"
#include "jit/plan_ops.h"
#include "trace/trace.h"

/* A record's class: a fuse table index (>= 0), a reduction, or neither. */
enum { CL_SKIP = -3, CL_SEAM = -1, CL_SUM = -10, CL_MEAN = -11, CL_VIEW = -20, CL_KERN = -30, CL_KVIEW = -31 };

/* A record of vm/jit/plan_ops.c: a kernel (a group of its own) or a view (nothing runs). */
static bool is_kern(int cl) { return cl == CL_KERN || cl == CL_KVIEW; }

static bool is_red(int cl) { return cl == CL_SUM || cl == CL_MEAN; }

typedef struct builder {
    ad_state *S;
    const ad_trace *T;
    ad_plan *P;
    int *cls;              /* per record */
    int *grp;              /* per record: its group, or -1 */
    int *first, *last;     /* per group: its first and last record */
    int *space;            /* per group: the value whose shape it iterates over */
    ad_dtype *gdt;         /* per group: the dtype of its registers (a comparison's operands') */
    int ngroups, capgroups;
    /* per value */
    int *made_in;          /* group that makes it, or -1 */
    int *lastg;            /* last group that reads it from outside its own group, or -1 */
    bool *env;             /* read by a record replayed through the seam, or returned */
    int *reg;              /* register in the group being built */
    int *seen;             /* group + 1 whose loads include it */
    int *lastk;            /* last instruction of its group that reads it */
    int *src;              /* a view's value (expand): the value it reads through, or -1 */
    int *kkind;            /* per record: its kernel kind (ad_plkind), or 0 */
    int *ksrc;             /* per value: a kernel-made view's source, or -1 */
    bool *viewed;          /* per value: read through a kernel-made view (never overwritten in place) */
    int *freebuf;          /* buffers free for reuse */
    int nfree;
    double nums[AD_PLAN_MAX_LOADS]; /* numbers the open group loads */
    int nnums;
} builder;

static ad_tensor *val_tensor(const ad_trace *T, int v) {
    if (v < 0 || v >= T->nvals || T->vals[v].v.t != AD_TTENSOR) return NULL;
    return T->vals[v].v.u.tensor;
}

static size_t esize(ad_dtype dt) { return dt == AD_FLOAT64 ? 8 : dt == AD_BOOL ? 1 : 4; }

/* Whether record n can run outside the seam: an element-wise op of the table
 * (or sum/mean of everything) on float tensors of its output's dtype and
 * numbers, with nothing for autograd to record. */
/* The value a fast record's argument k reads: through views to their source. */
static int ref_of(const builder *B, const ad_tnode *n, int k) {
    int v = n->args[k].ref;
    return v >= 0 && B->src[v] >= 0 ? B->src[v] : v;
}

/* nograd: the records run under no_grad whatever they were traced under (a
 * program run in parts), so autograd needs nothing from them. */
static int classify_select(const ad_trace *T, const ad_tnode *n, bool nograd);

static int classify(const ad_trace *T, const ad_tnode *n, bool nograd) {
    if (n->dead || n->folded) return CL_SKIP;
    if (n->kind == AD_TN_COMPARE || (n->kind == AD_TN_OP && n->fn.u.op->id == AD_OP_where))
        return classify_select(T, n, nograd);
    if (n->kind != AD_TN_OP || n->effect || n->random || n->kw || n->out.ref < 0) return CL_SEAM;
    const ad_opdef *op = n->fn.u.op;
    if (op->forward.t != AD_TBUILTIN || op->forward.u.bi->kid >= 0) return CL_SEAM;
    const char *name = op->forward.u.bi->name;
    int cl = CL_SEAM, nin = 1;
    if (strcmp(op->name, name) != 0) return CL_SEAM;
    if (op->id == AD_OP_expand) {
        const ad_tensor *o = val_tensor(T, n->out.ref), *t = val_tensor(T, n->args[0].ref);
        if (!o || !t || t->dtype != o->dtype || (o->dtype != AD_FLOAT32 && o->dtype != AD_FLOAT64) ||
            ad_tensor_device(t) != 0 || (n->grad_enabled && t->requires_grad && !nograd))
            return CL_SEAM;
        return CL_VIEW;
    }
    if (op->id == AD_OP_sum || op->id == AD_OP_mean) {
        if (op->nparams != 4) return CL_SEAM;
        cl = op->id == AD_OP_sum ? CL_SUM : CL_MEAN;
    } else {
        int i = ad_fuse_find(op->id);
        if (i < 0 || op->nparams != ad_fuse_op(i)->nparams) return CL_SEAM;
        cl = i;
        nin = ad_fuse_op(i)->nin;
    }
    if (n->nargs != nin) return CL_SEAM;
    const ad_tensor *o = val_tensor(T, n->out.ref);
    if (!o || (o->dtype != AD_FLOAT32 && o->dtype != AD_FLOAT64) || ad_tensor_device(o) != 0 ||
        (o->requires_grad && !nograd && n->grad_enabled)) /* under no_grad it holds no graph at replay */
        return CL_SEAM;
    if (is_red(cl) && o->ndim != 0) return CL_SEAM;
    int tensors = 0;
    for (int k = 0; k < n->nargs; k++) {
        const ad_targ *a = &n->args[k];
        if (a->sub) return CL_SEAM;
        if (a->ref < 0) {
            if (is_red(cl) || (!ad_is_number(a->c) && a->c.t != AD_TBOOL)) return CL_SEAM;
            continue;
        }
        const ad_tensor *t = val_tensor(T, a->ref);
        if (!t || ad_tensor_device(t) != 0) return CL_SEAM;
        /* one element of the other float dtype (Adam's float64 bias corrections on float32
         * moments): eager converts it to the output's dtype first; so does the load */
        if (t->dtype != o->dtype && (is_red(cl) || t->numel != 1 || (t->dtype != AD_FLOAT32 && t->dtype != AD_FLOAT64)))
            return CL_SEAM;
        if (n->grad_enabled && t->requires_grad && !nograd) return CL_SEAM;
        if (t->dtype == o->dtype) tensors++;
    }
    return tensors ? cl : CL_SEAM;
}

static bool float_cpu(const ad_tensor *t, ad_dtype dt) {
    return t && t->dtype == dt && (dt == AD_FLOAT32 || dt == AD_FLOAT64) && ad_tensor_device(t) == 0;
}

/* A comparison (`a <= 0`: a bool result from operands of one float dtype,
 * numbers converted to it, as ew_binary does) or where(cond, a, b) (a bool
 * condition tensor, operands of the output's float dtype or numbers): the
 * bool values live in the groups' registers a byte per element. */
static int classify_select(const ad_trace *T, const ad_tnode *n, bool nograd) {
    if (n->effect || n->random || n->kw || n->out.ref < 0) return CL_SEAM;
    const ad_tensor *o = val_tensor(T, n->out.ref);
    if (!o || ad_tensor_device(o) != 0) return CL_SEAM;
    int cl;
    ad_dtype dt;
    if (n->kind == AD_TN_COMPARE) {
        static const int ids[] = {AD_OP_eq, AD_OP_ne, AD_OP_lt, AD_OP_le, AD_OP_gt, AD_OP_ge};
        if (n->attr < 0 || n->attr >= 6 || n->nargs != 2 || o->dtype != AD_BOOL) return CL_SEAM;
        cl = ad_fuse_find(ids[n->attr]);
        const ad_tensor *t = val_tensor(T, n->args[0].ref);
        if (!t) t = val_tensor(T, n->args[1].ref);
        if (!t) return CL_SEAM;
        dt = t->dtype;
    } else {
        const ad_opdef *op = n->fn.u.op;
        if (op->forward.t != AD_TBUILTIN || op->forward.u.bi->kid >= 0 || op->id != AD_OP_where ||
            op->nparams != 3 || n->nargs != 3 || n->args[0].ref < 0 || n->args[0].sub)
            return CL_SEAM;
        const ad_tensor *c = val_tensor(T, n->args[0].ref);
        if (!c || c->dtype != AD_BOOL || ad_tensor_device(c) != 0) return CL_SEAM;
        if (o->requires_grad && !nograd && n->grad_enabled) return CL_SEAM;
        cl = ad_fuse_find(AD_OP_where);
        dt = o->dtype;
    }
    int tensors = 0;
    for (int k = n->kind == AD_TN_COMPARE ? 0 : 1; k < n->nargs; k++) {
        const ad_targ *a = &n->args[k];
        if (a->sub) return CL_SEAM;
        if (a->ref < 0) {
            if (!ad_is_number(a->c)) return CL_SEAM;
            continue;
        }
        const ad_tensor *t = val_tensor(T, a->ref);
        if (!float_cpu(t, dt)) return CL_SEAM;
        if (n->kind != AD_TN_COMPARE && n->grad_enabled && t->requires_grad && !nograd) return CL_SEAM;
        tensors++;
    }
    if (n->kind != AD_TN_COMPARE) return float_cpu(o, dt) ? cl : CL_SEAM;
    return tensors ? cl : CL_SEAM;
}

/* NULL while no value has dims (all 0-d): the caller reads none then. */
static const int64_t *vdims(const ad_plan *P, int v) { return ad_plan_dims(P, P->vals[v].dims); }

static int push_dims(ad_state *S, ad_plan *P, int nd, const int64_t *d) {
    if (P->ndims + nd > P->capdims) {
        int cap = P->capdims ? P->capdims * 2 : 64;
        while (cap < P->ndims + nd) cap *= 2;
        int64_t *p = ad_realloc(S, P->dims, (size_t)cap * sizeof *p);
        if (!p) return -1;
        P->dims = p;
        P->capdims = cap;
    }
    int at = P->ndims;
    if (nd) memcpy(P->dims + at, d, (size_t)nd * sizeof *d);
    P->ndims += nd;
    return at;
}

static int fill_values(builder *B) {
    ad_plan *P = B->P;
    for (int v = 0; v < P->nvals; v++) {
        ad_plval *x = &P->vals[v];
        x->group = x->buffer = -1;
        const ad_tensor *t = val_tensor(B->T, v);
        if (!t) { x->ndim = -1; continue; }
        x->ndim = t->ndim;
        x->numel = t->numel;
        x->dtype = t->dtype;
        x->rg = t->requires_grad;
        if ((x->dims = push_dims(B->S, P, t->ndim, t->shape)) < 0) return -1;
    }
    return 0;
}

static void mark_seam_read(const ad_targ *a, bool *read) {
    if (a->ref >= 0) read[a->ref] = true;
    for (int k = 0; k < a->nsub; k++) mark_seam_read(&a->sub[k], read);
}

/* A view is read through only by fast records: one that the seam reads or
 * f returns runs through the seam (made a tensor). Then each view's source. */
static int resolve_views(builder *B) {
    const ad_trace *T = B->T;
    size_t nv = (size_t)(T->nvals ? T->nvals : 1);
    bool *read = ad_calloc(B->S, nv, sizeof *read), *kread = ad_calloc(B->S, nv, sizeof *kread);
    if (!read || !kread) { ad_free(B->S, read); ad_free(B->S, kread); return -1; }
    mark_seam_read(&T->result, read);
    for (int i = T->nnodes - 1; i >= 0; i--) {
        const ad_tnode *n = &T->nodes[i];
        if ((B->cls[i] == CL_VIEW || B->cls[i] == CL_KVIEW) && read[n->out.ref]) B->cls[i] = CL_SEAM;
        if (B->cls[i] == CL_VIEW && kread[n->out.ref]) B->cls[i] = CL_SEAM; /* kernels do not broadcast */
        if (B->cls[i] == CL_SEAM)
            for (int k = 0; k < n->nargs; k++) mark_seam_read(&n->args[k], read);
        if (is_kern(B->cls[i]))
            for (int k = 0; k < n->nargs; k++) mark_seam_read(&n->args[k], kread);
    }
    ad_free(B->S, read);
    ad_free(B->S, kread);
    for (int i = 0; i < T->nnodes; i++)
        if (!is_kern(B->cls[i])) B->kkind[i] = 0; /* made a seam record above */
    for (int i = 0; i < T->nnodes; i++) {
        const ad_tnode *n = &T->nodes[i];
        if (B->cls[i] != CL_KVIEW) continue;
        int v = n->out.ref;
        B->ksrc[v] = n->args[0].ref;
        for (int u = B->ksrc[v]; u >= 0; u = B->ksrc[u]) B->viewed[u] = true;
        B->P->vals[v].where = AD_PL_KVIEW;
        B->P->vals[v].buffer = B->P->nkviews++;
    }
    if (B->P->nkviews && !(B->P->kviews = ad_calloc(B->S, (size_t)B->P->nkviews, sizeof *B->P->kviews))) return -1;
    for (int i = 0; i < T->nnodes; i++) {
        if (B->cls[i] != CL_KVIEW) continue;
        ad_plkview *kv = &B->P->kviews[B->P->vals[T->nodes[i].out.ref].buffer];
        ad_plk_describe(T, &T->nodes[i], B->kkind[i], &kv->kern);
        kv->node = i;
    }
    if (!(B->P->keep = ad_calloc(B->S, nv, sizeof *B->P->keep))) return -1;
    for (size_t v = 0; v < nv; v++) B->P->keep[v] = B->viewed[v];
    for (int i = 0; i < T->nnodes; i++) {
        const ad_tnode *n = &T->nodes[i];
        if (B->cls[i] != CL_VIEW) continue;
        int u = n->args[0].ref;
        B->src[n->out.ref] = B->src[u] >= 0 ? B->src[u] : u;
        B->P->vals[n->out.ref].where = AD_PL_VIEW;
        B->P->vals[n->out.ref].buffer = B->src[n->out.ref];
        for (int w = B->src[n->out.ref]; w >= 0; w = B->ksrc[w]) B->P->keep[w] = true;
    }
    return 0;
}

/* ---- groups ---- */

static double num_of(ad_value c) { return c.t == AD_TBOOL ? (double)c.u.b : c.u.n; }

static bool has_num(const builder *B, double c) {
    for (int i = 0; i < B->nnums; i++) if (B->nums[i] == c) return true;
    return false;
}

static int count_new_loads(const builder *B, const ad_tnode *n, int g) {
    int k = 0;
    for (int i = 0; i < n->nargs; i++) {
        int v = ref_of(B, n, i);
        if (v < 0) k += !has_num(B, num_of(n->args[i].c)) && !(i && n->args[0].ref < 0 && num_of(n->args[0].c) == num_of(n->args[i].c));
        else if (B->made_in[v] != g && B->seen[v] != g + 1) k++;
    }
    return k;
}

static void note_loads(builder *B, const ad_tnode *n, int g) {
    for (int i = 0; i < n->nargs; i++) {
        int v = ref_of(B, n, i);
        if (v >= 0 && B->made_in[v] != g) B->seen[v] = g + 1;
        if (v < 0 && !has_num(B, num_of(n->args[i].c))) B->nums[B->nnums++] = num_of(n->args[i].c);
    }
}

static int open_group(builder *B, int node) {
    if (B->ngroups == B->capgroups) {
        int cap = B->capgroups ? B->capgroups * 2 : 16;
        int *f = ad_realloc(B->S, B->first, (size_t)cap * sizeof *f);
        if (!f) return -1;
        B->first = f;
        int *l = ad_realloc(B->S, B->last, (size_t)cap * sizeof *l);
        if (!l) return -1;
        B->last = l;
        int *sp = ad_realloc(B->S, B->space, (size_t)cap * sizeof *sp);
        if (!sp) return -1;
        B->space = sp;
        ad_dtype *dt = ad_realloc(B->S, B->gdt, (size_t)cap * sizeof *dt);
        if (!dt) return -1;
        B->gdt = dt;
        B->capgroups = cap;
    }
    B->first[B->ngroups] = B->last[B->ngroups] = node;
    return B->ngroups++;
}

/* The shape a record iterates over: its output's, or a reduction's input's. */
static int space_of(const builder *B, const ad_tnode *n) {
    return is_red(B->cls[n - B->T->nodes]) ? n->args[0].ref : n->out.ref;
}

/* The dtype a record computes in: its space's, or for a comparison (a bool
 * result) its tensor operands'. */
static ad_dtype rec_dtype(const builder *B, const ad_tnode *n) {
    if (n->kind == AD_TN_COMPARE) {
        const ad_tensor *t = val_tensor(B->T, n->args[0].ref);
        return (t ? t : val_tensor(B->T, n->args[1].ref))->dtype;
    }
    return B->P->vals[space_of(B, n)].dtype;
}

/* A record of one element from one-element operands: it runs in any group,
 * its register read as one element broadcast (stride 0). */
static bool one_element(const builder *B, const ad_tnode *n) {
    if (B->cls[n - B->T->nodes] < 0 || B->P->vals[n->out.ref].numel != 1) return false;
    for (int i = 0; i < n->nargs; i++)
        if (n->args[i].ref >= 0 && B->P->vals[n->args[i].ref].numel != 1) return false;
    return true;
}

/* Whether record n joins group g: the same space, or one element in a
 * group that iterates, or the first record with a space in a group of
 * one-element records (which then takes that space). */
static bool fits(builder *B, int g, const ad_tnode *n, int loads) {
    int a = space_of(B, n), b = B->space[g];
    const ad_plval *x = &B->P->vals[a], *y = &B->P->vals[b];
    if (rec_dtype(B, n) != B->gdt[g] || loads + count_new_loads(B, n, g) > AD_PLAN_MAX_LOADS) return false;
    if (ad_shape_equal(x->ndim, vdims(B->P, a), y->ndim, vdims(B->P, b))) return true;
    if (one_element(B, n) && y->numel >= 1) return true;
    if (y->numel == 1 && x->numel > 1) {
        for (int i = B->first[g]; i <= B->last[g]; i++)
            if (B->grp[i] == g && !one_element(B, &B->T->nodes[i])) return false;
        B->space[g] = a;
        return true;
    }
    return false;
}

/* Whether record n reads a value made by a group after g (a kernel record
 * that g's earlier records run before): then n cannot join g. */
static bool reads_after(const builder *B, const ad_tnode *n, int g) {
    for (int k = 0; k < n->nargs; k++)
        for (int u = ref_of(B, n, k); u >= 0; u = B->ksrc[u])
            if (B->made_in[u] > g) return true;
    return false;
}

/* Maximal runs of consecutive fast records over one space form a group; a
 * reduction ends its group. Records replayed through the seam end a group,
 * so nothing runs out of the traced order. A kernel record (a product, a
 * sum over dims, index_add_at: pure, a group of its own) does not: the
 * element-wise records after it join the open group when they read nothing
 * it or a later kernel record makes, and run before it (an LSTM's VJPs of
 * its gates, between their index_add_at's, are one group). */
static int form_groups(builder *B) {
    const ad_trace *T = B->T;
    int g = -1, loads = 0;
    bool closed = true, crossed = false;
    for (int i = 0; i < T->nnodes; i++) {
        const ad_tnode *n = &T->nodes[i];
        int cl = B->cls[i];
        B->grp[i] = -1;
        if (i == B->P->split) closed = true; /* a group never spans the two parts */
        if (cl == CL_SKIP) continue;
        if (cl == CL_SEAM) { closed = true; continue; }
        if (cl == CL_VIEW) continue; /* nothing to run: its readers read through it */
        if (cl == CL_KVIEW) {
            /* read through, as an expand; but a group holds its values in registers, so a
             * view of one it makes is read by the next group, from memory */
            int u = n->args[0].ref;
            while (u >= 0 && B->ksrc[u] >= 0) u = B->ksrc[u];
            if (g >= 0 && u >= 0 && B->made_in[u] == g) closed = true;
            continue;
        }
        if (cl == CL_KERN) {
            int k = open_group(B, i);
            if (k < 0) return -1;
            B->space[k] = n->out.ref;
            B->grp[i] = k;
            B->made_in[n->out.ref] = k;
            crossed = true;
            continue;
        }
        if (closed || !fits(B, g, n, loads) || (crossed && reads_after(B, n, g))) {
            crossed = false;
            if ((g = open_group(B, i)) < 0) return -1;
            B->space[g] = space_of(B, n);
            B->gdt[g] = rec_dtype(B, n);
            loads = 0;
            B->nnums = 0;
        }
        loads += count_new_loads(B, n, g);
        note_loads(B, n, g);
        B->grp[i] = g;
        B->last[g] = i;
        B->made_in[n->out.ref] = g;
        closed = is_red(cl);
    }
    return 0;
}

static void mark_reads(builder *B, const ad_targ *a, int g) {
    if (a->ref >= 0) {
        int v = a->ref;
        if (g < 0) B->env[v] = true;
        else if (B->made_in[v] != g && g > B->lastg[v]) B->lastg[v] = g;
    }
    for (int k = 0; k < a->nsub; k++) mark_reads(B, &a->sub[k], g);
}

/* A read of value v by group g reads the values whose memory a kernel-made
 * view v stands for too: they live as long as the view is read. */
static void mark_value_read(builder *B, int v, int g) {
    for (; v >= 0; v = B->ksrc[v]) mark_reads(B, &(ad_targ){.ref = v}, g);
}

/* ---- the arena ---- */

static int64_t size_class(int64_t bytes) {
    int64_t c = AD_PLAN_MIN_CLASS;
    while (c < bytes) c *= 2;
    return c;
}

static int take_buffer(builder *B, int v) {
    ad_plan *P = B->P;
    ad_assert(v >= 0 && v < P->nvals && P->vals[v].where == AD_PL_ARENA && B->nfree <= P->nbuffers);
    int64_t cls = size_class(P->vals[v].numel * (int64_t)esize(P->vals[v].dtype));
    for (int i = 0; i < B->nfree; i++) {
        int b = B->freebuf[i];
        if (P->buffers[b].bytes != cls) continue;
        B->freebuf[i] = B->freebuf[--B->nfree];
        P->buffers[b].nvals++;
        P->vals[v].buffer = b;
        return 0;
    }
    ad_plbuffer *nb = ad_realloc(B->S, P->buffers, (size_t)(P->nbuffers + 1) * sizeof *nb);
    if (!nb) return -1;
    P->buffers = nb;
    int *fb = ad_realloc(B->S, B->freebuf, (size_t)(P->nbuffers + 1) * sizeof *fb);
    if (!fb) return -1;
    B->freebuf = fb;
    int64_t at = 0;
    if (P->nbuffers) at = P->buffers[P->nbuffers - 1].offset + P->buffers[P->nbuffers - 1].bytes;
    P->buffers[P->nbuffers] = (ad_plbuffer){.offset = at, .bytes = cls, .nvals = 1};
    P->vals[v].buffer = P->nbuffers++;
    return 0;
}

static void give_back(builder *B, int v) {
    if (B->P->vals[v].where != AD_PL_ARENA || B->P->vals[v].buffer < 0) return;
    /* A buffer is on the free list at most once: more entries than buffers means one went back twice. */
    ad_assert(B->nfree < B->P->nbuffers && B->P->vals[v].buffer < B->P->nbuffers);
    B->freebuf[B->nfree++] = B->P->vals[v].buffer;
    B->lastg[v] = -2; /* given back once */
}

/* After group gi: the buffers of the values a kernel-made view it read stands for. */
static void give_back_sources(builder *B, int v, int gi) {
    for (v = B->ksrc[v]; v >= 0; v = B->ksrc[v])
        if (B->lastg[v] == gi) give_back(B, v);
}

/* ---- one group's program ---- */

typedef struct gbuild {
    int *freeregs;
    int nfree, cap;
} gbuild;

static int new_reg(ad_state *S, ad_plgroup *g, gbuild *r) {
    ad_assert(r->nfree >= 0 && r->nfree <= r->cap && g->nregs >= g->nloads);
    if (r->nfree) return r->freeregs[--r->nfree];
    if (g->nregs - g->nloads >= r->cap) {
        int cap = r->cap ? r->cap * 2 : 16;
        int *p = ad_realloc(S, r->freeregs, (size_t)cap * sizeof *p);
        if (!p) return -1;
        r->freeregs = p;
        r->cap = cap;
    }
    return g->nregs++;
}

/* The register of a load: value u (>= 0), or the number in 'a'. */
static int load_reg(builder *B, ad_plgroup *g, int u, const ad_targ *a, ad_dtype dt) {
    if (u >= 0) {
        if (B->reg[u] >= 0) return B->reg[u];
        ad_assert(g->nloads < AD_PLAN_MAX_LOADS); /* fits() keeps a group's loads within its scratch */
        ad_dtype vt = B->P->vals[u].dtype;
        uint8_t conv = vt == dt || vt == AD_BOOL ? AD_PLCONV_NONE : vt == AD_FLOAT64 ? AD_PLCONV_F64 : AD_PLCONV_F32;
        g->loads[g->nloads] = (ad_plload){.val = u, .b8 = vt == AD_BOOL, .conv = conv};
        return B->reg[u] = g->nloads++;
    }
    double c = num_of(a->c);
    if (dt == AD_FLOAT32) c = (double)(float)c;
    /* The same bits, not ==: -0.0 == 0.0 while x - 0.0 and x - -0.0 differ at
     * x = -0.0, and NaN != NaN would load a NaN again after the group's
     * registers are numbered (the second pass over a record's operands must
     * find the loads of the first). */
    for (int i = 0; i < g->nloads; i++)
        if (g->loads[i].val < 0 && memcmp(&g->loads[i].c, &c, sizeof c) == 0) return i;
    ad_assert(g->nloads < AD_PLAN_MAX_LOADS);
    g->loads[g->nloads] = (ad_plload){.val = -1, .c = c, .cf = (float)c};
    return g->nloads++;
}

static int64_t val_bytes(const ad_plan *P, int v) {
    return v >= 0 && P->vals[v].ndim >= 0 ? P->vals[v].numel * (int64_t)esize(P->vals[v].dtype) : 0;
}

static void where_of(builder *B, int v) {
    ad_plval *x = &B->P->vals[v];
    x->group = B->made_in[v];
    x->where = B->env[v] ? AD_PL_FRESH : B->lastg[v] > x->group ? AD_PL_ARENA : AD_PL_REG;
}

/* Registers: loads first (held for the whole group), then each record's
 * result, given back after its last reader in the group. Arena buffers of
 * inputs read for the last time at or before an instruction may take its
 * result (in place: a block is stored after its reads). */
static int build_group(builder *B, int gi, gbuild *r) {
    const ad_trace *T = B->T;
    ad_plan *P = B->P;
    ad_plgroup *g = &P->groups[gi];
    int n0 = B->first[gi], n1 = B->last[gi];
    int nrec = 0;
    for (int i = n0; i <= n1; i++) nrec += B->grp[i] == gi;
    g->first_node = n0;
    g->last_node = n1;
    int sv = B->space[gi];
    g->ndim = P->vals[sv].ndim;
    g->dims = P->vals[sv].dims;
    g->numel = P->vals[sv].numel;
    g->dtype = B->gdt[gi];
    g->loads = ad_calloc(B->S, AD_PLAN_MAX_LOADS, sizeof *g->loads);
    g->instrs = ad_calloc(B->S, (size_t)nrec, sizeof *g->instrs);
    g->stores = ad_calloc(B->S, (size_t)(nrec + P->ninto), sizeof *g->stores);
    if (!g->loads || !g->instrs || !g->stores) return -1;
    size_t es = esize(g->dtype);
    /* loads and the last reader of each value inside the group */
    for (int i = n0; i <= n1; i++) {
        if (B->grp[i] != gi) continue;
        const ad_tnode *n = &T->nodes[i];
        for (int k = 0; k < n->nargs; k++) {
            int u = ref_of(B, n, k);
            if (u >= 0 && B->made_in[u] == gi) continue;
            bool fresh = u >= 0 && B->reg[u] < 0;
            load_reg(B, g, u, &n->args[k], g->dtype);
            if (fresh) g->bytes_moved += val_bytes(P, u);
        }
    }
    r->nfree = 0;
    g->nregs = g->nloads;
    int k = 0;
    for (int i = n0; i <= n1; i++) {
        if (B->grp[i] != gi) continue;
        const ad_tnode *n = &T->nodes[i];
        for (int a = 0; a < n->nargs; a++) {
            for (int u = ref_of(B, n, a); u >= 0; u = B->ksrc[u]) B->lastk[u] = k;
            g->bytes_unfused += val_bytes(P, n->args[a].ref);
        }
        g->bytes_unfused += val_bytes(P, n->out.ref);
        if (B->cls[i] >= 0) k++;
    }
    for (int i = n0; i <= n1; i++) {
        if (B->grp[i] != gi) continue;
        const ad_tnode *n = &T->nodes[i];
        int v = n->out.ref;
        where_of(B, v);
        if (is_red(B->cls[i])) {
            g->red = B->cls[i] == CL_SUM ? AD_PLRED_SUM : AD_PLRED_MEAN;
            g->red_reg = B->reg[ref_of(B, n, 0)];
            g->red_val = v;
            g->red_node = i;
            if (P->vals[v].where != AD_PL_REG) g->bytes_moved += (int64_t)es;
            continue;
        }
        ad_plinstr *in = &g->instrs[g->ninstrs];
        in->fn = (int16_t)B->cls[i];
        in->nin = (int16_t)n->nargs;
        in->node = i;
        int ua = ref_of(B, n, 0), ub = n->nargs > 1 ? ref_of(B, n, 1) : -1;
        in->a = ua >= 0 ? B->reg[ua] : load_reg(B, g, -1, &n->args[0], g->dtype);
        if (n->nargs > 1) in->b = ub >= 0 ? B->reg[ub] : load_reg(B, g, -1, &n->args[1], g->dtype);
        if (n->nargs > 2) {
            int uc = ref_of(B, n, 2);
            in->c = uc >= 0 ? B->reg[uc] : load_reg(B, g, -1, &n->args[2], g->dtype);
        }
        if ((in->dst = new_reg(B->S, g, r)) < 0) return -1;
        B->reg[v] = in->dst;
        for (int a = 0; a < n->nargs; a++) {
            int u = ref_of(B, n, a);
            if (u < 0 || B->lastk[u] != g->ninstrs) continue;
            /* in place: an arena input of the group's size read for the last time here */
            if (B->lastg[u] == gi && !B->viewed[u] && P->vals[u].numel == g->numel && P->vals[v].numel == g->numel &&
                P->vals[u].dtype == P->vals[v].dtype)
                give_back(B, u);
            /* a result read for the last time: its register serves the next instruction (once) */
            bool again = false;
            for (int j = 0; j < a; j++) again |= ref_of(B, n, j) == u;
            if (B->made_in[u] == gi && !again) r->freeregs[r->nfree++] = B->reg[u];
        }
        if (P->vals[v].where == AD_PL_ARENA && take_buffer(B, v)) return -1;
        if (P->vals[v].where != AD_PL_REG) {
            ad_plstore *o = &g->stores[g->nstores++];
            *o = (ad_plstore){.reg = in->dst, .val = v, .after = g->ninstrs,
                              .one = P->vals[v].numel == 1 && g->numel != 1, .b8 = P->vals[v].dtype == AD_BOOL};
            in->direct = !o->one && !o->b8;
            g->bytes_moved += val_bytes(P, v);
        }
        for (int q = 0; q < P->ninto; q++) { /* written into a copy_'s target too (vm/jit/plan_into.c) */
            if (P->intos[q].src != v || P->intos[q].group != gi) continue;
            g->stores[g->nstores++] = (ad_plstore){.reg = in->dst, .val = v, .after = g->ninstrs, .into = true, .target = q};
            g->bytes_moved += val_bytes(P, v);
        }
        /* read by no later instruction: only stored, its register is free again */
        if (B->lastk[v] < 0) r->freeregs[r->nfree++] = in->dst;
        g->ninstrs++;
    }
    for (int i = 0; i < g->nloads; i++) {
        int u = g->loads[i].val;
        if (u >= 0 && B->lastg[u] == gi) give_back(B, u);
        if (u >= 0) give_back_sources(B, u, gi);
    }
    if (g->red && P->vals[g->red_val].where == AD_PL_ARENA && take_buffer(B, g->red_val)) return -1;
    for (int i = 0; i < g->nloads; i++) if (g->loads[i].val >= 0) B->reg[g->loads[i].val] = -1;
    for (int i = n0; i <= n1; i++) if (B->grp[i] == gi) B->reg[T->nodes[i].out.ref] = -1;
    g->dstp = ad_calloc(B->S, (size_t)(g->nstores ? g->nstores : 1), sizeof *g->dstp);
    g->regp = ad_calloc(B->S, (size_t)g->nregs, sizeof *g->regp);
    g->rstride = ad_calloc(B->S, (size_t)g->nregs, sizeof *g->rstride);
    if (!g->dstp || !g->regp || !g->rstride) return -1;
    int64_t scratch = (int64_t)g->nregs * AD_PLAN_BLOCK_BYTES;
    if (scratch > P->scratch_bytes) P->scratch_bytes = scratch;
    return 0;
}

/* A kernel record (vm/jit/plan_ops.c): its operands are the group's loads;
 * its output an arena buffer (taken before the operands' are given back: a
 * product never writes over what it reads), a new tensor, or a view. */
static int build_kernel(builder *B, int gi) {
    ad_plan *P = B->P;
    int i = B->first[gi];
    const ad_tnode *n = &B->T->nodes[i];
    ad_plgroup *g = &P->groups[gi];
    int v = n->out.ref;
    g->first_node = g->last_node = i;
    g->ndim = P->vals[v].ndim;
    g->dims = P->vals[v].dims;
    g->numel = P->vals[v].numel;
    g->dtype = P->vals[v].dtype;
    g->kern = ad_calloc(B->S, 1, sizeof *g->kern);
    g->loads = ad_calloc(B->S, 3, sizeof *g->loads);
    if (!g->kern || !g->loads) return -1;
    ad_plk_describe(B->T, n, B->kkind[i], g->kern);
    int ops[3] = {g->kern->c, g->kern->a, g->kern->b};
    for (int k = 0; k < 3; k++) {
        if (ops[k] < 0) continue;
        g->loads[g->nloads++] = (ad_plload){.val = ops[k]};
        g->bytes_moved += val_bytes(P, ops[k]);
    }
    where_of(B, v);
    if (P->vals[v].where == AD_PL_REG) P->vals[v].where = AD_PL_ARENA; /* made in memory, read by nobody later */
    int a = g->kern->a;
    bool reads_a = false; /* the added value a view of the base: the copy keeps what it reads */
    for (int u = g->kern->b; u >= 0; u = B->ksrc[u] >= 0 ? B->ksrc[u] : B->src[u]) reads_a |= u == a;
    if (g->kern->kind == AD_PLK_ADDAT && !reads_a && P->vals[v].where == AD_PL_ARENA && P->vals[a].where == AD_PL_ARENA &&
        B->lastg[a] == gi && !B->viewed[a] && P->vals[a].buffer >= 0 && val_bytes(P, a) == val_bytes(P, v)) {
        /* in place: index_add_at's base read for the last time here is its output (no copy) */
        P->vals[v].buffer = P->vals[a].buffer;
        P->buffers[P->vals[a].buffer].nvals++;
        B->lastg[a] = -2;
    } else if (P->vals[v].where == AD_PL_ARENA && take_buffer(B, v)) return -1;
    g->bytes_moved += val_bytes(P, v);
    g->bytes_unfused = g->bytes_moved;
    for (int k = 0; k < g->nloads; k++) {
        int u = g->loads[k].val;
        if (B->lastg[u] == gi) give_back(B, u);
        give_back_sources(B, u, gi);
    }
    return 0;
}

static void last_read(const ad_targ *a, int i, int *last) {
    if (a->ref >= 0) last[a->ref] = i;
    for (int k = 0; k < a->nsub; k++) last_read(&a->sub[k], i, last);
}

/* Whether a replay may hold value v in its environment: an input, a
 * constant, a folded value, a result of a live record through the seam, or
 * a group's result made as a new tensor (not a dead record's result). */
static bool env_resident(const builder *B, int v) {
    const ad_tval *x = &B->T->vals[v];
    if (B->P->vals[v].where == AD_PL_FRESH || x->kind != AD_TV_NODE) return true;
    const ad_tnode *n = &B->T->nodes[x->node];
    if (n->folded) return !n->dead;
    if (B->cls[x->node] == CL_VIEW || B->cls[x->node] == CL_KVIEW) return false;
    return !n->dead && B->grp[x->node] < 0;
}

static int run_at(const builder *B, int i) { return B->grp[i] >= 0 ? B->first[B->grp[i]] : i; }

/* The replay's steps, and per group the environment values (inputs,
 * constants, results of records through the seam) whose last reader is one
 * of its records: released after it, as the seam's liveness does. */
static int build_steps(builder *B) {
    ad_plan *P = B->P;
    const ad_trace *T = B->T;
    int *last = B->lastk; /* reused: per value, the last record reading it */
    for (int v = 0; v < P->nvals; v++) last[v] = -1;
    for (int i = 0; i < T->nnodes; i++) {
        if (B->cls[i] == CL_SKIP || B->cls[i] == CL_VIEW || B->cls[i] == CL_KVIEW) continue;
        for (int k = 0; k < T->nodes[i].nargs; k++) {
            if (B->grp[i] < 0) last_read(&T->nodes[i].args[k], i, last);
            else /* the last reader as the groups run (a group runs at its first record) */
                for (int u = ref_of(B, &T->nodes[i], k); u >= 0; u = B->ksrc[u])
                    if (last[u] < 0 || run_at(B, i) >= run_at(B, last[u])) last[u] = i;
        }
    }
    last_read(&T->result, T->nnodes, last);
    for (int v = 0; v < P->nvals; v++) {
        int i = last[v];
        if (i < 0 || i >= T->nnodes || B->grp[i] < 0 || P->vals[v].where != AD_PL_ENV) continue;
        ad_plgroup *g = &P->groups[B->grp[i]];
        int *f = ad_realloc(B->S, g->frees, (size_t)(g->nfrees + 1) * sizeof *f);
        if (!f) return -1;
        f[g->nfrees++] = v;
        g->frees = f;
    }
    P->steps = ad_malloc(B->S, (size_t)(T->nnodes ? T->nnodes : 1) * sizeof *P->steps);
    P->envvals = ad_malloc(B->S, (size_t)(P->nvals ? P->nvals : 1) * sizeof *P->envvals);
    if (!P->steps || !P->envvals) return -1;
    for (int v = 0; v < P->nvals; v++)
        if (env_resident(B, v)) P->envvals[P->nenvvals++] = v;
    for (int i = 0; i < T->nnodes; i++) {
        if (B->cls[i] == CL_SKIP || B->cls[i] == CL_VIEW || B->cls[i] == CL_KVIEW || P->group_at[i] == -2) continue;
        P->steps[P->nsteps++] = P->group_at[i] >= 0 ? -1 - P->group_at[i] : i;
    }
    return 0;
}

static int build_groups(builder *B) {
    ad_plan *P = B->P;
    const ad_trace *T = B->T;
    ad_plinto_ctx ic = {.cls = B->cls, .skip = CL_SKIP, .view = CL_VIEW, .kview = CL_KVIEW, .grp = B->grp,
                        .last = B->last, .space = B->space, .src = B->src, .ksrc = B->ksrc};
    if (ad_plan_into_find(B->S, T, P, &ic)) return -1;
    for (int i = 0; i < T->nnodes; i++) {
        if (B->cls[i] == CL_SKIP) continue;
        const ad_tnode *n = &T->nodes[i];
        if (B->cls[i] == CL_VIEW) { P->nviews++; continue; }
        if (B->cls[i] == CL_KVIEW) continue; /* its readers read its sources */
        if (B->grp[i] < 0) {
            if (ad_plan_into_at(P, i) >= 0) continue; /* its group writes the copy */
            for (int k = 0; k < n->nargs; k++) mark_reads(B, &n->args[k], -1);
            P->nfallback++;
            continue;
        }
        for (int k = 0; k < n->nargs; k++) {
            int v = ref_of(B, n, k);
            if (v < 0) continue;
            mark_value_read(B, v, B->grp[i]);
            /* read by the second part: kept in the environment between the parts
             * (the arena is scratch of one part's run); a view is worked out again
             * from its sources, which are kept */
            for (int u = v; P->split && i >= P->split && u >= 0; u = B->ksrc[u]) {
                if (T->vals[u].kind != AD_TV_NODE || T->vals[u].node >= P->split) continue;
                if (P->vals[u].where != AD_PL_KVIEW) mark_reads(B, &(ad_targ){.ref = u}, -1);
                else P->kviews[P->vals[u].buffer].cross = true;
            }
        }
        if (is_kern(B->cls[i])) P->nkernels++;
        else P->nfused++;
    }
    mark_reads(B, &T->result, -1);
    P->groups = ad_calloc(B->S, (size_t)B->ngroups, sizeof *P->groups);
    if (!P->groups) return -1;
    P->ngroups = B->ngroups;
    gbuild r = {0};
    int rc = 0;
    for (int g = 0; g < B->ngroups && !rc; g++) rc = B->kkind[B->first[g]] ? build_kernel(B, g) : build_group(B, g, &r);
    ad_free(B->S, r.freeregs);
    if (rc) return rc;
    int64_t base = (P->scratch_bytes + AD_PLAN_MIN_CLASS - 1) / AD_PLAN_MIN_CLASS * AD_PLAN_MIN_CLASS;
    for (int i = 0; i < P->nbuffers; i++) P->buffers[i].offset += base;
    P->arena_bytes = base + (P->nbuffers ? P->buffers[P->nbuffers - 1].offset + P->buffers[P->nbuffers - 1].bytes - base : 0);
    for (int i = 0; i < T->nnodes; i++)
        P->group_at[i] = B->cls[i] == CL_VIEW || B->cls[i] == CL_KVIEW ? -3 : B->grp[i] < 0 ? -1 : -2;
    for (int g = 0; g < P->ngroups; g++) P->group_at[P->groups[g].first_node] = g;
    for (int q = 0; q < P->ninto; q++) P->group_at[P->intos[q].node] = -4;
    return build_steps(B);
}

/* What a replay trusts of a built plan (vm/ad_assert.h): buffers one after
 * another in the arena, past the scratch, each a size class; every value's
 * buffer, every group's records, registers, loads and stores in range; the
 * steps in record order. */
__attribute__((unused)) static bool plan_ok(const ad_trace *T, const ad_plan *P) {
    if (P->nvals != T->nvals || P->nnodes != T->nnodes || P->ngroups < 0) return false;
    int64_t end = (P->scratch_bytes + AD_PLAN_MIN_CLASS - 1) / AD_PLAN_MIN_CLASS * AD_PLAN_MIN_CLASS;
    for (int i = 0; i < P->nbuffers; i++) {
        const ad_plbuffer *b = &P->buffers[i];
        if (b->offset < end || b->offset % AD_PLAN_MIN_CLASS || b->bytes < AD_PLAN_MIN_CLASS || (b->bytes & (b->bytes - 1)))
            return false;
        end = b->offset + b->bytes;
    }
    if (end > P->arena_bytes && P->nbuffers) return false;
    for (int v = 0; v < P->nvals; v++) {
        const ad_plval *x = &P->vals[v];
        if (x->where > AD_PL_KVIEW || x->group >= P->ngroups) return false;
        if (x->where == AD_PL_ARENA && x->buffer >= 0 &&
            (x->buffer >= P->nbuffers || val_bytes(P, v) > P->buffers[x->buffer].bytes))
            return false;
    }
    for (int gi = 0; gi < P->ngroups; gi++) {
        const ad_plgroup *g = &P->groups[gi];
        if (g->first_node < 0 || g->first_node > g->last_node || g->last_node >= P->nnodes) return false;
        if (g->nloads > (g->kern ? 3 : AD_PLAN_MAX_LOADS) || (!g->kern && g->nregs < g->nloads)) return false;
        if ((int64_t)g->nregs * AD_PLAN_BLOCK_BYTES > P->scratch_bytes && !g->kern) return false;
        for (int i = 0; i < g->nloads; i++)
            if (g->loads[i].val >= P->nvals) return false;
        for (int i = 0; i < g->ninstrs; i++) {
            const ad_plinstr *in = &g->instrs[i];
            if (in->dst < 0 || in->dst >= g->nregs || in->a < 0 || in->a >= g->nregs) return false;
            if ((in->nin > 1 && (in->b < 0 || in->b >= g->nregs)) || (in->nin > 2 && (in->c < 0 || in->c >= g->nregs)))
                return false;
            if (in->node < g->first_node || in->node > g->last_node) return false;
        }
        for (int i = 0; i < g->nstores; i++) {
            const ad_plstore *o = &g->stores[i];
            if (o->reg < 0 || o->reg >= g->nregs || o->val < 0 || o->val >= P->nvals || o->after < 0 || o->after >= g->ninstrs)
                return false;
        }
    }
    int prev = -1;
    for (int s = 0; s < P->nsteps; s++) {
        int st = P->steps[s], node = st >= 0 ? st : -1 - st < P->ngroups ? P->groups[-1 - st].first_node : -1;
        if (st >= P->nnodes || node < 0 || node <= prev) return false;
        prev = node;
    }
    return P->nsteps <= P->nnodes;
}

void ad_plan_free(ad_state *S, ad_plan *P) {
    if (!P) return;
    for (int g = 0; g < P->ngroups; g++) {
        ad_plgroup *x = &P->groups[g];
        ad_free(S, x->loads); ad_free(S, x->instrs); ad_free(S, x->stores);
        ad_free(S, (void *)x->regp); ad_free(S, x->rstride); ad_free(S, x->dstp); ad_free(S, x->frees);
        ad_free(S, x->kern);
    }
    for (int k = 0; P->kviews && k < P->nkviews; k++)
        if (P->kviews[k].copy) ad_tensor_decref(S, P->kviews[k].copy);
    ad_free(S, P->kviews);
    ad_plan_into_free(S, P);
    ad_free(S, P->keep);
    ad_free(S, P->groups); ad_free(S, P->vals); ad_free(S, P->dims); ad_free(S, P->group_at); ad_free(S, P->steps); ad_free(S, P->envvals);
    ad_free(S, P->buffers); ad_free(S, P->arena); ad_free(S, P->env);
    ad_free(S, P);
}

static void builder_free(builder *B) {
    ad_state *S = B->S;
    ad_free(S, B->cls); ad_free(S, B->grp); ad_free(S, B->first); ad_free(S, B->last); ad_free(S, B->space); ad_free(S, B->gdt);
    ad_free(S, B->made_in); ad_free(S, B->lastg); ad_free(S, B->env); ad_free(S, B->reg);
    ad_free(S, B->seen); ad_free(S, B->lastk); ad_free(S, B->src); ad_free(S, B->freebuf);
    ad_free(S, B->kkind); ad_free(S, B->ksrc); ad_free(S, B->viewed);
}

ad_plan *ad_plan_build(ad_state *S, const ad_trace *T) {
    int split = T->plan_split > 0 && T->plan_split < T->nnodes ? T->plan_split : 0;
    builder B = {.S = S, .T = T};
    size_t nv = (size_t)(T->nvals ? T->nvals : 1), nn = (size_t)(T->nnodes ? T->nnodes : 1);
    B.cls = ad_malloc(S, nn * sizeof *B.cls);
    B.grp = ad_malloc(S, nn * sizeof *B.grp);
    B.made_in = ad_malloc(S, nv * sizeof *B.made_in);
    B.lastg = ad_malloc(S, nv * sizeof *B.lastg);
    B.env = ad_calloc(S, nv, sizeof *B.env);
    B.reg = ad_malloc(S, nv * sizeof *B.reg);
    B.seen = ad_calloc(S, nv, sizeof *B.seen);
    B.lastk = ad_malloc(S, nv * sizeof *B.lastk);
    B.src = ad_malloc(S, nv * sizeof *B.src);
    B.kkind = ad_calloc(S, nn, sizeof *B.kkind);
    B.ksrc = ad_malloc(S, nv * sizeof *B.ksrc);
    B.viewed = ad_calloc(S, nv, sizeof *B.viewed);
    ad_plan *P = ad_calloc(S, 1, sizeof *P);
    B.P = P;
    bool ok = B.cls && B.grp && B.made_in && B.lastg && B.env && B.reg && B.seen && B.lastk && B.src && B.kkind && B.ksrc && B.viewed && P;
    if (ok) {
        P->nvals = T->nvals;
        P->nnodes = T->nnodes;
        P->split = split;
        P->vals = ad_calloc(S, nv, sizeof *P->vals);
        P->group_at = ad_malloc(S, nn * sizeof *P->group_at);
        ok = P->vals && P->group_at;
    }
    if (ok) {
        for (size_t v = 0; v < nv; v++) { B.made_in[v] = -1; B.lastg[v] = -1; B.reg[v] = -1; B.lastk[v] = -1; B.src[v] = -1; B.ksrc[v] = -1; }
        bool any = false;
        for (int i = 0; i < T->nnodes; i++) {
            B.cls[i] = classify(T, &T->nodes[i], split > 0);
            if (B.cls[i] == CL_SEAM && (B.kkind[i] = ad_plk_classify(T, &T->nodes[i], split > 0)))
                B.cls[i] = ad_plk_is_view(B.kkind[i]) ? CL_KVIEW : CL_KERN;
            any |= B.cls[i] != CL_SEAM && B.cls[i] != CL_SKIP;
        }
        ok = any && fill_values(&B) == 0 && resolve_views(&B) == 0 && form_groups(&B) == 0 && build_groups(&B) == 0;
    }
    builder_free(&B);
    if (!ok) {
        ad_plan_free(S, P);
        ad_clear_error(S);
        return NULL;
    }
    ad_assert(plan_ok(T, P));
    return P;

}
