/* record_crypto.c — SHA-256 and Ed25519 for the flight recorder (see
 * record_crypto.h), on OpenSSL's libcrypto: neither is written by hand.
 * Private key bytes read from a file are wiped from memory once parsed. */
#include "record_crypto.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <limits.h>
#include <string.h>

#define PEM_MAX 16384

void rc_init(void)
{
    OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, NULL);
}

static void hex(const unsigned char *b, size_t n, char *out)
{
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[b[i] >> 4];
        out[2 * i + 1] = d[b[i] & 15];
    }
    out[2 * n] = 0;
}

static int unhex(const char *s, unsigned char *out, size_t n)
{
    if (strlen(s) != 2 * n)
        return -1;
    for (size_t i = 0; i < 2 * n; i++) {
        char c = s[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0)
            return -1;
        if (i % 2)
            out[i / 2] = (unsigned char)(out[i / 2] | v);
        else
            out[i / 2] = (unsigned char)(v << 4);
    }
    return 0;
}

void rc_sha256_hex(const void *data, size_t len, char out[FB_SHA256_HEX])
{
    unsigned char md[32];
    unsigned int n = 0;
    if (!EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) || n != 32)
    {
        fb_warn("libcrypto: SHA-256 failed"); /* nothing can be recorded or checked */
        abort();
    }
    hex(md, 32, out);
}

static int pw_none(char *buf, int size, int rwflag, void *u)
{
    return 0; /* no passphrase: an encrypted key fails to load */
}

/* PEM text to an Ed25519 key; priv: a private key (else a public key, or a
 * private one whose public half is taken). */
static EVP_PKEY *pem_key(const char *text, size_t len, bool priv, const char *what,
                         struct fb_err *err)
{
    BIO *b = BIO_new_mem_buf(text, (int)len);
    if (!b) {
        fb_errf(err, FB_EXIT_SETUP, "%s: out of memory", what);
        return NULL;
    }
    EVP_PKEY *k = NULL;
    if (priv) {
        k = PEM_read_bio_PrivateKey(b, NULL, pw_none, NULL);
    } else {
        k = PEM_read_bio_PUBKEY(b, NULL, pw_none, NULL);
        if (!k && BIO_reset(b) == 1)
            k = PEM_read_bio_PrivateKey(b, NULL, pw_none, NULL);
    }
    BIO_free(b);
    ERR_clear_error();
    if (!k) {
        if (strstr(text, "ENCRYPTED"))
            fb_errf(err, FB_EXIT_SETUP, "%s: an encrypted key (fluebox reads keys without a passphrase)", what);
        else
            fb_errf(err, FB_EXIT_SETUP, "%s: not a PEM %s key", what, priv ? "private" : "public");
        return NULL;
    }
    if (EVP_PKEY_get_base_id(k) != EVP_PKEY_ED25519) {
        fb_errf(err, FB_EXIT_SETUP, "%s: not an Ed25519 key (it is %s; make one with "
                "`openssl genpkey -algorithm ed25519`)", what, OBJ_nid2sn(EVP_PKEY_get_base_id(k)));
        EVP_PKEY_free(k);
        return NULL;
    }
    return k;
}

EVP_PKEY *rc_private_key_fd(int fd, const char *what, struct fb_err *err)
{
    char *buf = fb_xmalloc(PEM_MAX + 1);
    size_t len = 0;
    for (;;) {
        ssize_t n = pread(fd, buf + len, PEM_MAX - len, (off_t)len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fb_errno(err, FB_EXIT_SETUP, "%s", what);
            OPENSSL_cleanse(buf, PEM_MAX + 1);
            free(buf);
            return NULL;
        }
        if (n == 0 || (len += (size_t)n) == PEM_MAX)
            break;
    }
    buf[len] = 0;
    EVP_PKEY *k = NULL;
    if (len == PEM_MAX)
        fb_errf(err, FB_EXIT_SETUP, "%s: larger than %d bytes: not a PEM key", what, PEM_MAX);
    else
        k = pem_key(buf, len, true, what, err);
    OPENSSL_cleanse(buf, PEM_MAX + 1);
    free(buf);
    return k;
}

EVP_PKEY *rc_public_key_file(const char *path, struct fb_err *err)
{
    char buf[PEM_MAX + 1];
    ssize_t n = fb_read_file(path, buf, sizeof buf);
    if (n < 0) {
        fb_errno(err, FB_EXIT_SETUP, "--key %s", path);
        return NULL;
    }
    if ((size_t)n >= PEM_MAX) {
        fb_errf(err, FB_EXIT_SETUP, "--key %s: larger than %d bytes: not a PEM key", path, PEM_MAX);
        return NULL;
    }
    buf[n] = 0;
    char what[PATH_MAX + 8];
    snprintf(what, sizeof what, "--key %s", path);
    EVP_PKEY *k = pem_key(buf, (size_t)n, false, what, err);
    OPENSSL_cleanse(buf, sizeof buf); /* it may have been a private key */
    return k;
}

EVP_PKEY *rc_public_key_hex(const char *h)
{
    unsigned char raw[32];
    if (!h || unhex(h, raw, sizeof raw) < 0)
        return NULL;
    return EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, raw, sizeof raw);
}

int rc_public_hex(EVP_PKEY *k, char out[FB_ED25519_PUB_HEX])
{
    unsigned char raw[32];
    size_t n = sizeof raw;
    if (EVP_PKEY_get_raw_public_key(k, raw, &n) != 1 || n != sizeof raw)
        return -1;
    hex(raw, n, out);
    return 0;
}

int rc_sign_hex(EVP_PKEY *k, const void *data, size_t len, char out[FB_ED25519_SIG_HEX])
{
    unsigned char sig[64];
    size_t n = sizeof sig;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestSignInit(ctx, NULL, NULL, NULL, k) == 1 &&
             EVP_DigestSign(ctx, sig, &n, data, len) == 1 && n == sizeof sig;
    EVP_MD_CTX_free(ctx);
    ERR_clear_error();
    if (!ok)
        return -1;
    hex(sig, n, out);
    return 0;
}

bool rc_verify_hex(EVP_PKEY *k, const void *data, size_t len, const char *sig_hex)
{
    unsigned char sig[64];
    if (!k || unhex(sig_hex, sig, sizeof sig) < 0)
        return false;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    bool ok = ctx && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k) == 1 &&
              EVP_DigestVerify(ctx, sig, sizeof sig, data, len) == 1;
    EVP_MD_CTX_free(ctx);
    ERR_clear_error();
    return ok;
}

void rc_free(EVP_PKEY *k)
{
    EVP_PKEY_free(k);
}
