// libcurl's functions that EvidenceHTTP, EvidenceS3 and the CCurl shim call, loaded on first use.
#define CURL_DISABLE_TYPECHECK 1 // curl.h would make curl_easy_setopt a macro
#include <curl/curl.h>
#include <stdarg.h>
#include "lazy_internal.h"

static evidence_lazy_library curl = {"libcurl.so.4", "HTTP: notaries, archives, S3", 0};

EVIDENCE_LAZY_HIDDEN CURLcode curl_global_init(long flags) {
    EVIDENCE_LAZY_FN(curl, curl_global_init) return real(flags);
}
EVIDENCE_LAZY_HIDDEN CURL *curl_easy_init(void) {
    EVIDENCE_LAZY_FN(curl, curl_easy_init) return real();
}
EVIDENCE_LAZY_HIDDEN CURLcode curl_easy_perform(CURL *h) {
    EVIDENCE_LAZY_FN(curl, curl_easy_perform) return real(h);
}
EVIDENCE_LAZY_HIDDEN void curl_easy_reset(CURL *h) {
    EVIDENCE_LAZY_FN(curl, curl_easy_reset) real(h);
}
EVIDENCE_LAZY_HIDDEN void curl_easy_cleanup(CURL *h) {
    EVIDENCE_LAZY_FN(curl, curl_easy_cleanup) real(h);
}
EVIDENCE_LAZY_HIDDEN const char *curl_easy_strerror(CURLcode code) {
    EVIDENCE_LAZY_FN(curl, curl_easy_strerror) return real(code);
}
EVIDENCE_LAZY_HIDDEN struct curl_slist *curl_slist_append(struct curl_slist *list, const char *s) {
    EVIDENCE_LAZY_FN(curl, curl_slist_append) return real(list, s);
}
EVIDENCE_LAZY_HIDDEN void curl_slist_free_all(struct curl_slist *list) {
    EVIDENCE_LAZY_FN(curl, curl_slist_free_all) real(list);
}

// The variadic two: the option's number says the argument's type (curl.h: CURLOPTTYPE_* and
// CURLINFO_* ranges), so the one argument is read as that type and passed on.
EVIDENCE_LAZY_HIDDEN CURLcode curl_easy_setopt(CURL *h, CURLoption option, ...) {
    EVIDENCE_LAZY_FN(curl, curl_easy_setopt)
    va_list ap;
    va_start(ap, option);
    CURLcode rc;
    if (option < CURLOPTTYPE_OBJECTPOINT) {
        long v = va_arg(ap, long);
        rc = real(h, option, v);
    } else if (option < CURLOPTTYPE_FUNCTIONPOINT) {
        void *v = va_arg(ap, void *);
        rc = real(h, option, v);
    } else if (option < CURLOPTTYPE_OFF_T) {
        // A function pointer: the same size and passing as a data pointer on Linux targets.
        void (*v)(void) = va_arg(ap, void (*)(void));
        rc = real(h, option, v);
    } else if (option < CURLOPTTYPE_BLOB) {
        curl_off_t v = va_arg(ap, curl_off_t);
        rc = real(h, option, v);
    } else {
        void *v = va_arg(ap, void *);
        rc = real(h, option, v);
    }
    va_end(ap);
    return rc;
}

EVIDENCE_LAZY_HIDDEN CURLcode curl_easy_getinfo(CURL *h, CURLINFO info, ...) {
    EVIDENCE_LAZY_FN(curl, curl_easy_getinfo)
    va_list ap;
    va_start(ap, info);
    void *out = va_arg(ap, void *); // every CURLINFO_* type is answered through a pointer
    va_end(ap);
    return real(h, info, out);
}
