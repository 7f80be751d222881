#ifndef BRSYNC_CDEFLATE_SHIM_H
#define BRSYNC_CDEFLATE_SHIM_H

// libdeflate (Debian libdeflate-dev): gzip bodies of readable accounts'
// pushes, relays and pull pages (`Content-Encoding: gzip`), through
// ContentCoding. Whole buffers only, which is what an HTTP body is here.
#include <libdeflate.h>

#endif
