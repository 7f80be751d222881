#ifndef BRSYNC_CPOSTGRES_SHIM_H
#define BRSYNC_CPOSTGRES_SHIM_H

#include <libpq-fe.h>

// libpq prints server notices (NOTICE, WARNING) to stderr by default; the
// server's log is not the place for them. A C function, so Swift need not
// build a C function pointer.
static void brsync_pq_ignore_notice(void *arg, const char *message) {
    (void)arg;
    (void)message;
}

static inline void brsync_pq_quiet(PGconn *connection) {
    PQsetNoticeProcessor(connection, brsync_pq_ignore_notice, 0);
}

#endif
