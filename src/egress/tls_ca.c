/* tls_ca.c — the per-run CA, its leaves and the TLS contexts of inspected
 * connections (tls_ca.h). All X.509 and TLS is OpenSSL's (libssl and
 * libcrypto, linked statically); nothing here parses or signs by hand. */
#include "tls_ca.h"

#include <pthread.h>
#include <string.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#define LEAF_CACHE_MAX 1024

struct leaf {
    char *name;
    X509 *cert;
};

struct tls_ca {
    EVP_PKEY *key;      /* the CA's: signs leaves */
    EVP_PKEY *leaf_key; /* one key for every leaf of the run */
    X509 *cert;
    char *pem;
    char **names;       /* the name constraints; none: any name */
    size_t nnames;
    SSL_CTX *server, *client;
    pthread_mutex_t mu; /* the leaf cache */
    struct leaf *leaves;
    size_t nleaves;
};

/* The last OpenSSL error as text (the queue is per thread). */
static const char *ossl_err(char *buf, size_t cap)
{
    unsigned long e = ERR_get_error();
    if (!e)
        snprintf(buf, cap, "unknown error");
    else
        ERR_error_string_n(e, buf, cap);
    ERR_clear_error();
    return buf;
}

static bool add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ext)
        return false;
    bool ok = X509_add_ext(cert, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok;
}

static bool random_serial(X509 *cert)
{
    unsigned char r[16];
    if (RAND_bytes(r, sizeof r) != 1)
        return false;
    r[0] &= 0x7f; /* positive */
    BIGNUM *bn = BN_bin2bn(r, sizeof r, NULL);
    bool ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert));
    BN_free(bn);
    return ok;
}

/* A certificate's common fields: v3, serial, validity (from an hour ago,
 * for clocks that differ a little, to TLS_CA_DAYS on), subject CN. */
static X509 *cert_base(const char *cn, EVP_PKEY *pub)
{
    X509 *c = X509_new();
    X509_NAME *n = X509_NAME_new();
    bool ok = c && n && X509_set_version(c, 2) && random_serial(c) &&
              X509_gmtime_adj(X509_getm_notBefore(c), -3600) &&
              X509_gmtime_adj(X509_getm_notAfter(c), 86400L * TLS_CA_DAYS) &&
              X509_NAME_add_entry_by_txt(n, "O", MBSTRING_ASC, (const unsigned char *)"fluebox",
                                         -1, -1, 0) &&
              X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1,
                                         -1, 0) &&
              X509_set_subject_name(c, n) && X509_set_pubkey(c, pub);
    X509_NAME_free(n);
    if (!ok) {
        X509_free(c);
        return NULL;
    }
    return c;
}

static X509 *make_ca_cert(struct tls_ca *ca)
{
    unsigned char r[6];
    char cn[64];
    if (RAND_bytes(r, sizeof r) != 1)
        return NULL;
    snprintf(cn, sizeof cn, "fluebox per-run CA %02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3],
             r[4], r[5]);
    X509 *c = cert_base(cn, ca->key);
    if (!c)
        return NULL;
    bool ok = X509_set_issuer_name(c, X509_get_subject_name(c)) &&
              add_ext(c, c, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") &&
              add_ext(c, c, NID_key_usage, "critical,keyCertSign,cRLSign") &&
              add_ext(c, c, NID_subject_key_identifier, "hash");
    if (ok && ca->nnames) {
        size_t cap = 16;
        for (size_t i = 0; i < ca->nnames; i++)
            cap += strlen(ca->names[i]) + 16;
        char *nc = fb_xmalloc(cap);
        size_t len = (size_t)snprintf(nc, cap, "critical");
        for (size_t i = 0; i < ca->nnames; i++)
            len += (size_t)snprintf(nc + len, cap - len, ",permitted;DNS:%s", ca->names[i]);
        ok = add_ext(c, c, NID_name_constraints, nc);
        free(nc);
    }
    if (!ok || !X509_sign(c, ca->key, EVP_sha256())) {
        X509_free(c);
        return NULL;
    }
    return c;
}

static X509 *make_leaf(struct tls_ca *ca, const char *name)
{
    X509 *c = cert_base(name, ca->leaf_key);
    if (!c)
        return NULL;
    char san[300];
    snprintf(san, sizeof san, "DNS:%s", name);
    bool ok = X509_set_issuer_name(c, X509_get_subject_name(ca->cert)) &&
              add_ext(c, ca->cert, NID_basic_constraints, "critical,CA:FALSE") &&
              add_ext(c, ca->cert, NID_key_usage, "critical,digitalSignature") &&
              add_ext(c, ca->cert, NID_ext_key_usage, "serverAuth") &&
              add_ext(c, ca->cert, NID_authority_key_identifier, "keyid:always") &&
              add_ext(c, ca->cert, NID_subject_alt_name, san) &&
              X509_sign(c, ca->key, EVP_sha256());
    if (!ok) {
        X509_free(c);
        return NULL;
    }
    return c;
}

/* ALPN towards the sandbox's client: http/1.1 when offered, else none (the
 * client then speaks HTTP/1.1 by default); never h2 (docs/secrets.md). */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
    (void)ssl;
    (void)arg;
    for (unsigned i = 0; i < inlen;) {
        unsigned l = in[i];
        if (i + 1 + l > inlen)
            break;
        if (l == 8 && !memcmp(in + i + 1, "http/1.1", 8)) {
            *out = in + i + 1;
            *outlen = (unsigned char)l;
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + l;
    }
    return SSL_TLSEXT_ERR_NOACK;
}

struct tls_ca *tls_ca_new(const char *const *names, size_t n, const char *upstream_ca,
                          struct fb_err *err)
{
    char eb[256];
    struct tls_ca *ca = fb_xcalloc(1, sizeof *ca);
    pthread_mutex_init(&ca->mu, NULL);
    ca->names = fb_xcalloc(n + 1, sizeof *ca->names);
    for (size_t i = 0; i < n; i++) {
        bool dup = false;
        for (size_t k = 0; k < ca->nnames; k++)
            dup |= !strcmp(ca->names[k], names[i]);
        if (!dup)
            ca->names[ca->nnames++] = fb_xstrdup(names[i]);
    }
    ca->key = EVP_EC_gen("P-256");
    ca->leaf_key = EVP_EC_gen("P-256");
    if (!ca->key || !ca->leaf_key || !(ca->cert = make_ca_cert(ca))) {
        fb_errf(err, FB_EXIT_SETUP, "the per-run CA: %s", ossl_err(eb, sizeof eb));
        goto fail;
    }
    BIO *mem = BIO_new(BIO_s_mem());
    char *data = NULL;
    long len;
    if (!mem || !PEM_write_bio_X509(mem, ca->cert) || (len = BIO_get_mem_data(mem, &data)) <= 0) {
        BIO_free(mem);
        fb_errf(err, FB_EXIT_SETUP, "the per-run CA: %s", ossl_err(eb, sizeof eb));
        goto fail;
    }
    ca->pem = fb_xstrndup(data, (size_t)len);
    BIO_free(mem);

    ca->server = SSL_CTX_new(TLS_server_method());
    ca->client = SSL_CTX_new(TLS_client_method());
    if (!ca->server || !ca->client ||
        !SSL_CTX_set_min_proto_version(ca->server, TLS1_2_VERSION) ||
        !SSL_CTX_set_min_proto_version(ca->client, TLS1_2_VERSION)) {
        fb_errf(err, FB_EXIT_SETUP, "TLS: %s", ossl_err(eb, sizeof eb));
        goto fail;
    }
    SSL_CTX_set_alpn_select_cb(ca->server, alpn_select, NULL);
    SSL_CTX_set_options(ca->server, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET);
    SSL_CTX_set_mode(ca->server, SSL_MODE_AUTO_RETRY);
    SSL_CTX_set_mode(ca->client, SSL_MODE_AUTO_RETRY);
    SSL_CTX_set_options(ca->client, SSL_OP_NO_RENEGOTIATION);
    /* Upstream: the host's trust store (the system's default paths, or
     * SSL_CERT_FILE / SSL_CERT_DIR in fluebox's environment), plus
     * --upstream-ca. Verification is never turned off. */
    SSL_CTX_set_verify(ca->client, SSL_VERIFY_PEER, NULL);
    if (!SSL_CTX_set_default_verify_paths(ca->client)) {
        fb_errf(err, FB_EXIT_SETUP, "TLS: the host's trust store: %s", ossl_err(eb, sizeof eb));
        goto fail;
    }
    if (upstream_ca && !SSL_CTX_load_verify_locations(ca->client, upstream_ca, NULL)) {
        fb_errf(err, FB_EXIT_SETUP, "--upstream-ca %s: %s", upstream_ca, ossl_err(eb, sizeof eb));
        goto fail;
    }
    static const unsigned char alpn[] = "\x08http/1.1";
    if (SSL_CTX_set_alpn_protos(ca->client, alpn, sizeof alpn - 1) != 0) {
        fb_errf(err, FB_EXIT_SETUP, "TLS: ALPN");
        goto fail;
    }
    return ca;
fail:
    tls_ca_free(ca);
    return NULL;
}

void tls_ca_free(struct tls_ca *ca)
{
    if (!ca)
        return;
    for (size_t i = 0; i < ca->nleaves; i++) {
        free(ca->leaves[i].name);
        X509_free(ca->leaves[i].cert);
    }
    free(ca->leaves);
    for (size_t i = 0; i < ca->nnames; i++)
        free(ca->names[i]);
    free(ca->names);
    SSL_CTX_free(ca->server);
    SSL_CTX_free(ca->client);
    X509_free(ca->cert);
    EVP_PKEY_free(ca->key); /* OpenSSL clears private key material as it frees it */
    EVP_PKEY_free(ca->leaf_key);
    free(ca->pem);
    pthread_mutex_destroy(&ca->mu);
    free(ca);
}

const char *tls_ca_pem(const struct tls_ca *ca) { return ca->pem; }

unsigned long tls_ca_hash(const struct tls_ca *ca)
{
    return X509_subject_name_hash(ca->cert);
}

bool tls_ca_covers(const struct tls_ca *ca, const char *name)
{
    if (!ca->nnames)
        return true;
    size_t nl = strlen(name);
    for (size_t i = 0; i < ca->nnames; i++) {
        size_t cl = strlen(ca->names[i]);
        if (!strcmp(name, ca->names[i]) ||
            (nl > cl + 1 && name[nl - cl - 1] == '.' && !strcmp(name + nl - cl, ca->names[i])))
            return true;
    }
    return false;
}

/* The leaf for name, minted on first use (the cache holds a reference). */
static X509 *leaf_for(struct tls_ca *ca, const char *name)
{
    pthread_mutex_lock(&ca->mu);
    X509 *c = NULL;
    for (size_t i = 0; i < ca->nleaves && !c; i++)
        if (!strcmp(ca->leaves[i].name, name))
            c = ca->leaves[i].cert;
    if (!c) {
        c = make_leaf(ca, name);
        if (c && ca->nleaves < LEAF_CACHE_MAX) {
            ca->leaves = fb_xrealloc(ca->leaves, (ca->nleaves + 1) * sizeof *ca->leaves);
            ca->leaves[ca->nleaves++] = (struct leaf){fb_xstrdup(name), c};
            X509_up_ref(c);
        }
    } else {
        X509_up_ref(c);
    }
    pthread_mutex_unlock(&ca->mu);
    return c;
}

SSL *tls_ca_server(struct tls_ca *ca, const char *name, struct fb_err *err)
{
    char eb[256];
    if (!tls_ca_covers(ca, name)) {
        fb_errf(err, FB_EXIT_SETUP, "%s is outside the per-run CA's names", name);
        return NULL;
    }
    X509 *leaf = leaf_for(ca, name);
    SSL *s = leaf ? SSL_new(ca->server) : NULL;
    if (!s || SSL_use_certificate(s, leaf) != 1 || SSL_use_PrivateKey(s, ca->leaf_key) != 1) {
        fb_errf(err, FB_EXIT_SETUP, "TLS for %s: %s", name, ossl_err(eb, sizeof eb));
        SSL_free(s);
        s = NULL;
    }
    X509_free(leaf);
    return s;
}

SSL *tls_ca_client(struct tls_ca *ca, const char *name, struct fb_err *err)
{
    char eb[256];
    SSL *s = SSL_new(ca->client);
    if (!s || SSL_set_tlsext_host_name(s, name) != 1 || SSL_set1_host(s, name) != 1) {
        fb_errf(err, FB_EXIT_SETUP, "TLS to %s: %s", name, ossl_err(eb, sizeof eb));
        SSL_free(s);
        return NULL;
    }
    return s;
}
