#ifndef BRSYNC_COPENSSL_SHIM_H
#define BRSYNC_COPENSSL_SHIM_H

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/crypto.h>
#include <openssl/params.h>
#include <openssl/core_names.h>
#include <openssl/sha.h>
#include <string.h>

// Function-like macros and 64-bit option constants of OpenSSL that Swift
// cannot import, as functions.

static inline long brsync_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}

/// No compression (CRIME), no renegotiation, the server's cipher order.
static inline void brsync_SSL_CTX_set_server_options(SSL_CTX *ctx) {
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
}

/// Key-exchange groups offered and accepted (a colon-separated list).
static inline int brsync_SSL_CTX_set1_groups_list(SSL_CTX *ctx, const char *list) {
    return (int)SSL_CTX_set1_groups_list(ctx, list);
}

static inline void brsync_SSL_CTX_set_client_options(SSL_CTX *ctx) {
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
}

/// Partial writes allowed, and the write buffer may move between retries.
static inline void brsync_SSL_set_modes(SSL *ssl) {
    SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
}

static inline long brsync_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}

static inline int brsync_SSL_TLSEXT_ERR_OK(void) { return SSL_TLSEXT_ERR_OK; }
static inline int brsync_SSL_TLSEXT_ERR_ALERT_FATAL(void) { return SSL_TLSEXT_ERR_ALERT_FATAL; }

/// Whether the oldest error queued is the peer closing the connection
/// without a TLS close (OpenSSL 3 reports it as an error, not as EOF).
static inline int brsync_SSL_error_is_unexpected_eof(void) {
    unsigned long error = ERR_peek_error();
    return ERR_GET_LIB(error) == ERR_LIB_SSL && ERR_GET_REASON(error) == SSL_R_UNEXPECTED_EOF_WHILE_READING;
}

/// The certificate stacks of OpenSSL 3 are macros over OPENSSL_sk_*.
static inline int brsync_sk_X509_num(const STACK_OF(X509) *chain) {
    return sk_X509_num(chain);
}

static inline X509 *brsync_sk_X509_value(const STACK_OF(X509) *chain, int index) {
    return sk_X509_value(chain, index);
}

/// An HMAC-SHA256 context holding `key` (OpenSSL 3's EVP_MAC), or NULL.
/// `EVP_MAC_init(context, NULL, 0, NULL)` starts a new message under the
/// same key without hashing it again.
static inline EVP_MAC_CTX *brsync_hmac_sha256_new(const unsigned char *key, size_t length) {
    static const unsigned char none = 0;
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    if (mac == NULL) return NULL;
    EVP_MAC_CTX *context = EVP_MAC_CTX_new(mac);
    EVP_MAC_free(mac); // the context holds its own reference
    if (context == NULL) return NULL;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
        OSSL_PARAM_construct_end(),
    };
    if (EVP_MAC_init(context, key != NULL ? key : &none, length, params) != 1) {
        EVP_MAC_CTX_free(context);
        return NULL;
    }
    return context;
}

/// HMAC-SHA256 (RFC 2104) with the key's inner and outer SHA-256 states
/// computed once: a message costs two SHA-256 runs and none of OpenSSL 3's
/// per-call parameter handling (a push of 10,000 rules computes 80,000 of
/// them, for nonces and record keys). Where the SHA-256 functions are gone
/// (OpenSSL 4 may drop them), it is OpenSSL's HMAC through EVP_MAC.
#if OPENSSL_VERSION_MAJOR < 4 && !defined(OPENSSL_NO_DEPRECATED_3_0)
typedef struct {
    SHA256_CTX inner;
    SHA256_CTX outer;
} brsync_hmac_sha256_key;

static inline int brsync_hmac_sha256_key_init(brsync_hmac_sha256_key *prepared, const unsigned char *key, size_t length) {
    unsigned char block[64] = {0};
    if (length > 64) {
        SHA256(key, length, block);
    } else if (length > 0) {
        memcpy(block, key, length);
    }
    unsigned char pad[64];
    for (int i = 0; i < 64; i++) pad[i] = block[i] ^ 0x36;
    int done = SHA256_Init(&prepared->inner) == 1 && SHA256_Update(&prepared->inner, pad, 64) == 1;
    for (int i = 0; i < 64; i++) pad[i] = block[i] ^ 0x5c;
    done = done && SHA256_Init(&prepared->outer) == 1 && SHA256_Update(&prepared->outer, pad, 64) == 1;
    OPENSSL_cleanse(block, sizeof block);
    OPENSSL_cleanse(pad, sizeof pad);
    return done;
}

static inline void brsync_hmac_sha256_key_clear(brsync_hmac_sha256_key *prepared) {
    OPENSSL_cleanse(prepared, sizeof *prepared);
}

/// The HMAC of `first` followed by `second`, into `output` (32 bytes).
static inline int brsync_hmac_sha256(const brsync_hmac_sha256_key *prepared, const void *first, size_t first_length,
                                     const void *second, size_t second_length, unsigned char *output) {
    SHA256_CTX context = prepared->inner;
    unsigned char inner[32];
    int done = SHA256_Update(&context, first, first_length) == 1 && SHA256_Update(&context, second, second_length) == 1
        && SHA256_Final(inner, &context) == 1;
    context = prepared->outer;
    done = done && SHA256_Update(&context, inner, 32) == 1 && SHA256_Final(output, &context) == 1;
    OPENSSL_cleanse(&context, sizeof context);
    return done;
}
#else
typedef struct {
    EVP_MAC_CTX *context;
} brsync_hmac_sha256_key;

static inline int brsync_hmac_sha256_key_init(brsync_hmac_sha256_key *prepared, const unsigned char *key, size_t length) {
    prepared->context = brsync_hmac_sha256_new(key, length);
    return prepared->context != NULL;
}

static inline void brsync_hmac_sha256_key_clear(brsync_hmac_sha256_key *prepared) {
    EVP_MAC_CTX_free(prepared->context);
    prepared->context = NULL;
}

static inline int brsync_hmac_sha256(const brsync_hmac_sha256_key *prepared, const void *first, size_t first_length,
                                     const void *second, size_t second_length, unsigned char *output) {
    size_t length = 0;
    // A NULL key starts a new message under the key already set.
    return EVP_MAC_init(prepared->context, NULL, 0, NULL) == 1 && EVP_MAC_update(prepared->context, first, first_length) == 1
        && EVP_MAC_update(prepared->context, second, second_length) == 1 && EVP_MAC_final(prepared->context, output, &length, 32) == 1
        && length == 32;
}
#endif

#endif
