#ifndef DOORGATEWAY_SQLITE_SHIM_H
#define DOORGATEWAY_SQLITE_SHIM_H
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast macro Swift cannot import: SQLite copies the
// bytes before the bind returns, so the caller's buffer may go right after.
static inline int csqlite_bind_text(sqlite3_stmt *s, int i, const char *p, int n) {
    return sqlite3_bind_text(s, i, p, n, SQLITE_TRANSIENT);
}

// A zero-length blob is bound as an empty blob, never as NULL (a NULL
// pointer would bind SQL NULL and break NOT NULL columns).
static inline int csqlite_bind_blob(sqlite3_stmt *s, int i, const void *p, int n) {
    if (n == 0) return sqlite3_bind_zeroblob(s, i, 0);
    return sqlite3_bind_blob(s, i, p, n, SQLITE_TRANSIENT);
}
#endif
