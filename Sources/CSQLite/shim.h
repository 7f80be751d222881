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

// A file's birth time (statx), which tells a file from a copy put in its
// place even when the copy reuses the inode number. Glibc declares statx only
// under _GNU_SOURCE, which Swift's Glibc module is built without, so the
// system call is made here. Returns 0 with the time, or -1 (no statx, or the
// file system keeps no birth time).
#include <fcntl.h>
#include <linux/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline int brsync_file_birth(const char *path, long long *seconds, unsigned int *nanoseconds) {
#ifdef SYS_statx
    struct statx info;
    if (syscall(SYS_statx, AT_FDCWD, path, 0, STATX_BTIME, &info) != 0) return -1;
    if (!(info.stx_mask & STATX_BTIME)) return -1;
    *seconds = info.stx_btime.tv_sec;
    *nanoseconds = info.stx_btime.tv_nsec;
    return 0;
#else
    return -1;
#endif
}

#endif
