#ifndef EVIDENCE_CLIBPQ_SHIM_H
#define EVIDENCE_CLIBPQ_SHIM_H
// libpq, the PostgreSQL project's own client library (Debian: libpq-dev).
#include <postgresql/libpq-fe.h> // the path, not pkg-config: libpq is loaded on use (CEvidenceLazy)
#endif
