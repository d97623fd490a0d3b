#ifndef EVIDENCE_CAVFORMAT_SHIM_H
#define EVIDENCE_CAVFORMAT_SHIM_H
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
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
#endif
