// libpq's functions that EvidenceCatalog's PostgreSQL catalog calls, loaded on first use: a
// single host on SQLite never loads libpq (nor its Kerberos, LDAP and GnuTLS dependencies).
#include <postgresql/libpq-fe.h>
#include "lazy_internal.h"

static evidence_lazy_library pq = {"libpq.so.5", "the PostgreSQL catalog", 0};

#define PQ_FN(ret, name, params, args) \
    EVIDENCE_LAZY_HIDDEN ret name params { EVIDENCE_LAZY_FN(pq, name) return real args; }
#define PQ_VOID(name, params, args) \
    EVIDENCE_LAZY_HIDDEN void name params { EVIDENCE_LAZY_FN(pq, name) real args; }

PQ_FN(PGconn *, PQconnectdbParams, (const char *const *keywords, const char *const *values, int expand_dbname),
      (keywords, values, expand_dbname))
PQ_FN(ConnStatusType, PQstatus, (const PGconn *conn), (conn))
PQ_FN(char *, PQerrorMessage, (const PGconn *conn), (conn))
PQ_VOID(PQfinish, (PGconn *conn), (conn))
PQ_FN(int, PQsocket, (const PGconn *conn), (conn))
PQ_FN(int, PQconsumeInput, (PGconn *conn), (conn))
PQ_FN(PGnotify *, PQnotifies, (PGconn *conn), (conn))
PQ_VOID(PQfreemem, (void *ptr), (ptr))
PQ_FN(PGresult *, PQexec, (PGconn *conn, const char *query), (conn, query))
PQ_FN(PGresult *, PQexecParams,
      (PGconn *conn, const char *command, int nParams, const Oid *paramTypes, const char *const *paramValues,
       const int *paramLengths, const int *paramFormats, int resultFormat),
      (conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats, resultFormat))
PQ_FN(ExecStatusType, PQresultStatus, (const PGresult *res), (res))
PQ_FN(char *, PQresultErrorMessage, (const PGresult *res), (res))
PQ_FN(char *, PQresultErrorField, (const PGresult *res, int fieldcode), (res, fieldcode))
PQ_VOID(PQclear, (PGresult *res), (res))
PQ_FN(int, PQntuples, (const PGresult *res), (res))
PQ_FN(int, PQnfields, (const PGresult *res), (res))
PQ_FN(char *, PQfname, (const PGresult *res, int field_num), (res, field_num))
PQ_FN(char *, PQgetvalue, (const PGresult *res, int tup_num, int field_num), (res, tup_num, field_num))
PQ_FN(int, PQgetisnull, (const PGresult *res, int tup_num, int field_num), (res, tup_num, field_num))
