#ifndef EVIDENCE_CLIBPQ_SHIM_H
#define EVIDENCE_CLIBPQ_SHIM_H
// libpq, the PostgreSQL project's own client library (Debian: libpq-dev).
#include <libpq-fe.h>
#endif
