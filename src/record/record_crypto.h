/* record_crypto.h — the hashing and signing the flight recorder needs, on
 * OpenSSL's libcrypto (SHA-256, Ed25519): the writer (record.c) and the
 * verifier (record_verify.c) share it. Keys are PEM files as
 * `openssl genpkey -algorithm ed25519` writes them (and `openssl pkey
 * -pubout` for the public half). */
#ifndef FB_RECORD_CRYPTO_H
#define FB_RECORD_CRYPTO_H

#include "fb.h"

#define FB_SHA256_HEX 65  /* 64 hex digits and a NUL */
#define FB_ED25519_PUB_HEX 65
#define FB_ED25519_SIG_HEX 129

typedef struct evp_pkey_st EVP_PKEY;

/* Keep libcrypto from reading the host's openssl.cnf (nothing it says
 * matters here, and a static binary should not depend on it). */
void rc_init(void);

void rc_sha256_hex(const void *data, size_t len, char out[FB_SHA256_HEX]);

/* An Ed25519 private key from PEM text read from fd (from its start); NULL
 * with err when unreadable, not PEM, or not Ed25519. what names the file
 * in messages. */
EVP_PKEY *rc_private_key_fd(int fd, const char *what, struct fb_err *err);
/* An Ed25519 public key from a PEM file: a public key, or a private key
 * (its public half is used). NULL with err. */
EVP_PKEY *rc_public_key_file(const char *path, struct fb_err *err);
/* An Ed25519 public key from its 64 hex digits (the record's first line). */
EVP_PKEY *rc_public_key_hex(const char *hex);
/* The raw public key as 64 hex digits. */
int rc_public_hex(EVP_PKEY *k, char out[FB_ED25519_PUB_HEX]);

/* Sign data: 128 hex digits. */
int rc_sign_hex(EVP_PKEY *k, const void *data, size_t len, char out[FB_ED25519_SIG_HEX]);
/* Does sig_hex (128 hex digits) sign data under k? */
bool rc_verify_hex(EVP_PKEY *k, const void *data, size_t len, const char *sig_hex);

void rc_free(EVP_PKEY *k);

#endif
