/* tls_ca.h — the per-run certificate authority of inspected connections
 * (docs/secrets.md): an EC P-256 key made in the supervisor's memory (never
 * written anywhere), a self-signed CA certificate valid for a short time
 * and, where the names are known at the start, constrained to them; leaf
 * certificates minted per server name on first use and cached. The TLS
 * contexts of both ends of an inspected connection (server: the sandbox's
 * client; client: upstream, verified against the host's trust store and
 * --upstream-ca) live here too. Thread-safe after tls_ca_new(). */
#ifndef FB_TLS_CA_H
#define FB_TLS_CA_H

#include "fb.h"

#include <openssl/ssl.h>

#define TLS_CA_DAYS 7 /* the CA's and its leaves' validity */

struct tls_ca;

/* names: the DNS names (or parent names of wildcards) the CA may sign for;
 * n == 0: no name constraints (a session that may be granted any host).
 * upstream_ca: also trusted upstream (NULL: the host's store only). */
struct tls_ca *tls_ca_new(const char *const *names, size_t n, const char *upstream_ca,
                          struct fb_err *err);
void tls_ca_free(struct tls_ca *ca);

/* The CA certificate as PEM (the ca's), and its subject hash as OpenSSL's
 * hashed certificate directories name it ("%08lx"). */
const char *tls_ca_pem(const struct tls_ca *ca);
unsigned long tls_ca_hash(const struct tls_ca *ca);
/* May the CA sign for name (its constraints)? */
bool tls_ca_covers(const struct tls_ca *ca, const char *name);

/* A server-side SSL for the sandbox's client connecting to name (leaf minted
 * or taken from the cache; ALPN: http/1.1 only). NULL with err. */
SSL *tls_ca_server(struct tls_ca *ca, const char *name, struct fb_err *err);
/* A client-side SSL towards name: SNI, ALPN http/1.1, the certificate must
 * verify and name the host. */
SSL *tls_ca_client(struct tls_ca *ca, const char *name, struct fb_err *err);

#endif
