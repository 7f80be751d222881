#ifndef BRSYNC_COPENSSL_SHIM_H
#define BRSYNC_COPENSSL_SHIM_H

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/evp.h>
#include <openssl/x509v3.h>

// Function-like macros of OpenSSL that Swift cannot import.
static inline long brsync_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}
static inline long brsync_SSL_CTX_set_options(SSL_CTX *ctx, unsigned long options) {
    return (long)SSL_CTX_set_options(ctx, options);
}
static inline long brsync_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}

#endif
