#ifndef EVIDENCE_COPENSSL_SHIM_H
#define EVIDENCE_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/err.h>
#include <openssl/crypto.h>

// EVP_MD_CTX helpers are functions in OpenSSL 3 but keep one place for any macro-only API.
static inline const EVP_MD *evidence_evp_sha256(void) { return EVP_sha256(); }
static inline const EVP_MD *evidence_evp_sha1(void) { return EVP_sha1(); }
static inline const EVP_MD *evidence_evp_md5(void) { return EVP_md5(); }
static inline const EVP_MD *evidence_evp_sha512(void) { return EVP_sha512(); }
static inline const EVP_MD *evidence_evp_ripemd160(void) { return EVP_ripemd160(); }
#endif

/* Not OpenSSL, but the store is the only module that needs it and it lives beside the
   store's other native calls: sync_file_range is only declared under _GNU_SOURCE. */
#include <sys/types.h>
extern int sync_file_range(int fd, off_t offset, off_t nbytes, unsigned int flags);
static inline int evidence_start_writeback(int fd, off_t offset, off_t nbytes) {
    return sync_file_range(fd, offset, nbytes, 2 /* SYNC_FILE_RANGE_WRITE */);
}

/* RFC 3161 time-stamp requests and replies (EvidenceNotary). */
#include <openssl/ts.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/rand.h>
#include <openssl/asn1.h>
#include <openssl/bn.h>

/* RFC 3161 helpers for EvidenceNotary: STACK_OF(...) accessors, BIO_get_mem_data and
   name-printing flags are macros in OpenSSL 3 and do not import into Swift. */
static inline int evidence_sk_X509_num(const STACK_OF(X509) *s) { return sk_X509_num(s); }
static inline X509 *evidence_sk_X509_value(const STACK_OF(X509) *s, int i) { return sk_X509_value(s, i); }
static inline void evidence_sk_X509_free(STACK_OF(X509) *s) { sk_X509_free(s); }
static inline void evidence_sk_X509_pop_free(STACK_OF(X509) *s) { sk_X509_pop_free(s, X509_free); }
static inline int evidence_sk_ASN1_UTF8STRING_num(const STACK_OF(ASN1_UTF8STRING) *s) { return sk_ASN1_UTF8STRING_num(s); }
static inline ASN1_UTF8STRING *evidence_sk_ASN1_UTF8STRING_value(const STACK_OF(ASN1_UTF8STRING) *s, int i) {
    return sk_ASN1_UTF8STRING_value(s, i);
}
static inline long evidence_bio_get_mem_data(BIO *b, char **pp) { return BIO_get_mem_data(b, pp); }
static inline unsigned long evidence_xn_flag_rfc2253(void) { return XN_FLAG_RFC2253; }
static inline int evidence_bn_num_bytes(const BIGNUM *bn) { return BN_num_bytes(bn); }
