#ifndef BRSYNC_CSQLITE_SHIM_H
#define BRSYNC_CSQLITE_SHIM_H

#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro casting -1 to a function pointer; Swift cannot
// import it, so it is exposed as a function.
static inline sqlite3_destructor_type brsync_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

// sqlite3_config is variadic, which Swift cannot call. Memory statistics take
// a process-wide mutex around every allocation; brsync does not read them, and
// without them connections on different threads do not contend.
static inline int brsync_sqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

#endif
