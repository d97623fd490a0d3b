#ifndef EVIDENCE_LAZY_H
#define EVIDENCE_LAZY_H
// libcurl, libpq and cairo are loaded on first use (dlopen), not at process start: this target
// defines their functions that our code calls as stubs that forward to the library, so nothing
// else changes. Linked, the three and the ~50 libraries they need (GnuTLS, Kerberos, LDAP, X11,
// FreeType, ...) were mapped and relocated by every `evidence` process, `evidence hash` included:
// about 8 MB of its peak memory. What a library failed to load is said once on standard error,
// and the process exits 70: the command needed it and cannot go on without it.
// Nothing to call here: the stubs carry the libraries' own names (curl.c, pq.c, cairo.c).
#endif
