#ifndef BRSYNC_CQRENCODE_SHIM_H
#define BRSYNC_CQRENCODE_SHIM_H

// libqrencode (Debian libqrencode-dev): the QR code of a join code, drawn by
// `brsyncd device add --qr` for a phone to scan, and the settings window's
// recovery code. Only brsyncd and brsync-settings link it (through QRCode).
#include <qrencode.h>

#endif
