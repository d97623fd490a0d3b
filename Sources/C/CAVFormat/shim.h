#ifndef EVIDENCE_CAVFORMAT_SHIM_H
#define EVIDENCE_CAVFORMAT_SHIM_H
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libavformat/avformat.h>
#include <libavformat/version.h>
#include <libavcodec/avcodec.h>
#include <libavcodec/version.h>
#include <libavutil/avutil.h>
#include <libavutil/version.h>
#include <libavutil/dict.h>
#include <libavutil/log.h>
#include <libavutil/error.h>

// Macros that do not import into Swift.
static inline int64_t evidence_av_nopts_value(void) { return AV_NOPTS_VALUE; }
static inline int evidence_av_time_base(void) { return AV_TIME_BASE; }
static inline int evidence_averror(int e) { return AVERROR(e); }
static inline int evidence_averror_eof(void) { return AVERROR_EOF; }
static inline int evidence_av_log_quiet(void) { return AV_LOG_QUIET; }
static inline int evidence_av_dict_ignore_suffix(void) { return AV_DICT_IGNORE_SUFFIX; }

// libavformat and its ~130 dependencies are loaded only when a file is probed (dlopen), not
// linked: mapping and relocating them at start costs every `evidence` process about 27 MB of
// memory, though only the media probe uses them. The sonames are those of the headers built
// against. The pointers have the exact types of the functions (`__typeof__`).
typedef struct {
    __typeof__(avformat_open_input) *open_input;
    __typeof__(avformat_find_stream_info) *find_stream_info;
    __typeof__(avformat_close_input) *close_input;
    __typeof__(av_probe_input_format3) *probe_input_format3;
    __typeof__(avcodec_get_name) *codec_get_name;
    __typeof__(av_strerror) *strerror;
    __typeof__(av_log_set_level) *log_set_level;
    __typeof__(av_dict_set) *dict_set;
    __typeof__(av_dict_get) *dict_get;
    __typeof__(av_dict_free) *dict_free;
    __typeof__(avformat_alloc_context) *alloc_context;
    __typeof__(avio_alloc_context) *avio_alloc_context;
    __typeof__(avio_context_free) *avio_context_free;
    __typeof__(av_malloc) *malloc;
    __typeof__(av_free) *free;
} evidence_av_api;

#define EVIDENCE_AV_STR2(x) #x
#define EVIDENCE_AV_STR(x) EVIDENCE_AV_STR2(x)

/// Fills `api`; 1 on success, else 0 with dlerror()'s text in `error`.
static inline int evidence_av_load(evidence_av_api *api, char *error, size_t error_size) {
    static const char *names[3] = {
        "libavutil.so." EVIDENCE_AV_STR(LIBAVUTIL_VERSION_MAJOR),
        "libavcodec.so." EVIDENCE_AV_STR(LIBAVCODEC_VERSION_MAJOR),
        "libavformat.so." EVIDENCE_AV_STR(LIBAVFORMAT_VERSION_MAJOR),
    };
    void *lib[3];
    for (int i = 0; i < 3; i++) {
        lib[i] = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib[i]) {
            const char *e = dlerror();
            snprintf(error, error_size, "%s", e ? e : names[i]);
            return 0;
        }
    }
#define EVIDENCE_AV_SYM(field, l, name) \
    if (!(api->field = (__typeof__(api->field))dlsym(lib[l], #name))) { snprintf(error, error_size, "%s: no %s", names[l], #name); return 0; }
    EVIDENCE_AV_SYM(open_input, 2, avformat_open_input)
    EVIDENCE_AV_SYM(find_stream_info, 2, avformat_find_stream_info)
    EVIDENCE_AV_SYM(close_input, 2, avformat_close_input)
    EVIDENCE_AV_SYM(probe_input_format3, 2, av_probe_input_format3)
    EVIDENCE_AV_SYM(codec_get_name, 1, avcodec_get_name)
    EVIDENCE_AV_SYM(strerror, 0, av_strerror)
    EVIDENCE_AV_SYM(log_set_level, 0, av_log_set_level)
    EVIDENCE_AV_SYM(dict_set, 0, av_dict_set)
    EVIDENCE_AV_SYM(dict_get, 0, av_dict_get)
    EVIDENCE_AV_SYM(dict_free, 0, av_dict_free)
    EVIDENCE_AV_SYM(alloc_context, 2, avformat_alloc_context)
    EVIDENCE_AV_SYM(avio_alloc_context, 2, avio_alloc_context)
    EVIDENCE_AV_SYM(avio_context_free, 2, avio_context_free)
    EVIDENCE_AV_SYM(malloc, 0, av_malloc)
    EVIDENCE_AV_SYM(free, 0, av_free)
#undef EVIDENCE_AV_SYM
    return 1;
}
// Reading from an open descriptor instead of a path (a custom AVIOContext): the probe child gets
// the file as descriptor 3 and may open nothing itself (its seccomp filter refuses open/openat),
// so libavformat never opens a file or a protocol. pread at our own position: the descriptor's
// file offset is shared with the parent that opened it.
typedef struct {
    int fd;
    int64_t position;
    int64_t size;
} evidence_av_fd_source;

static inline int evidence_av_fd_read(void *opaque, uint8_t *buf, int size) {
    evidence_av_fd_source *source = opaque;
    for (;;) {
        ssize_t n = pread(source->fd, buf, (size_t)size, (off_t)source->position);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return AVERROR(errno);
        if (n == 0) return AVERROR_EOF;
        source->position += n;
        return (int)n;
    }
}

static inline int64_t evidence_av_fd_seek(void *opaque, int64_t offset, int whence) {
    evidence_av_fd_source *source = opaque;
    int64_t target;
    switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return source->size;
    case SEEK_SET: target = offset; break;
    case SEEK_CUR: target = source->position + offset; break;
    case SEEK_END: target = source->size + offset; break;
    default: return AVERROR(EINVAL);
    }
    if (target < 0) return AVERROR(EINVAL);
    source->position = target;
    return target;
}

/// avformat_open_input on descriptor `fd` (not closed here, nor by evidence_av_close_fd).
/// 0 and `*out` set, or a negative AVERROR. Close with evidence_av_close_fd.
static inline int evidence_av_open_fd(const evidence_av_api *api, AVFormatContext **out, int fd, AVDictionary **options) {
    enum { buffer_size = 65536 };
    struct stat st;
    if (fstat(fd, &st) != 0) return AVERROR(errno);
    evidence_av_fd_source *source = api->malloc(sizeof *source);
    unsigned char *buffer = api->malloc(buffer_size);
    AVFormatContext *ctx = api->alloc_context();
    AVIOContext *pb = (source && buffer && ctx)
        ? api->avio_alloc_context(buffer, buffer_size, 0, source, evidence_av_fd_read, NULL, evidence_av_fd_seek)
        : NULL;
    if (!pb) {
        api->free(source);
        api->free(buffer);
        if (ctx) api->close_input(&ctx);
        return AVERROR(ENOMEM);
    }
    source->fd = fd;
    source->position = 0;
    source->size = (int64_t)st.st_size;
    ctx->pb = pb;
    ctx->flags |= AVFMT_FLAG_CUSTOM_IO;
    // No URL: nothing to guess a format from by name, nothing to open. On failure libavformat
    // frees ctx, not the custom pb.
    int rc = api->open_input(&ctx, "", NULL, options);
    if (rc < 0) {
        api->free(pb->buffer);
        api->avio_context_free(&pb);
        api->free(source);
        return rc;
    }
    *out = ctx;
    return 0;
}

/// Closes what evidence_av_open_fd opened (libavformat's close leaves a custom pb alone).
static inline void evidence_av_close_fd(const evidence_av_api *api, AVFormatContext **ctx) {
    if (!ctx || !*ctx) return;
    AVIOContext *pb = (*ctx)->pb;
    api->close_input(ctx);
    if (pb) {
        void *source = pb->opaque;
        api->free(pb->buffer);   // libavformat may have replaced the buffer it was given
        api->avio_context_free(&pb);
        api->free(source);
    }
}

// ---- A poster frame: one decoded picture, scaled down, as RGB (the probe child's `--poster`).
#include <libavutil/frame.h>
#include <libavutil/pixfmt.h>
#include <libavcodec/packet.h>

typedef struct {
    __typeof__(avcodec_find_decoder) *find_decoder;
    __typeof__(avcodec_alloc_context3) *alloc_codec_context;
    __typeof__(avcodec_free_context) *free_codec_context;
    __typeof__(avcodec_parameters_to_context) *parameters_to_context;
    __typeof__(avcodec_open2) *open2;
    __typeof__(avcodec_send_packet) *send_packet;
    __typeof__(avcodec_receive_frame) *receive_frame;
    __typeof__(av_read_frame) *read_frame;
    __typeof__(av_frame_alloc) *frame_alloc;
    __typeof__(av_frame_free) *frame_free;
    __typeof__(av_packet_alloc) *packet_alloc;
    __typeof__(av_packet_free) *packet_free;
    __typeof__(av_packet_unref) *packet_unref;
} evidence_av_decode_api;

/// Fills `api` from the libraries `evidence_av_load` opened (dlopen again returns the same
/// handles); 1 on success, else 0 with the missing symbol in `error`.
static inline int evidence_av_load_decode(evidence_av_decode_api *api, char *error, size_t error_size) {
    void *codec = dlopen("libavcodec.so." EVIDENCE_AV_STR(LIBAVCODEC_VERSION_MAJOR), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    void *format = dlopen("libavformat.so." EVIDENCE_AV_STR(LIBAVFORMAT_VERSION_MAJOR), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    void *util = dlopen("libavutil.so." EVIDENCE_AV_STR(LIBAVUTIL_VERSION_MAJOR), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!codec || !format || !util) { snprintf(error, error_size, "libavcodec is not loaded"); return 0; }
#define EVIDENCE_AV_DSYM(field, lib, name) \
    if (!(api->field = (__typeof__(api->field))dlsym(lib, #name))) { snprintf(error, error_size, "no %s", #name); return 0; }
    EVIDENCE_AV_DSYM(find_decoder, codec, avcodec_find_decoder)
    EVIDENCE_AV_DSYM(alloc_codec_context, codec, avcodec_alloc_context3)
    EVIDENCE_AV_DSYM(free_codec_context, codec, avcodec_free_context)
    EVIDENCE_AV_DSYM(parameters_to_context, codec, avcodec_parameters_to_context)
    EVIDENCE_AV_DSYM(open2, codec, avcodec_open2)
    EVIDENCE_AV_DSYM(send_packet, codec, avcodec_send_packet)
    EVIDENCE_AV_DSYM(receive_frame, codec, avcodec_receive_frame)
    EVIDENCE_AV_DSYM(read_frame, format, av_read_frame)
    EVIDENCE_AV_DSYM(frame_alloc, util, av_frame_alloc)
    EVIDENCE_AV_DSYM(frame_free, util, av_frame_free)
    EVIDENCE_AV_DSYM(packet_alloc, codec, av_packet_alloc)
    EVIDENCE_AV_DSYM(packet_free, codec, av_packet_free)
    EVIDENCE_AV_DSYM(packet_unref, codec, av_packet_unref)
#undef EVIDENCE_AV_DSYM
    return 1;
}

static inline uint8_t evidence_clamp255(int v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

/// The pixel at (x, y) of `f` as RGB; 0 for a pixel format not handled (then the poster is not made).
static inline int evidence_av_pixel(const AVFrame *f, int x, int y, uint8_t rgb[3]) {
    int fmt = f->format;
    int cw = 1, ch = 1; // chroma subsampling shifts
    int full = 0;
    switch (fmt) {
    case AV_PIX_FMT_YUVJ420P: full = 1; /* fall through */
    case AV_PIX_FMT_YUV420P: cw = 1; ch = 1; break;
    case AV_PIX_FMT_YUVJ422P: full = 1; /* fall through */
    case AV_PIX_FMT_YUV422P: cw = 1; ch = 0; break;
    case AV_PIX_FMT_YUVJ444P: full = 1; /* fall through */
    case AV_PIX_FMT_YUV444P: cw = 0; ch = 0; break;
    case AV_PIX_FMT_GRAY8: {
        uint8_t v = f->data[0][y * f->linesize[0] + x];
        rgb[0] = rgb[1] = rgb[2] = v;
        return 1;
    }
    case AV_PIX_FMT_RGB24: case AV_PIX_FMT_BGR24: {
        const uint8_t *p = f->data[0] + y * f->linesize[0] + x * 3;
        int b = fmt == AV_PIX_FMT_BGR24;
        rgb[0] = p[b ? 2 : 0]; rgb[1] = p[1]; rgb[2] = p[b ? 0 : 2];
        return 1;
    }
    case AV_PIX_FMT_RGBA: case AV_PIX_FMT_BGRA: {
        const uint8_t *p = f->data[0] + y * f->linesize[0] + x * 4;
        int b = fmt == AV_PIX_FMT_BGRA;
        rgb[0] = p[b ? 2 : 0]; rgb[1] = p[1]; rgb[2] = p[b ? 0 : 2];
        return 1;
    }
    case AV_PIX_FMT_NV12: {
        int Y = f->data[0][y * f->linesize[0] + x];
        const uint8_t *uv = f->data[1] + (y >> 1) * f->linesize[1] + (x >> 1) * 2;
        int U = uv[0] - 128, V = uv[1] - 128, C = (Y - 16) * 298;
        rgb[0] = evidence_clamp255((C + 409 * V + 128) >> 8);
        rgb[1] = evidence_clamp255((C - 100 * U - 208 * V + 128) >> 8);
        rgb[2] = evidence_clamp255((C + 516 * U + 128) >> 8);
        return 1;
    }
    default: return 0;
    }
    int Y = f->data[0][y * f->linesize[0] + x];
    int U = f->data[1][(y >> ch) * f->linesize[1] + (x >> cw)] - 128;
    int V = f->data[2][(y >> ch) * f->linesize[2] + (x >> cw)] - 128;
    if (full) {
        int C = Y * 256;
        rgb[0] = evidence_clamp255((C + 359 * V + 128) >> 8);
        rgb[1] = evidence_clamp255((C - 88 * U - 183 * V + 128) >> 8);
        rgb[2] = evidence_clamp255((C + 454 * U + 128) >> 8);
    } else {
        int C = (Y - 16) * 298;
        rgb[0] = evidence_clamp255((C + 409 * V + 128) >> 8);
        rgb[1] = evidence_clamp255((C - 100 * U - 208 * V + 128) >> 8);
        rgb[2] = evidence_clamp255((C + 516 * U + 128) >> 8);
    }
    return 1;
}

/// Decodes the first picture of the first video stream of `ctx` (opened, stream info found) and
/// scales it (nearest neighbour) to at most `max_width` × `max_height`, keeping its shape.
/// 1 and `*out` (`*width` × `*height` × 3 bytes of RGB, from `api->malloc`; free with
/// `api->free`), or 0 with the reason in `error`. One thread; at most 600 packets read.
static inline int evidence_av_poster(const evidence_av_api *api, const evidence_av_decode_api *d, AVFormatContext *ctx,
                                     int max_width, int max_height, uint8_t **out, int *width, int *height,
                                     char *error, size_t error_size) {
    int stream = -1;
    for (unsigned i = 0; i < ctx->nb_streams; i++) {
        if (ctx->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_VIDEO
            && !(ctx->streams[i]->disposition & AV_DISPOSITION_ATTACHED_PIC)) { stream = (int)i; break; }
    }
    if (stream < 0) {
        for (unsigned i = 0; i < ctx->nb_streams; i++) {
            if (ctx->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_VIDEO) { stream = (int)i; break; }
        }
    }
    if (stream < 0) { snprintf(error, error_size, "no video stream"); return 0; }
    const AVCodec *codec = d->find_decoder(ctx->streams[stream]->codecpar->codec_id);
    if (!codec) { snprintf(error, error_size, "no decoder for this codec"); return 0; }
    AVCodecContext *cc = d->alloc_codec_context(codec);
    AVFrame *frame = d->frame_alloc();
    AVPacket *packet = d->packet_alloc();
    int ok = 0;
    if (!cc || !frame || !packet) { snprintf(error, error_size, "out of memory"); goto done; }
    if (d->parameters_to_context(cc, ctx->streams[stream]->codecpar) < 0) { snprintf(error, error_size, "bad codec parameters"); goto done; }
    cc->thread_count = 1;
    if (d->open2(cc, codec, NULL) < 0) { snprintf(error, error_size, "the decoder does not open"); goto done; }
    int got = 0, packets = 0, flushed = 0;
    while (!got && packets < 600) {
        int r = flushed ? 0 : d->read_frame(ctx, packet);
        if (r < 0) { d->send_packet(cc, NULL); flushed = 1; }
        else if (!flushed) {
            packets++;
            if (packet->stream_index == stream) d->send_packet(cc, packet);
            d->packet_unref(packet);
        }
        int f = d->receive_frame(cc, frame);
        if (f == 0) { got = 1; break; }
        if (flushed && f != AVERROR(EAGAIN)) break;
    }
    if (!got) { snprintf(error, error_size, "no picture decoded"); goto done; }
    int sw = frame->width, sh = frame->height;
    if (sw <= 0 || sh <= 0 || sw > 16384 || sh > 16384) { snprintf(error, error_size, "picture size out of range"); goto done; }
    int w = sw, h = sh;
    if (w > max_width) { h = (int)((int64_t)h * max_width / w); w = max_width; }
    if (h > max_height) { w = (int)((int64_t)w * max_height / h); h = max_height; }
    if (w < 1) w = 1;
    if (h < 1) h = 1;
    uint8_t *rgb = api->malloc((size_t)w * (size_t)h * 3);
    if (!rgb) { snprintf(error, error_size, "out of memory"); goto done; }
    for (int y = 0; y < h; y++) {
        int sy = (int)((int64_t)y * sh / h);
        for (int x = 0; x < w; x++) {
            int sx = (int)((int64_t)x * sw / w);
            if (!evidence_av_pixel(frame, sx, sy, rgb + ((size_t)y * w + x) * 3)) {
                api->free(rgb);
                snprintf(error, error_size, "pixel format %d is not handled", frame->format);
                goto done;
            }
        }
    }
    *out = rgb; *width = w; *height = h;
    ok = 1;
done:
    if (packet) d->packet_free(&packet);
    if (frame) d->frame_free(&frame);
    if (cc) d->free_codec_context(&cc);
    return ok;
}

#endif
