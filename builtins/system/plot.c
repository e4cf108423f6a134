/* plot.c: plot(y1, y2, ..., path=, labels=, title=, ...): line plots of 1-D
 * series in one or a grid of panels, drawn with cairo into a PNG or an SVG. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "builtins.h"
#include "tensor/device.h"
#include "system/fileio.h"
#include "state.h"
#include "tensor/tensor.h"

#ifdef HAVE_CAIRO
#include "system/cairo_lazy.h"

/* Everything up to bi_plot exists only with cairo; without it plot() is a
 * builtin that says how to get it (so scripts and help() still know the name). */

/* Parameter slots after the positional series (the table's order). */
enum { P_PATH, P_LABELS, P_TITLE, P_XLABEL, P_YLABEL, P_LOGY, P_X, P_SUBPLOTS, P_TITLES, P_SIZE, P_COUNT };

#define PLOT_MAX_SERIES 64      /* per panel: the palette repeats after 10 */
#define PLOT_MAX_PANELS 64
#define PLOT_MAX_SIDE 8192      /* pixels of the whole picture, each way */
#define PLOT_PANEL_W 640        /* default size of one panel */
#define PLOT_PANEL_H 400

typedef struct series {
    double *y;          /* owned */
    int64_t n;
    const char *label;  /* borrowed from the labels argument, or NULL */
} series;

typedef struct panel {
    series s[PLOT_MAX_SERIES];
    int ns;
    const char *title;
    bool logy;
} panel;

typedef struct figure {
    panel *p;           /* rows * cols, owned */
    int rows, cols, np;
    double *x;          /* shared x values (owned) or NULL: 0, 1, 2, ... */
    int64_t nx;
    const char *title, *xlabel, *ylabel;
    int width, height;
    bool svg;
} figure;

static void figure_free(ad_state *S, figure *f) {
    for (int i = 0; f->p && i < f->np; i++)
        for (int j = 0; j < f->p[i].ns; j++) ad_free(S, f->p[i].s[j].y);
    ad_free(S, f->p);
    ad_free(S, f->x);
}

/* The values of a CPU copy of t as doubles (a new array in *out). */
static int tensor_doubles(ad_state *S, ad_tensor *t, int64_t col, double **out, int64_t *n) {
    ad_tensor *c = ad_tensor_to_device(S, t, 0);
    if (!c) return ad_fail(S);
    int64_t len = c->shape[0], stride = c->ndim == 2 ? c->shape[1] : 1;
    double *y = ad_malloc(S, (size_t)(len ? len : 1) * sizeof *y);
    if (!y) { ad_tensor_decref(S, c); return ADDSL_ENOMEM; }
    for (int64_t i = 0; i < len; i++) y[i] = ad_tensor_get_flat(c, i * stride + col);
    ad_tensor_decref(S, c);
    *out = y;
    *n = len;
    return ADDSL_OK;
}

/* Adds the series in 'v' to panel 'p': a 1-D tensor or list of numbers is
 * one, a 2-D tensor is one per column (as matplotlib plots an array), a list
 * of tensors (or of lists of numbers) one per item when 'nested'. */
static int add_series(ad_state *S, panel *p, ad_value v, bool nested, int where) {
    const char *pname = where ? "series" : "x";  /* 'where' 0 is the x= argument */
    if (nested && ad_is_seq(v) && v.u.l->len > 0 && (v.u.l->items[0].t == AD_TTENSOR || ad_is_seq(v.u.l->items[0]))) {
        for (int64_t i = 0; i < v.u.l->len; i++) {
            int rc = add_series(S, p, v.u.l->items[i], false, where);
            if (rc) return rc;
        }
        return ADDSL_OK;
    }
    ad_tensor *t;
    int rc = ad_arg_tensor(S, v, "plot", pname, &t);
    if (rc) return rc;
    if (t->ndim != 1 && t->ndim != 2) {
        int nd = t->ndim;
        ad_tensor_decref(S, t);
        if (!where) return ad_error(S, "plot(): 'x' must be 1-D, not %d-D", nd);
        return ad_error(S, "plot(): series %d must be 1-D (or 2-D: one series per column), not %d-D", where, nd);
    }
    int64_t ncols = t->ndim == 2 ? t->shape[1] : 1;
    for (int64_t c = 0; c < ncols && !rc; c++) {
        if (p->ns == PLOT_MAX_SERIES) {
            rc = ad_error(S, "plot(): more than %d series in one panel", PLOT_MAX_SERIES);
            break;
        }
        series *s = &p->s[p->ns];
        rc = tensor_doubles(S, t, c, &s->y, &s->n);
        if (!rc) p->ns++;
    }
    ad_tensor_decref(S, t);
    return rc;
}

static int opt_str(ad_state *S, ad_value v, const char *pname, const char **out) {
    *out = NULL;
    if (v.t == AD_TNONE) return ADDSL_OK;
    return ad_arg_str(S, v, "plot", pname, out);
}

/* labels=[...]: one per series (all panels, in order), or one list per panel. */
static int set_labels(ad_state *S, figure *f, ad_value v) {
    if (v.t == AD_TNONE) return ADDSL_OK;
    if (!ad_is_seq(v)) return ad_error(S, "plot(): 'labels' must be a list of strings, not %s", ad_type_name(v));
    const ad_list *l = v.u.l;
    bool per_panel = l->len > 0 && ad_is_seq(l->items[0]);
    int64_t k = 0, total = 0;
    for (int i = 0; i < f->np; i++) total += f->p[i].ns;
    if (per_panel && l->len != f->np)
        return ad_error(S, "plot(): 'labels' has %lld lists for %d panels", (long long)l->len, f->np);
    if (!per_panel && l->len != total)
        return ad_error(S, "plot(): 'labels' has %lld names for %lld series", (long long)l->len, (long long)total);
    for (int i = 0; i < f->np; i++) {
        if (per_panel && l->items[i].t == AD_TNONE) continue;  /* a panel without a legend */
        if (per_panel && !ad_is_seq(l->items[i])) return ad_error(S, "plot(): 'labels' must be all lists (or none) or all strings");
        const ad_list *names = per_panel ? l->items[i].u.l : l;
        if (per_panel) {
            if (names->len != f->p[i].ns)
                return ad_error(S, "plot(): 'labels' of panel %d has %lld names for %d series", i + 1, (long long)names->len, f->p[i].ns);
            k = 0;
        }
        for (int j = 0; j < f->p[i].ns; j++, k++) {
            int rc = opt_str(S, names->items[k], "labels", &f->p[i].s[j].label);
            if (rc) return rc;
        }
    }
    return ADDSL_OK;
}

/* titles=[...] and logy=bool or [bool per panel]. */
static int set_panel_options(ad_state *S, figure *f, ad_value titles, ad_value logy) {
    if (titles.t != AD_TNONE) {
        if (!ad_is_seq(titles) || titles.u.l->len != f->np)
            return ad_error(S, "plot(): 'titles' must be a list of %d strings (one per panel)", f->np);
        for (int i = 0; i < f->np; i++) {
            int rc = opt_str(S, titles.u.l->items[i], "titles", &f->p[i].title);
            if (rc) return rc;
        }
    }
    if (ad_is_seq(logy)) {
        if (logy.u.l->len != f->np) return ad_error(S, "plot(): 'logy' must be a bool or a list of %d bools (one per panel)", f->np);
        for (int i = 0; i < f->np; i++) {
            int rc = ad_arg_bool(S, logy.u.l->items[i], "plot", "logy", &f->p[i].logy);
            if (rc) return rc;
        }
        return ADDSL_OK;
    }
    bool b;
    int rc = ad_arg_bool(S, logy, "plot", "logy", &b);
    if (rc) return rc;
    for (int i = 0; i < f->np; i++) f->p[i].logy = b;
    return ADDSL_OK;
}

static int grid_shape(ad_state *S, ad_value v, int nargs, int *rows, int *cols) {
    *rows = 1; *cols = 1;
    if (v.t == AD_TNONE) return ADDSL_OK;
    int64_t r, c;
    if (!ad_is_seq(v) || v.u.l->len != 2
        || ad_arg_int(S, v.u.l->items[0], "plot", "subplots", &r) || ad_arg_int(S, v.u.l->items[1], "plot", "subplots", &c))
        return ad_error(S, "plot(): 'subplots' must be [rows, cols]");
    if (r < 1 || c < 1 || r * c > PLOT_MAX_PANELS)
        return ad_error(S, "plot(): 'subplots' must be [rows, cols] with 1 to %d panels, not [%lld, %lld]", PLOT_MAX_PANELS, (long long)r, (long long)c);
    if (nargs > r * c)
        return ad_error(S, "plot(): %d panels given but subplots=[%lld, %lld] has room for %lld", nargs, (long long)r, (long long)c, (long long)(r * c));
    *rows = (int)r; *cols = (int)c;
    return ADDSL_OK;
}

static int size_option(ad_state *S, ad_value v, figure *f) {
    f->width = PLOT_PANEL_W * f->cols;
    f->height = PLOT_PANEL_H * f->rows;
    if (v.t == AD_TNONE) return ADDSL_OK;
    int64_t w, h;
    if (!ad_is_seq(v) || v.u.l->len != 2
        || ad_arg_int(S, v.u.l->items[0], "plot", "size", &w) || ad_arg_int(S, v.u.l->items[1], "plot", "size", &h))
        return ad_error(S, "plot(): 'size' must be [width, height] in pixels");
    if (w < 64 || h < 64 || w > PLOT_MAX_SIDE || h > PLOT_MAX_SIDE)
        return ad_error(S, "plot(): 'size' must be 64 to %d pixels each way, not [%lld, %lld]", PLOT_MAX_SIDE, (long long)w, (long long)h);
    f->width = (int)w; f->height = (int)h;
    return ADDSL_OK;
}

/* Reads every argument into 'f' (which the caller frees, also on failure). */
static int build_figure(ad_state *S, const ad_value *ys, int nys, const ad_value *kw, figure *f) {
    int rc;
    if (nys == 0) return ad_error(S, "plot(): nothing to plot (give one or more series: plot(y1, y2, path=\"out.png\"))");
    if ((rc = grid_shape(S, kw[P_SUBPLOTS], nys, &f->rows, &f->cols))) return rc;
    bool grid = kw[P_SUBPLOTS].t != AD_TNONE;
    f->np = grid ? f->rows * f->cols : 1;
    f->p = ad_calloc(S, (size_t)f->np, sizeof *f->p);
    if (!f->p) return ADDSL_ENOMEM;
    /* Without subplots every argument goes to the one panel; with it, argument i is panel i. */
    for (int i = 0; i < nys; i++)
        if ((rc = add_series(S, &f->p[grid ? i : 0], ys[i], grid, i + 1))) return rc;
    if (grid) f->np = nys;  /* panels past the arguments stay empty and are not drawn */
    if ((rc = set_labels(S, f, kw[P_LABELS]))) return rc;
    if ((rc = set_panel_options(S, f, kw[P_TITLES], kw[P_LOGY]))) return rc;
    if ((rc = opt_str(S, kw[P_TITLE], "title", &f->title))) return rc;
    if ((rc = opt_str(S, kw[P_XLABEL], "xlabel", &f->xlabel))) return rc;
    if ((rc = opt_str(S, kw[P_YLABEL], "ylabel", &f->ylabel))) return rc;
    if ((rc = size_option(S, kw[P_SIZE], f))) return rc;
    if (kw[P_X].t != AD_TNONE) {
        panel tmp = {0};
        if ((rc = add_series(S, &tmp, kw[P_X], false, 0))) { for (int j = 0; j < tmp.ns; j++) ad_free(S, tmp.s[j].y); return rc; }
        f->x = tmp.s[0].y; f->nx = tmp.s[0].n;
        for (int j = 1; j < tmp.ns; j++) ad_free(S, tmp.s[j].y);
        if (tmp.ns != 1) return ad_error(S, "plot(): 'x' must be 1-D");
        for (int i = 0; i < f->np; i++)
            for (int j = 0; j < f->p[i].ns; j++)
                if (f->p[i].s[j].n != f->nx)
                    return ad_error(S, "plot(): 'x' has %lld values but series %d of panel %d has %lld",
                                    (long long)f->nx, j + 1, i + 1, (long long)f->p[i].s[j].n);
    }
    return ADDSL_OK;
}

static const char *path_ext(const char *path) {
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash + 1 : path, '.');
    return dot ? dot : "";
}

#define MARGIN_L 72.0
#define MARGIN_R 16.0
#define MARGIN_T 34.0
#define MARGIN_B 46.0
#define FONT_SIZE 12.0
#define TICKS_WANTED 6

/* matplotlib's tab10 palette: distinct lines that print in grey too. */
static const double palette[10][3] = {
    {0.122, 0.467, 0.706}, {1.000, 0.498, 0.055}, {0.173, 0.627, 0.173}, {0.839, 0.153, 0.157},
    {0.580, 0.404, 0.741}, {0.549, 0.337, 0.294}, {0.890, 0.467, 0.761}, {0.498, 0.498, 0.498},
    {0.737, 0.741, 0.133}, {0.090, 0.745, 0.812},
};

typedef struct axis {
    double lo, hi;      /* data range shown (log10 of it on a log axis) */
    bool log;
} axis;

static double xval(const figure *f, int64_t i) { return f->x ? f->x[i] : (double)i; }

/* A value's place on its axis, NAN when it has none (a log axis and y <= 0). */
static double axis_map(const axis *a, double v) {
    if (a->log) return v > 0 ? log10(v) : NAN;
    return v;
}

static void range_pad(axis *a) {
    if (!isfinite(a->lo)) { a->lo = 0; a->hi = 1; }
    if (a->log && a->hi - a->lo < 1) {
        /* Under a decade: widen to one around the middle, so a power of ten shows. */
        double mid = (a->lo + a->hi) / 2;
        a->lo = mid - 0.5; a->hi = mid + 0.5;
    } else if (a->hi - a->lo < 1e-300 * fmax(1.0, fabs(a->lo))) {
        double d = a->log ? 0.5 : (a->lo != 0 ? fabs(a->lo) * 0.1 : 1.0);
        a->lo -= d; a->hi += d;
    }
    double d = (a->hi - a->lo) * 0.04;  /* a little air above and below the lines */
    a->lo -= d; a->hi += d;
}

static void data_ranges(const figure *f, const panel *p, axis *ax, axis *ay) {
    ax->lo = ay->lo = INFINITY; ax->hi = ay->hi = -INFINITY;
    ax->log = false; ay->log = p->logy;
    for (int j = 0; j < p->ns; j++)
        for (int64_t i = 0; i < p->s[j].n; i++) {
            double x = xval(f, i), y = axis_map(ay, p->s[j].y[i]);
            if (!isfinite(x) || !isfinite(y)) continue;
            ax->lo = fmin(ax->lo, x); ax->hi = fmax(ax->hi, x);
            ay->lo = fmin(ay->lo, y); ay->hi = fmax(ay->hi, y);
        }
    range_pad(ax);
    range_pad(ay);
}

/* A "nice" step (1, 2 or 5 times a power of ten) giving about TICKS_WANTED ticks. */
static double nice_step(double span) {
    double raw = span / TICKS_WANTED, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
}

static void tick_label(char *out, size_t n, double v, double step, bool log) {
    if (log) { snprintf(out, n, "%g", pow(10, v)); return; }
    if (fabs(v) < step * 1e-6) v = 0;
    int digits = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    if (fabs(v) >= 1e5 || (fabs(v) > 0 && fabs(v) < 1e-4)) snprintf(out, n, "%.3g", v);
    else snprintf(out, n, "%.*f", digits > 10 ? 10 : digits, v);
}

typedef struct rect { double x, y, w, h; } rect;

/* A cairo context with the functions to draw on it (loaded on first use). */
typedef struct canvas { const ad_cairo_api *api; cairo_t *cr; } canvas;

static double to_px_x(const rect *r, const axis *a, double v) { return r->x + (v - a->lo) / (a->hi - a->lo) * r->w; }
static double to_px_y(const rect *r, const axis *a, double v) { return r->y + r->h - (v - a->lo) / (a->hi - a->lo) * r->h; }

static void text_at(const canvas *cr, const char *s, double x, double y, double ax, double ay) {
    cairo_text_extents_t e;
    cr->api->cairo_text_extents(cr->cr, s, &e);
    cr->api->cairo_move_to(cr->cr, x - e.width * ax - e.x_bearing, y + e.height * ay - (e.height + e.y_bearing));
    cr->api->cairo_show_text(cr->cr, s);
}

/* Grid lines and tick labels of one axis; 'vertical' is the y axis. On a log
 * axis ticks sit on powers of ten (step a whole number of decades). */
static void draw_ticks(const canvas *cr, const rect *r, const axis *a, bool vertical) {
    double step = nice_step(a->hi - a->lo);
    if (a->log && step < 1) step = 1;
    char buf[48];
    for (double v = ceil(a->lo / step) * step; v <= a->hi + step * 1e-9; v += step) {
        double px = vertical ? to_px_y(r, a, v) : to_px_x(r, a, v);
        cr->api->cairo_set_source_rgb(cr->cr, 0.88, 0.88, 0.88);
        if (vertical) { cr->api->cairo_move_to(cr->cr, r->x, px); cr->api->cairo_line_to(cr->cr, r->x + r->w, px); }
        else { cr->api->cairo_move_to(cr->cr, px, r->y); cr->api->cairo_line_to(cr->cr, px, r->y + r->h); }
        cr->api->cairo_stroke(cr->cr);
        cr->api->cairo_set_source_rgb(cr->cr, 0.15, 0.15, 0.15);
        tick_label(buf, sizeof buf, v, step, a->log);
        if (vertical) text_at(cr, buf, r->x - 6, px, 1.0, 0.5);
        else text_at(cr, buf, px, r->y + r->h + 6, 0.5, 1.0);
    }
}

static void draw_series(const canvas *cr, const figure *f, const rect *r, const axis *ax, const axis *ay, const series *s, int k) {
    cr->api->cairo_set_source_rgb(cr->cr, palette[k % 10][0], palette[k % 10][1], palette[k % 10][2]);
    cr->api->cairo_set_line_width(cr->cr, 1.6);
    bool pen = false;
    for (int64_t i = 0; i < s->n; i++) {
        double x = xval(f, i), y = axis_map(ay, s->y[i]);
        if (!isfinite(x) || !isfinite(y)) { pen = false; continue; } /* a gap, as matplotlib leaves for NaN */
        double px = to_px_x(r, ax, x), py = to_px_y(r, ay, y);
        if (pen) cr->api->cairo_line_to(cr->cr, px, py); else cr->api->cairo_move_to(cr->cr, px, py);
        pen = true;
    }
    if (s->n == 1 && pen) { /* a single point shows as a dot */
        cr->api->cairo_arc(cr->cr, to_px_x(r, ax, xval(f, 0)), to_px_y(r, ay, axis_map(ay, s->y[0])), 2.5, 0, 2 * M_PI);
        cr->api->cairo_fill(cr->cr);
    }
    cr->api->cairo_stroke(cr->cr);
}

static void draw_legend(const canvas *cr, const panel *p, const rect *r) {
    double wmax = 0, line_h = FONT_SIZE + 5;
    int n = 0;
    for (int j = 0; j < p->ns; j++) {
        if (!p->s[j].label) continue;
        cairo_text_extents_t e;
        cr->api->cairo_text_extents(cr->cr, p->s[j].label, &e);
        wmax = fmax(wmax, e.x_advance);
        n++;
    }
    if (!n) return;
    double w = wmax + 40, h = n * line_h + 8, x0 = r->x + r->w - w - 8, y0 = r->y + 8;
    cr->api->cairo_set_source_rgba(cr->cr, 1, 1, 1, 0.85);
    cr->api->cairo_rectangle(cr->cr, x0, y0, w, h);
    cr->api->cairo_fill_preserve(cr->cr);
    cr->api->cairo_set_source_rgb(cr->cr, 0.7, 0.7, 0.7);
    cr->api->cairo_set_line_width(cr->cr, 1);
    cr->api->cairo_stroke(cr->cr);
    int row = 0;
    for (int j = 0; j < p->ns; j++) {
        if (!p->s[j].label) continue;
        double y = y0 + 4 + line_h * (row++ + 0.5);
        cr->api->cairo_set_source_rgb(cr->cr, palette[j % 10][0], palette[j % 10][1], palette[j % 10][2]);
        cr->api->cairo_set_line_width(cr->cr, 2);
        cr->api->cairo_move_to(cr->cr, x0 + 6, y); cr->api->cairo_line_to(cr->cr, x0 + 28, y);
        cr->api->cairo_stroke(cr->cr);
        cr->api->cairo_set_source_rgb(cr->cr, 0.1, 0.1, 0.1);
        text_at(cr, p->s[j].label, x0 + 34, y, 0, 0.5);
    }
}

static void draw_panel(const canvas *cr, const figure *f, const panel *p, rect cell) {
    rect r = {cell.x + MARGIN_L, cell.y + MARGIN_T, cell.w - MARGIN_L - MARGIN_R, cell.h - MARGIN_T - MARGIN_B};
    if (r.w < 8 || r.h < 8) return;
    axis ax, ay;
    data_ranges(f, p, &ax, &ay);
    cr->api->cairo_set_line_width(cr->cr, 1);
    draw_ticks(cr, &r, &ax, false);
    draw_ticks(cr, &r, &ay, true);
    cr->api->cairo_save(cr->cr);
    cr->api->cairo_rectangle(cr->cr, r.x, r.y, r.w, r.h);
    cr->api->cairo_clip(cr->cr);
    for (int j = 0; j < p->ns; j++) draw_series(cr, f, &r, &ax, &ay, &p->s[j], j);
    cr->api->cairo_restore(cr->cr);
    cr->api->cairo_set_source_rgb(cr->cr, 0.2, 0.2, 0.2);
    cr->api->cairo_set_line_width(cr->cr, 1);
    cr->api->cairo_rectangle(cr->cr, r.x, r.y, r.w, r.h);
    cr->api->cairo_stroke(cr->cr);
    draw_legend(cr, p, &r);
    cr->api->cairo_set_source_rgb(cr->cr, 0, 0, 0);
    if (p->title) text_at(cr, p->title, r.x + r.w / 2, cell.y + MARGIN_T / 2, 0.5, 0.5);
    if (f->xlabel) text_at(cr, f->xlabel, r.x + r.w / 2, cell.y + cell.h - 4, 0.5, 0);
    if (f->ylabel) {
        cr->api->cairo_save(cr->cr);
        cr->api->cairo_translate(cr->cr, cell.x + 14, r.y + r.h / 2);
        cr->api->cairo_rotate(cr->cr, -M_PI / 2);
        text_at(cr, f->ylabel, 0, 0, 0.5, 0.5);
        cr->api->cairo_restore(cr->cr);
    }
}

static void draw_figure(const canvas *cr, const figure *f) {
    cr->api->cairo_set_source_rgb(cr->cr, 1, 1, 1);
    cr->api->cairo_paint(cr->cr);
    cr->api->cairo_select_font_face(cr->cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cr->api->cairo_set_font_size(cr->cr, FONT_SIZE);
    double top = 0;
    if (f->title) {
        top = 26;
        cr->api->cairo_set_source_rgb(cr->cr, 0, 0, 0);
        cr->api->cairo_set_font_size(cr->cr, FONT_SIZE + 3);
        text_at(cr, f->title, f->width / 2.0, top / 2 + 2, 0.5, 0.5);
        cr->api->cairo_set_font_size(cr->cr, FONT_SIZE);
    }
    double cw = (double)f->width / f->cols, ch = (f->height - top) / f->rows;
    for (int i = 0; i < f->np; i++) {
        rect cell = {(i % f->cols) * cw, top + (i / f->cols) * ch, cw, ch};
        draw_panel(cr, f, &f->p[i], cell);
    }
}

static cairo_status_t write_stream(void *closure, const unsigned char *data, unsigned int len) {
    FILE *fp = closure;
    return fwrite(data, 1, len, fp) == len ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_WRITE_ERROR;
}

static int render(ad_state *S, const figure *f, const char *path) {
    const ad_cairo_api *C = ad_cairo_api_get(S);
    if (!C) return S->errcode;
    ad_atomic_file af;
    int rc = ad_atomic_begin(S, "plot", path, &af);
    if (rc) return rc;
    cairo_surface_t *surf = f->svg
        ? C->cairo_svg_surface_create_for_stream(write_stream, af.f, f->width, f->height)
        : C->cairo_image_surface_create(CAIRO_FORMAT_RGB24, f->width, f->height);
    canvas cv = {C, C->cairo_create(surf)};
    draw_figure(&cv, f);
    cairo_status_t st = C->cairo_status(cv.cr);
    C->cairo_destroy(cv.cr);
    if (!st && !f->svg) st = C->cairo_surface_write_to_png_stream(surf, write_stream, af.f);
    C->cairo_surface_finish(surf);   /* an SVG is written out here */
    if (!st) st = C->cairo_surface_status(surf);
    C->cairo_surface_destroy(surf);
    if (st == CAIRO_STATUS_NO_MEMORY) { ad_atomic_abort(S, &af); return ad_nomem(S); }
    if (st && st != CAIRO_STATUS_WRITE_ERROR) {
        ad_atomic_abort(S, &af);
        return ad_error(S, "plot('%s'): cairo failed: %s", path, C->cairo_status_to_string(st));
    }
    return ad_atomic_commit(S, "plot", &af, st == CAIRO_STATUS_SUCCESS, st ? EIO : 0);
}

#endif /* HAVE_CAIRO */

/* plot(*ys, path="out.png", labels=none, title=none, xlabel=none, ylabel=none,
 *      logy=false, x=none, subplots=none, titles=none, size=none) */
static int bi_plot(ad_state *S, ad_value *argv, int argc, ad_value *out) {
#ifndef HAVE_CAIRO
    (void)argv; (void)argc; (void)out;
    return ad_error(S, "plot(): addsl was built without cairo (install libcairo2-dev and reconfigure)");
#else
    int nys = argc - P_COUNT;
    const ad_value *kw = argv + nys;
    const char *path;
    int rc = ad_arg_str(S, kw[P_PATH], "plot", "path", &path);
    if (rc) return rc;
    const char *ext = path_ext(path);
    if (strcasecmp(ext, ".png") != 0 && strcasecmp(ext, ".svg") != 0)
        return ad_error(S, "plot(): 'path' must end in .png or .svg, not '%s'", path);
    figure f = {0};
    f.svg = strcasecmp(ext, ".svg") == 0;
    rc = build_figure(S, argv, nys, kw, &f);
    if (!rc) rc = render(S, &f, path);
    figure_free(S, &f);
    if (rc) return rc;
    *out = ad_none();
    return ADDSL_OK;
#endif
}

/* plot_is_available(): whether this build draws (cuda_is_available's twin), so
 * a script can skip its pictures where plot() would be an error. */
static int bi_plot_is_available(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argv; (void)argc;
#ifdef HAVE_CAIRO
    /* Built with cairo is not enough: the library is opened here, on first use. */
    bool ok = ad_cairo_api_get(S) != NULL;
    if (!ok) ad_clear_error(S);
    *out = ad_bool(ok);
#else
    (void)S;
    *out = ad_bool(false);
#endif
    return ADDSL_OK;
}

const ad_builtin_def ad_bi_plot_defs[] = {
    {"plot", bi_plot, "*, path=\"out.png\", labels=none, title=none, xlabel=none, ylabel=none, "
                      "logy=false, x=none, subplots=none, titles=none, size=none",
         "Line plots of 1-D tensors (one series each) written to path as PNG or SVG (the extension "
         "decides): labels names the series (one list per panel with subplots), x gives the x "
         "values, logy a log y axis, subplots=[rows, cols] a grid of panels with titles, size=[w, "
         "h] in pixels. Needs the build with cairo (plot_is_available())."
         "\nExample: if plot_is_available() { plot(sin(linspace(0, 6, 50)), path=\"sin.svg\", title=\"sin\") }"},
    {"plot_is_available", bi_plot_is_available, "",
         "True when addsl was built with cairo, so plot() can write PNG and SVG files."
         "\nExample: plot_is_available()"},
    {NULL, NULL, NULL}
};
