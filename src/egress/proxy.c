/* proxy.c — the in-sandbox HTTP CONNECT proxy (--proxy-env): reads the
 * CONNECT request, answers what is not allowed with a status line (403,
 * 405, 400, 431) and hands an allowed one to upstream.c. The 200 is sent
 * once the upstream connection is up (upstream.c); the bytes after it are
 * checked like any first bytes. */
#include "egress_int.h"

#include "sniff.h"

#include <string.h>
#include <sys/epoll.h>

/* Send a short reply (a proxy status line) and end the connection. */
void reply_and_end(struct fb_egress *e, struct conn *c, const char *status,
                          const char *verdict, const char *reason)
{
    char msg[768];
    int n = snprintf(msg, sizeof msg,
                     "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                     "Content-Length: %zu\r\n\r\nfluebox: %s\n",
                     status, strlen(reason) + 10, reason);
    if (n > 0 && c->in.fd >= 0)
        send(c->in.fd, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1,
             MSG_DONTWAIT | MSG_NOSIGNAL);
    conn_end(e, c, verdict, false, "%s", reason);
}

/* The CONNECT request of a proxy client. */
void proxy_request(struct fb_egress *e, struct conn *c)
{
    struct sniff s;
    uint16_t port;
    sniff_connect(c->up.d + c->up.head, buf_len(&c->up), &s, &port);
    if (s.kind == SNIFF_MORE) {
        if (buf_room(&c->up) == 0)
            reply_and_end(e, c, "431 Request Header Fields Too Large", "deny", "request too large");
        else if (c->in_eof)
            conn_end(e, c, "deny", false, "client closed before a complete CONNECT request");
        return;
    }
    if (s.kind != SNIFF_HTTP) {
        bool method = s.method[0] && strcmp(s.method, "CONNECT");
        char why[200];
        snprintf(why, sizeof why, "%s%s%s", s.why, method ? "; got " : "", method ? s.method : "");
        reply_and_end(e, c, method ? "405 Method Not Allowed" : "400 Bad Request", "deny", why);
        return;
    }
    c->name = fb_xstrdup(s.name);
    c->port = port;
    snprintf(c->via, sizeof c->via, "proxy");
    c->up.head += s.head_len;
    buf_compact(&c->up);
    if (looks_like_ip(c->name) || !egress_allowed(e, c->name, port)) {
        char why[400];
        snprintf(why, sizeof why, "%s:%u is not in the allowlist", c->name, port);
        if (!looks_like_ip(c->name))
            egress_note_refused(e, c->name, port);
        reply_and_end(e, c, "403 Forbidden", "deny", why);
        return;
    }
    c->inspect = egress_inspects(e, c->name, port);
    c->strict = port == 80 || port == 443 || c->inspect;
    /* Bytes the client sent right behind the request are checked like any
     * first bytes. */
    if (buf_len(&c->up) && !check_first_bytes(e, c))
        return;
    start_resolve(e, c);
}
