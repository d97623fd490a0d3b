#include "evidence_lazy.h"
#include "lazy_internal.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void evidence_lazy_fail(const evidence_lazy_library *lib, const char *what) {
    // stderr only: no secret is ever part of a soname or the loader's message.
    fprintf(stderr, "evidence: %s could not be loaded (needed for %s): %s. "
                    "Install it with `make deps` (Debian: scripts/deps.sh lists the package).\n",
            lib->soname, lib->needed_for, what ? what : "unknown error");
    fflush(stderr);
    _exit(70);
}

void *evidence_lazy_symbol(evidence_lazy_library *lib, const char *name) {
    // Loaded once, under one mutex for all libraries (pthread_once cannot take an argument).
    static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
    void *handle = __atomic_load_n(&lib->handle, __ATOMIC_ACQUIRE);
    if (!handle) {
        pthread_mutex_lock(&mutex);
        handle = lib->handle;
        if (!handle) {
            handle = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
            if (!handle) {
                const char *e = dlerror();
                pthread_mutex_unlock(&mutex);
                evidence_lazy_fail(lib, e);
            }
            __atomic_store_n(&lib->handle, handle, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&mutex);
    }
    dlerror();
    void *p = dlsym(handle, name);
    if (!p) {
        char what[256];
        const char *e = dlerror();
        snprintf(what, sizeof what, "no symbol %s (%s)", name, e ? e : "not found");
        evidence_lazy_fail(lib, what);
    }
    return p;
}
