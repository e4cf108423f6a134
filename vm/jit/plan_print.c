/* jit/plan_print.c: the plan section of a printed compiled program: fused
 * groups, where their values live, the arena's buffers, bytes moved. */
#include "jit/plan.h"

#include "buf.h"
#include "jit/plan_ops.h"
#include "trace/trace.h"

/* Values listed per group or buffer before the rest is counted. */
#define PRINT_MAX_VALUES 8

void ad_plan_print_tag(const ad_plan *P, int node, ad_buf *b) {
    if (!P || node >= P->nnodes || P->group_at[node] == -1) return;
    int g = P->group_at[node];
    if (g == -3) { ad_buf_puts(b, " [view]"); return; }
    if (g == -4) {
        for (int q = 0; q < P->ninto; q++)
            if (P->intos[q].node == node) ad_buf_printf(b, " [into g%d]", P->intos[q].group);
        return;
    }
    if (g == -2) /* the element-wise group around it (kernel records inside its span are groups of their own) */
        for (g = P->ngroups - 1; g > 0 && (P->groups[g].first_node > node || P->groups[g].kern); g--) {}
    ad_buf_printf(b, " [g%d]", g);
}

static void print_space(const ad_plan *P, const ad_plgroup *g, ad_buf *b) {
    ad_buf_printf(b, "%s[", g->dtype == AD_FLOAT64 ? "float64" : "float32");
    for (int d = 0; d < g->ndim; d++) ad_buf_printf(b, "%s%lld", d ? "," : "", (long long)P->dims[g->dims + d]);
    ad_buf_puts(b, "]");
}

static void print_place(const ad_plan *P, int v, ad_buf *b) {
    const ad_plval *x = &P->vals[v];
    if (x->where == AD_PL_ARENA) ad_buf_printf(b, "%%%d->b%d", v, x->buffer);
    else if (x->where == AD_PL_FRESH) ad_buf_printf(b, "%%%d->new", v);
    else ad_buf_printf(b, "%%%d", v);
}

/* A kernel record: "g4 matmul float64[2,4]: reads %1 %3; writes %5->new". */
static void print_kernel(const ad_plan *P, int gi, ad_buf *b) {
    const ad_plgroup *g = &P->groups[gi];
    ad_buf_printf(b, "  g%d %s ", gi, g->kern->mean ? "mean" : ad_plk_name(g->kern->kind));
    print_space(P, g, b);
    ad_buf_puts(b, ": reads");
    for (int i = 0; i < g->nloads; i++)
        ad_buf_printf(b, " %%%d%s", g->loads[i].val, g->kern->zbase && g->loads[i].val == g->kern->a ? " (zeros: filled)" : "");
    ad_buf_puts(b, "; writes ");
    print_place(P, g->kern->out, b);
    ad_buf_printf(b, "; moves %lld bytes\n", (long long)g->bytes_moved);
}

static void print_group(const ad_plan *P, int gi, ad_buf *b) {
    const ad_plgroup *g = &P->groups[gi];
    if (g->kern) { print_kernel(P, gi, b); return; }
    ad_buf_printf(b, "  g%d ", gi);
    print_space(P, g, b);
    ad_buf_printf(b, ": %d ops", g->ninstrs);
    if (g->red) {
        ad_buf_printf(b, " + %s -> ", g->red == AD_PLRED_SUM ? "sum" : "mean");
        print_place(P, g->red_val, b);
    }
    ad_buf_puts(b, "; loads");
    for (int i = 0; i < g->nloads; i++) {
        if (i == PRINT_MAX_VALUES) { ad_buf_printf(b, " (+%d)", g->nloads - i); break; }
        if (g->loads[i].val >= 0) ad_buf_printf(b, " %%%d", g->loads[i].val);
        else ad_buf_printf(b, g->dtype == AD_FLOAT64 ? " %.17g" : " %.9g", g->loads[i].c);
    }
    ad_buf_puts(b, "; stores");
    if (!g->nstores) ad_buf_puts(b, " none");
    for (int i = 0; i < g->nstores; i++) {
        if (i == PRINT_MAX_VALUES) { ad_buf_printf(b, " (+%d)", g->nstores - i); break; }
        ad_buf_puts(b, " ");
        if (g->stores[i].into) ad_buf_printf(b, "%%%d->%%%d", g->stores[i].val, P->intos[g->stores[i].target].target);
        else print_place(P, g->stores[i].val, b);
    }
    ad_buf_printf(b, "; %d registers; moves %lld bytes (unfused %lld)\n", g->nregs, (long long)g->bytes_moved,
                  (long long)g->bytes_unfused);
}

void ad_plan_print(const ad_trace *T, const ad_plan *P, ad_buf *b) {
    if (!P) {
        ad_buf_puts(b, "  plan: none (every record runs through the op seam)\n");
        return;
    }
    int64_t moved = 0, unfused = 0;
    for (int g = 0; g < P->ngroups; g++) { moved += P->groups[g].bytes_moved; unfused += P->groups[g].bytes_unfused; }
    int ngroups = P->ngroups - P->nkernels;
    ad_buf_printf(b, "  plan: %d group%s (%d records fused, %d views)", ngroups, ngroups == 1 ? "" : "s", P->nfused,
                  P->nviews + P->nkviews);
    if (P->nkernels) ad_buf_printf(b, ", %d kernel record%s", P->nkernels, P->nkernels == 1 ? "" : "s");
    if (P->ninto) ad_buf_printf(b, ", %d copy_ written by groups", P->ninto);
    ad_buf_printf(b, ", %d records through the seam; "
                     "arena %lld bytes (registers %lld, %d buffer%s); moves %lld bytes (unfused %lld)\n",
                  P->nfallback, (long long)P->arena_bytes,
                  (long long)P->scratch_bytes, P->nbuffers, P->nbuffers == 1 ? "" : "s", (long long)moved,
                  (long long)unfused);
    for (int g = 0; g < P->ngroups; g++) print_group(P, g, b);
    /* views of the kernels' kind: "v0 transpose float64[4,4]: %51 views %37" */
    for (int v = 0, k = 0; v < P->nvals; v++) {
        if (P->vals[v].where != AD_PL_KVIEW) continue;
        const ad_plkern *x = &P->kviews[P->vals[v].buffer].kern;
        ad_buf_printf(b, "  v%d %s %s[", k++, ad_plk_name(x->kind), P->vals[v].dtype == AD_FLOAT64 ? "float64" : "float32");
        for (int d = 0; d < P->vals[v].ndim; d++)
            ad_buf_printf(b, "%s%lld", d ? "," : "", (long long)P->dims[P->vals[v].dims + d]);
        ad_buf_printf(b, "]: %%%d views %%%d\n", v, x->a);
    }
    for (int k = 0; k < P->nbuffers; k++) {
        ad_buf_printf(b, "  b%d: %lld bytes at %lld:", k, (long long)P->buffers[k].bytes,
                      (long long)P->buffers[k].offset);
        int shown = 0;
        for (int v = 0; v < T->nvals; v++) {
            if (P->vals[v].where != AD_PL_ARENA || P->vals[v].buffer != k) continue;
            if (shown++ == PRINT_MAX_VALUES) { ad_buf_printf(b, " (+%d)", P->buffers[k].nvals - PRINT_MAX_VALUES); break; }
            ad_buf_printf(b, " %%%d %s", v, T->vals[v].desc);
        }
        ad_buf_puts(b, "\n");
    }
}
