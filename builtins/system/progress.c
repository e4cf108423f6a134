/* system/progress.c: progress(iterable, desc=, disable=): the same items, with a
 * tqdm-like bar (count, rate, ETA) redrawn on stderr while a for loop walks them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "builtins.h"
#include "iter.h"
#include "state.h"

/* Redraws come at most this often (tqdm's mininterval), so a loop of cheap
 * steps spends its time in the steps, not in writing the bar. */
#define PROGRESS_MIN_INTERVAL 0.1
#define PROGRESS_DEFAULT_WIDTH 80
#define PROGRESS_MIN_BAR 10
#define PROGRESS_DESC_MAX 64

typedef struct progress {
    char desc[PROGRESS_DESC_MAX + 1];
    bool unicode;        /* the locale is UTF-8: eighth blocks, else '#' */
    double t0, last;     /* start of the walk, time of the last redraw */
    int64_t n, total;    /* items done and their number, at the last step */
    bool drawn, done;    /* a line is on screen; it was ended with a newline */
} progress;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int term_width(void) {
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    const char *c = getenv("COLUMNS");
    int w = c ? atoi(c) : 0;
    return w > 0 ? w : PROGRESS_DEFAULT_WIDTH;
}

static bool utf8_locale(void) {
    const char *vars[] = {"LC_ALL", "LC_CTYPE", "LANG"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return strstr(v, "UTF-8") || strstr(v, "utf8") || strstr(v, "UTF8") || strstr(v, "utf-8");
    }
    return false;
}

/* mm:ss, or h:mm:ss from an hour on; "?" when unknown. */
static void fmt_time(char *out, size_t n, double s) {
    if (!isfinite(s) || s < 0) { snprintf(out, n, "?"); return; }
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(out, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(out, n, "%02ld:%02ld", t / 60, t % 60);
}

/* Appends a bar of 'width' cells, 'frac' of it full, to 'b' (room checked by the caller). */
static size_t fmt_bar(char *b, bool unicode, int width, double frac) {
    static const char *const eighths[] = {"", "\u258f", "\u258e", "\u258d", "\u258c", "\u258b", "\u258a", "\u2589"};
    size_t k = 0;
    double cells = frac * width;
    int full = (int)cells;
    if (full > width) full = width;
    for (int i = 0; i < full; i++) {
        const char *c = unicode ? "\u2588" : "#";
        size_t l = strlen(c);
        memcpy(b + k, c, l); k += l;
    }
    int used = full;
    if (full < width) {
        int part = (int)((cells - full) * 8);
        if (unicode && part > 0) { size_t l = strlen(eighths[part]); memcpy(b + k, eighths[part], l); k += l; used++; }
    }
    for (; used < width; used++) b[k++] = ' ';
    return k;
}

/* desc: 45%|####      | 135/300 [00:02<00:03, 58.21it/s] */
static void draw(ad_state *S, progress *p, int64_t n, int64_t total, double t) {
    char left[PROGRESS_DESC_MAX + 16], right[96], rate[32], el[24], eta[24];
    double elapsed = t - p->t0;
    double r = elapsed > 0 ? (double)n / elapsed : NAN;
    fmt_time(el, sizeof el, elapsed);
    fmt_time(eta, sizeof eta, n > 0 && isfinite(r) && r > 0 ? (double)(total - n) / r : NAN);
    if (!isfinite(r) || n == 0) snprintf(rate, sizeof rate, "?it/s");
    else if (r >= 1) snprintf(rate, sizeof rate, "%.2fit/s", r);
    else snprintf(rate, sizeof rate, "%.2fs/it", 1 / r);
    double frac = total > 0 ? (double)n / (double)total : 1.0;
    snprintf(left, sizeof left, "%s%s%3.0f%%|", p->desc, p->desc[0] ? ": " : "", floor(frac * 100));
    snprintf(right, sizeof right, "| %lld/%lld [%s<%s, %s]", (long long)n, (long long)total, el, eta, rate);
    /* The line stays one cell short of the terminal's width, so it never wraps. */
    int width = term_width() - 1 - (int)strlen(left) - (int)strlen(right);
    if (width < PROGRESS_MIN_BAR) width = PROGRESS_MIN_BAR;
    if (width > 200) width = 200;
    char line[sizeof left + sizeof right + 200 * 3 + 8];
    size_t k = 0;
    line[k++] = '\r';
    memcpy(line + k, left, strlen(left)); k += strlen(left);
    k += fmt_bar(line + k, p->unicode, width, frac);
    memcpy(line + k, right, strlen(right)); k += strlen(right);
    /* ESC[K clears what a longer earlier line left to the right. */
    memcpy(line + k, "\033[K", 3); k += 3;
    ad_write(S, line, k, 1);
    S->bar_shown = true;
    p->drawn = true;
    p->last = t;
}

static void progress_step(ad_state *S, ad_iter *it, int64_t i) {
    progress *p = it->ud;
    int64_t total = 0;
    switch (it->src.t) {
    case AD_TLIST: case AD_TTUPLE: total = it->src.u.l->len; break;
    case AD_TSTR: total = (int64_t)it->src.u.s->len; break;
    case AD_TTENSOR: total = it->src.u.tensor->shape[0]; break;
    default: break;
    }
    double t = now_s();
    if (i == 0) { p->t0 = t; p->done = false; }
    p->n = i;
    p->total = total;
    /* Redrawn at once when printed text wiped it. */
    if (i == 0 || i >= total || !S->bar_shown || t - p->last >= PROGRESS_MIN_INTERVAL) draw(S, p, i, total, t);
    if (i >= total && !p->done) { ad_write(S, "\n", 1, 1); p->done = true; S->bar_shown = false; }
}

/* A loop left early (break, return, an error) shows where it stopped and
 * ends the bar's line when it lets go of the wrapper. */
static void progress_fini(ad_state *S, ad_iter *it) {
    progress *p = it->ud;
    if (p && p->drawn && !p->done) {
        draw(S, p, p->n, p->total, now_s());
        ad_write(S, "\n", 1, 1);
        S->bar_shown = false;
    }
    ad_free(S, p);
}

/* progress(iterable, desc="", disable=none): disable none draws only when
 * stderr is a terminal (as tqdm); true never draws, false always does. */
static int bi_progress(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    const char *desc = "";
    int rc;
    if (argv[1].t != AD_TNONE && (rc = ad_arg_str(S, argv[1], "progress", "desc", &desc))) return rc;
    bool draws;
    if (argv[2].t == AD_TNONE) draws = isatty(STDERR_FILENO);
    else {
        bool disable;
        if ((rc = ad_arg_bool(S, argv[2], "progress", "disable", &disable))) return rc;
        draws = !disable;
    }
    ad_iter *it;
    if ((rc = ad_iter_new(S, "progress", "progress", argv[0], &it))) return rc;
    if (draws) {
        progress *p = ad_calloc(S, 1, sizeof *p);
        if (!p) { ad_iter_free(S, it); return ADDSL_ENOMEM; }
        snprintf(p->desc, sizeof p->desc, "%s", desc);
        p->unicode = utf8_locale();
        it->ud = p;
        it->step = progress_step;
        it->fini = progress_fini;
    }
    *out = ad_iter_value(it);
    return ADDSL_OK;
}

const ad_builtin_def ad_bi_progress_defs[] = {
    {"progress", bi_progress, "iterable, desc=\"\", disable=none",
         "Iterates over iterable (a list, tuple, range, dict or tensor) while drawing a progress "
         "bar with count, rate and ETA on stderr when stderr is a terminal (quiet otherwise, like "
         "tqdm); desc prefixes the bar, disable=true turns it off."
         "\nExample: for i in progress(range(3), desc=\"epochs\") { }"},
    {NULL, NULL, NULL}
};
