/* tensor/print.c: PyTorch's default tensor text (torch/_tensor_str.py with
 * precision 4, threshold 1000, edgeitems 3, linewidth 80). */
#include "tensor/tensor.h"
#include "autograd/engine.h"
#include "autograd/op.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "tensor/device.h"
#include "autograd/gradfn.h"
#include "state.h"

#define PRINT_PRECISION 4
#define PRINT_THRESHOLD 1000   /* more elements than this are summarized */
#define PRINT_EDGEITEMS 3
#define PRINT_LINEWIDTH 80
#define PRINT_PREFIX "tensor("
#define PRINT_INDENT 7         /* strlen(PRINT_PREFIX) */
#define REQUIRES_GRAD_SUFFIX "requires_grad=true" /* addsl spelling, like dtype=float64 */
#define TORCH_DTYPE_PREFIX 6   /* strlen("torch.") */
#define ELEM_MAX 64            /* longest text of one element */

/* The chosen style of a whole tensor (torch's _Formatter). */
typedef struct fmt {
    const ad_tensor *t;
    bool summarize;
    bool int_mode, sci;
    int width;
    /* scan state */
    bool any;
    double amin, amax;
} fmt;

static double elem_f(const ad_tensor *t, int64_t off) {
    const char *d = t->storage->data;
    return t->dtype == AD_FLOAT32 ? ((const float *)d)[off] : ((const double *)d)[off];
}

/* Text of one element without padding; returns its length. */
static int elem_text(const fmt *f, int64_t off, char *out) {
    const ad_tensor *t = f->t;
    const char *d = t->storage->data;
    if (t->dtype == AD_BOOL) return snprintf(out, ELEM_MAX, "%s", ((const uint8_t *)d)[off] ? "True" : "False");
    if (t->dtype == AD_INT64) return snprintf(out, ELEM_MAX, "%lld", (long long)((const int64_t *)d)[off]);
    double v = elem_f(t, off);
    if (isnan(v)) return snprintf(out, ELEM_MAX, "nan");
    if (isinf(v)) return snprintf(out, ELEM_MAX, v > 0 ? "inf" : "-inf");
    if (f->sci) return snprintf(out, ELEM_MAX, "%.*e", PRINT_PRECISION, v);
    if (f->int_mode) return snprintf(out, ELEM_MAX, "%.0f.", v);
    return snprintf(out, ELEM_MAX, "%.*f", PRINT_PRECISION, v);
}

typedef void (*visit_fn)(fmt *f, int64_t off);

/* Calls 'fn' on each element that will be printed, in order. */
static void visit(fmt *f, int dim, int64_t off, visit_fn fn) {
    const ad_tensor *t = f->t;
    if (dim == t->ndim) { fn(f, off); return; }
    int64_t n = t->shape[dim], st = t->strides[dim];
    bool cut = f->summarize && n > 2 * PRINT_EDGEITEMS;
    for (int64_t i = 0; i < n; i++) {
        if (cut && i == PRINT_EDGEITEMS) i = n - PRINT_EDGEITEMS;
        visit(f, dim + 1, off + i * st, fn);
    }
}

static void scan_range(fmt *f, int64_t off) {
    double v = elem_f(f->t, off);
    if (!isfinite(v) || v == 0) return;
    double a = fabs(v);
    if (!f->any || a < f->amin) f->amin = a;
    if (!f->any || a > f->amax) f->amax = a;
    f->any = true;
    if (v != ceil(v)) f->int_mode = false;
}

static void scan_width(fmt *f, int64_t off) {
    char s[ELEM_MAX];
    if (ad_dtype_is_float(f->t->dtype)) {
        double v = elem_f(f->t, off);
        if (!isfinite(v) || v == 0) return;
    }
    int n = elem_text(f, off, s);
    if (n > f->width) f->width = n;
}

static void formatter_init(fmt *f, const ad_tensor *t) {
    memset(f, 0, sizeof *f);
    f->t = t;
    f->summarize = t->numel > PRINT_THRESHOLD;
    f->int_mode = true;
    f->width = 1;
    if (ad_dtype_is_float(t->dtype)) {
        visit(f, 0, t->offset, scan_range);
        if (!f->any) return;
        double ratio = f->amax / f->amin;
        f->sci = ratio > 1000.0 || f->amax > 1.0e8 || (!f->int_mode && f->amin < 1.0e-4);
    }
    visit(f, 0, t->offset, scan_width);
}

static void put_elem(const fmt *f, int64_t off, ad_buf *b) {
    char s[ELEM_MAX];
    int n = elem_text(f, off, s);
    for (int i = n; i < f->width; i++) ad_buf_add(b, " ", 1);
    ad_buf_add(b, s, (size_t)n);
}

static void put_spaces(ad_buf *b, int n) {
    for (int i = 0; i < n; i++) ad_buf_add(b, " ", 1);
}

/* One row: elements wrapped so a line holds what fits in the line width. */
static void put_vector(const fmt *f, int64_t off, int indent, ad_buf *b) {
    const ad_tensor *t = f->t;
    int64_t n = t->shape[t->ndim - 1], st = t->strides[t->ndim - 1];
    int per_line = (PRINT_LINEWIDTH - indent) / (f->width + 2);
    if (per_line < 1) per_line = 1;
    bool cut = f->summarize && n > 2 * PRINT_EDGEITEMS;
    int col = 0;
    ad_buf_add(b, "[", 1);
    for (int64_t i = 0, k = 0; i < n; i++, k++) {
        if (k > 0) {
            ad_buf_add(b, ",", 1);
            if (col == per_line) { ad_buf_add(b, "\n", 1); put_spaces(b, indent + 1); col = 0; }
            else ad_buf_add(b, " ", 1);
        }
        if (cut && i == PRINT_EDGEITEMS) {
            ad_buf_puts(b, " ...");
            i = n - PRINT_EDGEITEMS - 1;
        } else {
            put_elem(f, off + i * st, b);
        }
        col++;
    }
    ad_buf_add(b, "]", 1);
}

static void put_tensor(const fmt *f, int dim, int64_t off, int indent, ad_buf *b) {
    const ad_tensor *t = f->t;
    if (dim == t->ndim - 1) { put_vector(f, off, indent, b); return; }
    int64_t n = t->shape[dim], st = t->strides[dim];
    int rest = t->ndim - dim;
    bool cut = f->summarize && n > 2 * PRINT_EDGEITEMS;
    ad_buf_add(b, "[", 1);
    for (int64_t i = 0; i < n; i++) {
        if (i > 0) {
            ad_buf_add(b, ",", 1);
            for (int k = 0; k < rest - 1; k++) ad_buf_add(b, "\n", 1);
            put_spaces(b, indent + 1);
        }
        if (cut && i == PRINT_EDGEITEMS) {
            ad_buf_puts(b, "...");
            i = n - PRINT_EDGEITEMS - 1;
            continue;
        }
        put_tensor(f, dim + 1, off + i * st, indent + 1, b);
    }
    ad_buf_add(b, "]", 1);
}

/* torch's _add_suffixes: a suffix that would pass the line width goes on
 * its own line under the opening parenthesis. 'hidden' counts characters
 * torch prints and we do not ("torch." before a dtype), so lines break
 * where PyTorch breaks them. */
static void put_suffix(ad_buf *b, size_t start, int *last_len, const char *suffix, int hidden) {
    int n = (int)strlen(suffix) + hidden;
    if (b->failed) return;
    if (*last_len < 0) {
        size_t i = b->len;
        while (i > start && b->data[i - 1] != '\n') i--;
        *last_len = (int)(b->len - i) + 2;
    }
    if (*last_len + n + 2 > PRINT_LINEWIDTH) {
        ad_buf_puts(b, ",\n");
        put_spaces(b, PRINT_INDENT);
        *last_len = PRINT_INDENT + n;
    } else {
        ad_buf_puts(b, ", ");
        *last_len += n + 2;
    }
    ad_buf_puts(b, suffix);
}

/* t's values (on the host), with meta's autograd suffix and the device. */
static int format_on(ad_state *S, const ad_tensor *t, const ad_tensor *meta, ad_buf *b, const char *device) {
    (void)S;
    size_t start = b->len;
    int last_len = -1;
    char sfx[64 + 24 * AD_MAX_DIMS];
    ad_buf_puts(b, PRINT_PREFIX);
    if (t->numel == 0) {
        ad_buf_puts(b, "[]");
        if (device) { snprintf(sfx, sizeof sfx, "device='%s'", device); put_suffix(b, start, &last_len, sfx, 0); }
        if (t->ndim != 1) {
            int n = snprintf(sfx, sizeof sfx, "size=(");
            for (int i = 0; i < t->ndim; i++)
                n += snprintf(sfx + n, sizeof sfx - (size_t)n, i ? ", %lld" : "%lld", (long long)t->shape[i]);
            snprintf(sfx + n, sizeof sfx - (size_t)n, t->ndim == 1 ? ",)" : ")");
            put_suffix(b, start, &last_len, sfx, 0);
        }
        if (t->dtype != AD_FLOAT32) {
            snprintf(sfx, sizeof sfx, "dtype=%s", ad_dtype_name(t->dtype));
            put_suffix(b, start, &last_len, sfx, TORCH_DTYPE_PREFIX);
        }
    } else {
        fmt f;
        formatter_init(&f, t);
        if (t->ndim == 0) put_elem(&f, t->offset, b);
        else put_tensor(&f, 0, t->offset, PRINT_INDENT, b);
        if (device) { snprintf(sfx, sizeof sfx, "device='%s'", device); put_suffix(b, start, &last_len, sfx, 0); }
        if (t->dtype == AD_FLOAT64) put_suffix(b, start, &last_len, "dtype=float64", TORCH_DTYPE_PREFIX);
    }
    if (meta->grad_fn && !meta->grad_fn_weak && meta->grad_fn->op) {
        /* Like torch's grad_fn=<MulBackward0>, named as t.grad_fn.name() is. */
        char sfx[160], name[128];
        ad_node_class_name(meta->grad_fn, name, sizeof name);
        snprintf(sfx, sizeof sfx, "grad_fn=<%s>", name);
        put_suffix(b, start, &last_len, sfx, 0);
    } else if (meta->requires_grad) {
        put_suffix(b, start, &last_len, REQUIRES_GRAD_SUFFIX, 0);
    }
    ad_buf_add(b, ")", 1);
    return b->failed ? ADDSL_ENOMEM : AD_OK;
}

/* The values of a GPU tensor are printed from a host copy; its device
 * comes first among the suffixes, as in torch. */
int ad_tensor_format(ad_state *S, const ad_tensor *t, ad_buf *b) {
    if (ad_tensor_device(t) == AD_DEV_CPU) return format_on(S, t, t, b, NULL);
    ad_tensor *h = ad_tensor_to_device(S, (ad_tensor *)t, AD_DEV_CPU);
    if (!h) return S->errcode;
    int rc = format_on(S, h, t, b, ad_device_name(ad_tensor_device(t)));
    ad_tensor_decref(S, h);
    return rc;
}
