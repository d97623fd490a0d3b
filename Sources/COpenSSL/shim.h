#ifndef EVIDENCE_COPENSSL_SHIM_H
#define EVIDENCE_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/err.h>
#include <openssl/crypto.h>

// EVP_MD_CTX helpers are functions in OpenSSL 3 but keep one place for any macro-only API.
static inline const EVP_MD *evidence_evp_sha256(void) { return EVP_sha256(); }
static inline const EVP_MD *evidence_evp_sha1(void) { return EVP_sha1(); }
static inline const EVP_MD *evidence_evp_md5(void) { return EVP_md5(); }
#endif

/* Not OpenSSL, but the store is the only module that needs it and it lives beside the
   store's other native calls: sync_file_range is only declared under _GNU_SOURCE. */
#include <sys/types.h>
extern int sync_file_range(int fd, off_t offset, off_t nbytes, unsigned int flags);
static inline int evidence_start_writeback(int fd, off_t offset, off_t nbytes) {
    return sync_file_range(fd, offset, nbytes, 2 /* SYNC_FILE_RANGE_WRITE */);
}
