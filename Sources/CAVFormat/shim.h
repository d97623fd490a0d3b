#ifndef EVIDENCE_CAVFORMAT_SHIM_H
#define EVIDENCE_CAVFORMAT_SHIM_H
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
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
#undef EVIDENCE_AV_SYM
    return 1;
}
#endif
