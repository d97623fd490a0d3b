#ifndef EVIDENCE_CSYSTEM_SHIM_H
#define EVIDENCE_CSYSTEM_SHIM_H
#include <spawn.h>
#include <fcntl.h>
#include <unistd.h>
#include <errno.h>

// glibc declares these only under _GNU_SOURCE, which Swift's Glibc module is not built with.
// They are in glibc since 2.29 (addchdir_np) and 2.34 (addclosefrom_np); Debian 12 has 2.36.
extern int posix_spawn_file_actions_addchdir_np(posix_spawn_file_actions_t *actions, const char *path);
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
extern int pipe2(int fds[2], int flags);

static inline int evidence_spawn_addchdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}
static inline int evidence_spawn_addclosefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}
static inline int evidence_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

// prctl is variadic: one typed wrapper. Not dumpable: no core file, and no ptrace or
// /proc/PID/mem by other processes of the same user.
#include <sys/prctl.h>
static inline int evidence_set_not_dumpable(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }

// openat2(2) (Linux 5.6) has no glibc wrapper: call it through syscall(2), which is variadic.
// Returns -1 with errno ENOSYS where the kernel lacks it.
#include <sys/syscall.h>
#include <linux/openat2.h>
static inline int evidence_openat2(int dirfd, const char *path, unsigned long long flags, unsigned long long resolve) {
#ifdef SYS_openat2
    struct open_how how = { .flags = flags, .mode = 0, .resolve = resolve };
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
#else
    errno = ENOSYS;
    return -1;
#endif
}
#endif
