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

// mallopt's parameter names are macros: one typed wrapper for the arena limit (EvidenceProcess/MallocArenas.swift).
#include <malloc.h>
static inline int evidence_malloc_arena_max(int arenas) { return mallopt(M_ARENA_MAX, arenas); }

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
// The media probe's confinement (EvidenceProcess/ProbeSandbox.swift): a child that parses
// hostile files drops its network, its user and most of the kernel before it reads a byte.
#include <grp.h>
#include <sched.h>
#include <stddef.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

// unshare(2) is declared only under _GNU_SOURCE. CLONE_NEWNET: a new, empty network namespace
// (only a loopback interface, down); it needs CAP_SYS_ADMIN, which root has.
extern int unshare(int flags);
#ifndef CLONE_NEWNET
#define CLONE_NEWNET 0x40000000
#endif
static inline int evidence_unshare_network(void) { return unshare(CLONE_NEWNET); }

// No supplementary groups, then the group, then the user: root → `uid`/`gid` for good (as root,
// setgid/setuid set the real, effective and saved ids; glibc applies them to every thread).
static inline int evidence_drop_privileges(uid_t uid, gid_t gid) {
    if (setgroups(0, NULL) != 0) return -1;
    if (setgid(gid) != 0) return -1;
    if (setuid(uid) != 0) return -1;
    return 0;
}

// prctl is variadic: typed wrappers. No new privileges: no set-uid binary, file capability or
// LSM transition can give this process (or what it executes) more than it has. Required before
// an unprivileged process may install a seccomp filter.
static inline int evidence_set_no_new_privs(void) { return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); }
static inline int evidence_get_no_new_privs(void) { return prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); }

#if defined(__x86_64__)
#define EVIDENCE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define EVIDENCE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/// The probe's seccomp filter, built by hand (no libseccomp): a deny list, each call answered
/// EPERM. Denied: opening anything (open, openat, openat2, creat, open_by_handle_at, open_tree;
/// io_uring, which can open files without a system call of its own), sockets (every address
/// family: the probe reads one inherited descriptor and writes its standard output), changing
/// the file system (unlink, rename, link, symlink, mkdir, rmdir, mknod, chmod, chown, truncate,
/// utimes, xattrs), executing (execve, execveat), reaching other processes or the kernel's keys
/// (ptrace, process_vm_readv/writev, pidfd_getfd, keyctl, add_key, request_key) and changing
/// the sandbox (unshare, setns, mount and the new mount API, chroot, pivot_root, bpf,
/// perf_event_open, userfaultfd). A system call of another ABI (i386 through int 0x80, x32)
/// kills the process: its numbers would not be those checked.
///
/// Installed with SECCOMP_FILTER_FLAG_TSYNC, on every thread of the process at once (a thread
/// started before would otherwise stay unfiltered); it stays on across fork and exec. Returns 0,
/// or -1 with errno (ENOSYS: an architecture this filter does not know; ESRCH: a thread could
/// not be synchronised; EACCES: no new privileges was not set and the process lacks CAP_SYS_ADMIN).
static inline int evidence_install_probe_seccomp(void) {
#ifndef EVIDENCE_AUDIT_ARCH
    errno = ENOSYS;
    return -1;
#else
    static const int denied[] = {
#ifdef __NR_open
        __NR_open,
#endif
#ifdef __NR_creat
        __NR_creat,
#endif
        __NR_openat,
#ifdef __NR_openat2
        __NR_openat2,
#endif
        __NR_open_by_handle_at,
#ifdef __NR_open_tree
        __NR_open_tree,
#endif
#ifdef __NR_io_uring_setup
        __NR_io_uring_setup, __NR_io_uring_enter, __NR_io_uring_register,
#endif
        __NR_socket, __NR_socketpair,
#ifdef __NR_unlink
        __NR_unlink,
#endif
        __NR_unlinkat,
#ifdef __NR_rename
        __NR_rename,
#endif
#ifdef __NR_renameat
        __NR_renameat,
#endif
        __NR_renameat2,
#ifdef __NR_link
        __NR_link,
#endif
        __NR_linkat,
#ifdef __NR_symlink
        __NR_symlink,
#endif
        __NR_symlinkat,
#ifdef __NR_mkdir
        __NR_mkdir,
#endif
        __NR_mkdirat,
#ifdef __NR_rmdir
        __NR_rmdir,
#endif
#ifdef __NR_mknod
        __NR_mknod,
#endif
        __NR_mknodat,
#ifdef __NR_chmod
        __NR_chmod,
#endif
        __NR_fchmod, __NR_fchmodat,
#ifdef __NR_fchmodat2
        __NR_fchmodat2,
#endif
#ifdef __NR_chown
        __NR_chown,
#endif
#ifdef __NR_lchown
        __NR_lchown,
#endif
        __NR_fchown, __NR_fchownat, __NR_truncate, __NR_ftruncate,
#ifdef __NR_utime
        __NR_utime,
#endif
#ifdef __NR_utimes
        __NR_utimes,
#endif
#ifdef __NR_futimesat
        __NR_futimesat,
#endif
        __NR_utimensat,
        __NR_setxattr, __NR_lsetxattr, __NR_fsetxattr, __NR_removexattr, __NR_lremovexattr, __NR_fremovexattr,
        __NR_execve, __NR_execveat,
        __NR_ptrace, __NR_process_vm_readv, __NR_process_vm_writev,
#ifdef __NR_pidfd_getfd
        __NR_pidfd_getfd,
#endif
        __NR_keyctl, __NR_add_key, __NR_request_key,
        __NR_unshare, __NR_setns, __NR_mount, __NR_umount2, __NR_chroot, __NR_pivot_root,
#ifdef __NR_fsopen
        __NR_fsopen, __NR_fsconfig, __NR_fsmount, __NR_fspick, __NR_move_mount,
#endif
#ifdef __NR_mount_setattr
        __NR_mount_setattr,
#endif
        __NR_bpf, __NR_perf_event_open, __NR_userfaultfd,
    };
    enum { count = sizeof(denied) / sizeof(denied[0]) };
    // 4 for the architecture and the number, 2 for x32, 2 for each denied call, 1 to allow the
    // rest: 7 + 2 * count. (It was 6 + 2 * count: the last instruction was written past the
    // array, which a release build's stack protector caught as "stack smashing detected", so
    // every probe child of a release build died before it parsed a byte.)
    struct sock_filter program[7 + 2 * count];
    size_t n = 0;
    program[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, EVIDENCE_AUDIT_ARCH, 1, 0);
    program[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    program[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
#if defined(__x86_64__)
    // x32 system calls are the x86_64 numbers with bit 30 set, under the same audit arch.
    program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);
    program[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
#endif
    for (size_t i = 0; i < count; i++) {
        program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)denied[i], 0, 1);
        program[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));
    }
    program[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog prog = { .len = (unsigned short)n, .filter = program };
    long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
    if (rc > 0) { errno = ESRCH; return -1; }   // the id of a thread that could not be synchronised
    return rc == 0 ? 0 : -1;
#endif
}

// The media probe's fork server (`ForkServer`): a descriptor travels over a Unix socket as
// SCM_RIGHTS ancillary data, whose CMSG_* macros do not import into Swift. SOCK_SEQPACKET keeps
// each request and answer one message, never split or merged.
#include <sys/socket.h>
#include <signal.h>
#include <string.h>
static inline int evidence_socketpair_seqpacket(int fds[2]) {
    return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds);
}

/// Sends `len` bytes as one message, with descriptor `fd` attached when it is 0 or above.
/// Returns the bytes sent, or -1 with errno (EPIPE when the peer has gone: never SIGPIPE).
static inline long evidence_send_with_fd(int sock, const void *buf, size_t len, int fd) {
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
    union { char bytes[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } control;
    memset(&control, 0, sizeof control);
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (fd >= 0) {
        msg.msg_control = control.bytes;
        msg.msg_controllen = sizeof control.bytes;
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    long n;
    do { n = sendmsg(sock, &msg, MSG_NOSIGNAL); } while (n < 0 && errno == EINTR);
    return n;
}

/// Receives one message of at most `cap` bytes into `buf`; `*fd` is the first descriptor that
/// came with it (close-on-exec), or -1. Any further descriptor is closed. A message or its
/// control data cut short is refused (-1, EMSGSIZE), its descriptors closed. Returns the bytes
/// received (0: the peer closed the socket), or -1 with errno.
static inline long evidence_recv_with_fd(int sock, void *buf, size_t cap, int *fd) {
    *fd = -1;
    struct iovec iov = { .iov_base = buf, .iov_len = cap };
    union { char bytes[CMSG_SPACE(4 * sizeof(int))]; struct cmsghdr align; } control;
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.bytes;
    msg.msg_controllen = sizeof control.bytes;
    long n;
    do { n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC); } while (n < 0 && errno == EINTR);
    if (n < 0) return n;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count && i < 4; i++) {
            int received;
            memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (*fd < 0) *fd = received; else close(received);
        }
    }
    if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
        if (*fd >= 0) close(*fd);
        *fd = -1;
        errno = EMSGSIZE;
        return -1;
    }
    return n;
}

// fork(2), and the child's way out without running this process's exit handlers (which belong
// to the parent's state: buffered output, atexit hooks of the runtime).
static inline int evidence_fork(void) { return fork(); }
// A forked probe child dies with the server that forked it (prctl is variadic).
static inline int evidence_die_with_parent(void) { return prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0); }
static inline __attribute__((noreturn)) void evidence_exit_now(int code) { _exit(code); }

#endif
