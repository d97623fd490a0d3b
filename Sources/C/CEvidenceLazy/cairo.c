// cairo's functions that EvidenceCertificate calls to draw the PDF certificate, loaded on first
// use: only `certify` (and `run`, when a certificate is due) load cairo and its X11, FreeType,
// fontconfig and pixman dependencies.
#include <cairo/cairo.h>
#include <cairo/cairo-pdf.h>
#include "lazy_internal.h"

static evidence_lazy_library cairo = {"libcairo.so.2", "PDF certificates", 0};

#define CAIRO_FN(ret, name, params, args) \
    EVIDENCE_LAZY_HIDDEN ret name params { EVIDENCE_LAZY_FN(cairo, name) return real args; }
#define CAIRO_VOID(name, params, args) \
    EVIDENCE_LAZY_HIDDEN void name params { EVIDENCE_LAZY_FN(cairo, name) real args; }
#define CAIRO_CR(name) CAIRO_VOID(name, (cairo_t *cr), (cr))

// Surfaces
CAIRO_FN(cairo_surface_t *, cairo_pdf_surface_create_for_stream,
         (cairo_write_func_t write_func, void *closure, double width_in_points, double height_in_points),
         (write_func, closure, width_in_points, height_in_points))
CAIRO_VOID(cairo_pdf_surface_set_metadata, (cairo_surface_t *surface, cairo_pdf_metadata_t metadata, const char *utf8),
           (surface, metadata, utf8))
CAIRO_FN(cairo_surface_t *, cairo_recording_surface_create, (cairo_content_t content, const cairo_rectangle_t *extents),
         (content, extents))
CAIRO_VOID(cairo_surface_destroy, (cairo_surface_t *surface), (surface))
CAIRO_VOID(cairo_surface_finish, (cairo_surface_t *surface), (surface))
CAIRO_FN(cairo_status_t, cairo_surface_status, (cairo_surface_t *surface), (surface))

// Pictures (poster frames): an RGB image written as PNG, a PNG read back and painted
CAIRO_FN(cairo_surface_t *, cairo_image_surface_create, (cairo_format_t format, int width, int height), (format, width, height))
CAIRO_FN(unsigned char *, cairo_image_surface_get_data, (cairo_surface_t *surface), (surface))
CAIRO_FN(int, cairo_image_surface_get_stride, (cairo_surface_t *surface), (surface))
CAIRO_FN(int, cairo_image_surface_get_width, (cairo_surface_t *surface), (surface))
CAIRO_FN(int, cairo_image_surface_get_height, (cairo_surface_t *surface), (surface))
CAIRO_VOID(cairo_surface_flush, (cairo_surface_t *surface), (surface))
CAIRO_VOID(cairo_surface_mark_dirty, (cairo_surface_t *surface), (surface))
CAIRO_FN(cairo_status_t, cairo_surface_write_to_png_stream, (cairo_surface_t *surface, cairo_write_func_t write_func, void *closure),
         (surface, write_func, closure))
CAIRO_FN(cairo_surface_t *, cairo_image_surface_create_from_png_stream, (cairo_read_func_t read_func, void *closure),
         (read_func, closure))

// Contexts and paths
CAIRO_FN(cairo_t *, cairo_create, (cairo_surface_t *target), (target))
CAIRO_CR(cairo_destroy)
CAIRO_FN(cairo_status_t, cairo_status, (cairo_t *cr), (cr))
CAIRO_FN(const char *, cairo_status_to_string, (cairo_status_t status), (status))
CAIRO_CR(cairo_new_path)
CAIRO_CR(cairo_new_sub_path)
CAIRO_CR(cairo_close_path)
CAIRO_CR(cairo_fill)
CAIRO_CR(cairo_fill_preserve)
CAIRO_CR(cairo_stroke)
CAIRO_CR(cairo_paint)
CAIRO_CR(cairo_show_page)
CAIRO_CR(cairo_save)
CAIRO_CR(cairo_restore)
CAIRO_VOID(cairo_translate, (cairo_t *cr, double tx, double ty), (cr, tx, ty))
CAIRO_VOID(cairo_scale, (cairo_t *cr, double sx, double sy), (cr, sx, sy))
CAIRO_VOID(cairo_rectangle, (cairo_t *cr, double x, double y, double width, double height), (cr, x, y, width, height))
CAIRO_VOID(cairo_set_source_surface, (cairo_t *cr, cairo_surface_t *surface, double x, double y), (cr, surface, x, y))
CAIRO_VOID(cairo_move_to, (cairo_t *cr, double x, double y), (cr, x, y))
CAIRO_VOID(cairo_line_to, (cairo_t *cr, double x, double y), (cr, x, y))
CAIRO_VOID(cairo_arc, (cairo_t *cr, double xc, double yc, double radius, double angle1, double angle2),
           (cr, xc, yc, radius, angle1, angle2))
CAIRO_VOID(cairo_set_line_width, (cairo_t *cr, double width), (cr, width))
CAIRO_VOID(cairo_set_source_rgb, (cairo_t *cr, double red, double green, double blue), (cr, red, green, blue))
CAIRO_VOID(cairo_tag_begin, (cairo_t *cr, const char *tag_name, const char *attributes), (cr, tag_name, attributes))

// Text
CAIRO_VOID(cairo_select_font_face,
           (cairo_t *cr, const char *family, cairo_font_slant_t slant, cairo_font_weight_t weight),
           (cr, family, slant, weight))
CAIRO_VOID(cairo_set_font_size, (cairo_t *cr, double size), (cr, size))
CAIRO_VOID(cairo_set_font_options, (cairo_t *cr, const cairo_font_options_t *options), (cr, options))
CAIRO_VOID(cairo_show_text, (cairo_t *cr, const char *utf8), (cr, utf8))
CAIRO_VOID(cairo_text_extents, (cairo_t *cr, const char *utf8, cairo_text_extents_t *extents), (cr, utf8, extents))
CAIRO_FN(cairo_font_options_t *, cairo_font_options_create, (void), ())
CAIRO_VOID(cairo_font_options_destroy, (cairo_font_options_t *options), (options))
CAIRO_VOID(cairo_font_options_set_hint_metrics, (cairo_font_options_t *options, cairo_hint_metrics_t hint_metrics),
           (options, hint_metrics))
CAIRO_VOID(cairo_font_options_set_hint_style, (cairo_font_options_t *options, cairo_hint_style_t hint_style),
           (options, hint_style))
