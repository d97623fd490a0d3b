#ifndef EVIDENCE_LAZY_INTERNAL_H
#define EVIDENCE_LAZY_INTERNAL_H
typedef struct {
    const char *soname;     // e.g. "libcurl.so.4": the ABI our headers describe
    const char *needed_for; // said when it cannot be loaded
    void *handle;
} evidence_lazy_library;

/// The address of `name` in `lib`, loading `lib` on first use. Never NULL: a library or symbol
/// that cannot be found ends the process with a message (exit 70).
void *evidence_lazy_symbol(evidence_lazy_library *lib, const char *name);

// One cached pointer per function, typed from the library's own header.
#define EVIDENCE_LAZY_FN(lib, name) \
    static __typeof__(name) *evidence_lazy_##name; \
    __typeof__(name) *real = __atomic_load_n(&evidence_lazy_##name, __ATOMIC_ACQUIRE); \
    if (!real) { \
        real = (__typeof__(name) *)evidence_lazy_symbol(&(lib), #name); \
        __atomic_store_n(&evidence_lazy_##name, real, __ATOMIC_RELEASE); \
    }

#define EVIDENCE_LAZY_HIDDEN __attribute__((visibility("hidden")))
#endif
