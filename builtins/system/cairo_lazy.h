/* system/cairo_lazy.h: cairo opened with dlopen on the first plot() instead of at
 * start-up: libcairo and the dozen libraries it pulls in (X11, fontconfig,
 * freetype, png, pixman, xcb) cost ~2 ms of every run that never plots. */
#ifndef AD_CAIRO_LAZY_H
#define AD_CAIRO_LAZY_H

#include "state.h"

#ifdef HAVE_CAIRO
#include <cairo.h>
#include <cairo-svg.h>

/* The soname the build linked against (cairo's ABI has kept it since 1.0). */
#define AD_CAIRO_SONAME "libcairo.so.2"

/* Every cairo function plot.c calls. */
#define AD_CAIRO_FUNCS(X) \
    X(cairo_arc) X(cairo_clip) X(cairo_create) X(cairo_destroy) X(cairo_fill) X(cairo_fill_preserve) \
    X(cairo_image_surface_create) X(cairo_line_to) X(cairo_move_to) X(cairo_paint) X(cairo_rectangle) \
    X(cairo_restore) X(cairo_rotate) X(cairo_save) X(cairo_select_font_face) X(cairo_set_font_size) \
    X(cairo_set_line_width) X(cairo_set_source_rgb) X(cairo_set_source_rgba) X(cairo_show_text) \
    X(cairo_status) X(cairo_status_to_string) X(cairo_stroke) X(cairo_surface_destroy) \
    X(cairo_surface_finish) X(cairo_surface_status) X(cairo_surface_write_to_png_stream) \
    X(cairo_svg_surface_create_for_stream) X(cairo_text_extents) X(cairo_translate)

typedef struct ad_cairo_api {
    void *dl;
#define AD_CAIRO_MEMBER(name) __typeof__(name) *name;
    AD_CAIRO_FUNCS(AD_CAIRO_MEMBER)
#undef AD_CAIRO_MEMBER
} ad_cairo_api;

/* The functions, loaded on the first call (S->cairo); NULL with S's error set
 * when the library or one of them is missing. */
const ad_cairo_api *ad_cairo_api_get(ad_state *S);
#endif

/* Frees the table (addsl_close); a no-op when plot() never ran. */
void ad_cairo_close(ad_state *S);

#endif
