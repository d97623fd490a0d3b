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
#endif
