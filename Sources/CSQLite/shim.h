#ifndef BRSYNC_CSQLITE_SHIM_H
#define BRSYNC_CSQLITE_SHIM_H

#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro casting -1 to a function pointer; Swift cannot
// import it, so it is exposed as a function.
static inline sqlite3_destructor_type brsync_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

#endif
