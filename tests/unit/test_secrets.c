/* Unit tests of secrets and HTTP rules (docs/secrets.md): the policy's
 * parsers and checks, secrets_load, the HTTP/1.x heads and stand-in
 * swapping (http1.c), and the run-time rules (egress_grant / egress_revoke,
 * time limits, rules_request). */
#include "egress_int.h"
#include "http1.h"
#include "policy.h"
#include "unit.h"

#include <string.h>

#define SI "fluebox-standin-0123456789abcdef0123456789abcdef"

static void policy_parsing(void)
{
    struct fb_policy p;
    struct fb_err err;
    policy_init(&p);
    CHECK(policy_add_secret(&p, "GH_TOKEN:api.github.com,*.example.com:8443", &err) == 0 &&
              p.nsecrets == 1 && p.secrets[0].nhosts == 2 && !p.secrets[0].file &&
              p.secrets[0].hosts[1].wildcard && p.secrets[0].hosts[1].port == 8443,
          "secret NAME:HOSTS");
    CHECK(policy_add_secret(&p, "NPM=@/run/npm-token:registry.npmjs.org", &err) == 0 &&
              !strcmp(p.secrets[1].file, "/run/npm-token"),
          "secret NAME=@FILE:HOSTS");
    CHECK(policy_add_secret(&p, "GH_TOKEN:other.test", &err) < 0 && strstr(err.msg, "already"),
          "secret: a name twice is refused");
    CHECK(policy_add_secret(&p, "X=value:api.test", &err) < 0 &&
              strstr(err.msg, "never goes on the command line") && !strstr(err.msg, "value:"),
          "secret: a value on the command line is refused (and not repeated)");
    CHECK(policy_add_secret(&p, "X", &err) < 0, "secret: no hosts refused");
    CHECK(policy_add_secret(&p, "1X:a.test", &err) < 0, "secret: bad name refused");
    CHECK(policy_add_secret(&p, "X:https://a.test/", &err) < 0 && strstr(err.msg, "not a URL"),
          "secret: a URL as host refused");
    struct fb_http_rule r;
    CHECK(policy_parse_http_rule("GET,HEAD api.test/v1/", &r, &err) == 0 &&
              r.methods == (FB_HTTP_GET | FB_HTTP_HEAD) && !strcmp(r.prefix, "/v1/") &&
              !strcmp(r.host.name, "api.test"),
          "http rule METHODS HOST/PREFIX");
    free(r.host.name);
    free(r.prefix);
    CHECK(policy_parse_http_rule("* api.test:8443", &r, &err) == 0 && r.methods == FB_HTTP_ANY &&
              r.host.port == 8443 && !strcmp(r.prefix, "/"),
          "http rule * HOST:PORT");
    free(r.host.name);
    free(r.prefix);
    CHECK(policy_parse_http_rule("FETCH api.test", &r, &err) < 0 && strstr(err.msg, "FETCH"),
          "http rule: unknown method refused");
    CHECK(policy_parse_http_rule("GET", &r, &err) < 0, "http rule: no host refused");
    CHECK(policy_parse_http_rule("GET api.test/a/../b", &r, &err) < 0,
          "http rule: dot segments refused");
    CHECK(policy_parse_http_rule("GET api.test/a?x", &r, &err) < 0, "http rule: query refused");
    CHECK(policy_add_http_rule(&p, "GET api.github.com/repos/", &err) == 0, "http rule added");
    /* --allow-net must cover the hosts */
    policy_add_allow(&p, "api.github.com", &err);
    policy_add_allow(&p, "*.com", &err);
    policy_add_allow(&p, "registry.npmjs.org", &err);
    p.net = FB_NET_ALLOW;
    extern int policy_check_secrets(struct fb_policy *, struct fb_err *);
    CHECK(policy_check_secrets(&p, &err) < 0 && strstr(err.msg, "example.com:8443"),
          "check: a secret's host on a port not allowed is refused");
    policy_add_allow(&p, "*.example.com:8443", &err);
    CHECK(policy_check_secrets(&p, &err) == 0, "check: covered hosts pass");
    bool env = false;
    for (size_t i = 0; i < p.nenv_set; i++)
        env |= !strcmp(p.env_set[i], "NODE_EXTRA_CA_CERTS=" FB_CA_FILE);
    CHECK(env, "check: the CA variables are set inside");
    policy_add_env_pass(&p, "GH_TOKEN");
    CHECK(policy_check_secrets(&p, &err) < 0 && strstr(err.msg, "--env-pass"),
          "check: --env-pass of a secret refused");
    policy_free(&p);

    policy_init(&p);
    policy_add_secret(&p, "T:a.test", &err);
    policy_add_secret(&p, "U:a.test", &err);
    const char *envp[] = {"T=s3cr3t-value", "U=", NULL};
    CHECK(secrets_load(&p, envp, &err) < 0 && strstr(err.msg, "U is empty") &&
              !strstr(err.msg, "s3cr3t"),
          "load: an empty variable refused, naming it");
    const char *envp2[] = {"T=s3cr3t-value", NULL};
    CHECK(secrets_load(&p, envp2, &err) < 0 && strstr(err.msg, "not set"),
          "load: an unset variable refused");
    const char *envp3[] = {"T=s3cr3t-value", "U=xyzzy\nq", NULL};
    CHECK(secrets_load(&p, envp3, &err) < 0 && strstr(err.msg, "control character") &&
              !strstr(err.msg, "xyzzy"),
          "load: a control character refused, the value not shown");
    const char *envp4[] = {"T=s3cr3t-value", "U=other", NULL};
    size_t vl;
    CHECK(secrets_load(&p, envp4, &err) == 0 && p.secrets[0].standin &&
              !strncmp(p.secrets[0].standin, "fluebox-standin-", 16) &&
              strlen(p.secrets[0].standin) == 48 &&
              strcmp(p.secrets[0].standin, p.secrets[1].standin) &&
              secret_value(&p.secrets[0], &vl) && vl == 12,
          "load: values read, stand-ins made (distinct)");
    char *e = fb_xstrdup("T=s3cr3t-value");
    char *ev[] = {e, NULL};
    secrets_scrub_env(&p, ev);
    CHECK(e[2] == 0 && e[5] == 0, "scrub: the value is wiped from the environment");
    free(e);
    policy_free(&p);
}

static void heads(void)
{
    struct http_head h;
    const char *req = "GET /a?x=1 HTTP/1.1\r\nHost: API.test:443\r\nAuthorization: Bearer t\r\n\r\nrest";
    CHECK(http1_parse_request((const uint8_t *)req, strlen(req), &h) == 1 &&
              !strcmp(h.method, "GET") && h.tlen == 6 && !strcmp(h.host, "api.test") &&
              h.nh == 2 && h.head_len == strlen(req) - 4 && h.content_length == -1,
          "request head parsed");
    CHECK(http1_parse_request((const uint8_t *)req, 20, &h) == 0, "a partial head: more");
    const char *bad[] = {
        "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",
        "GET / HTTP/1.1\rHost: a\r\n\r\n",
        "GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n",
        "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        "GET / HTTP/1.1\r\n\r\n",
        "CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n",
    };
    bool all = true;
    for (size_t i = 0; i < FB_ARRAY_LEN(bad); i++)
        all &= http1_parse_request((const uint8_t *)bad[i], strlen(bad[i]), &h) < 0;
    CHECK(all, "ambiguous or malformed heads refused (%zu kinds)", FB_ARRAY_LEN(bad));
    const char *resp = "HTTP/1.1 101 Switching\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
    CHECK(http1_parse_response((const uint8_t *)resp, strlen(resp), &h) == 1 && h.status == 101 &&
              h.upgrade,
          "response head parsed");
    uint64_t n;
    CHECK(http1_chunk_size((const uint8_t *)"1a;ext=1", 8, &n) == 0 && n == 26 &&
              http1_chunk_size((const uint8_t *)"zz", 2, &n) < 0,
          "chunk sizes");
    char b[64];
    uint8_t d[64];
    http1_b64_encode((const uint8_t *)"user:pw", 7, b);
    ssize_t dl = http1_b64_decode(b, strlen(b), d);
    CHECK(!strcmp(b, "dXNlcjpwdw==") && dl == 7 && !memcmp(d, "user:pw", 7) &&
              http1_b64_decode("dXN!", 4, d) < 0,
          "base64 both ways");
    http1_log_path("/p/q?token=abc&x=1&flag", 23, b, sizeof b);
    CHECK(!strcmp(b, "/p/q?token&x&flag"), "log path without query values (%s)", b);
    CHECK(http1_path_unclear("/a/../b", 7) && http1_path_unclear("/a/%2e%2e/b", 11) &&
              http1_path_unclear("/a//b", 5) && http1_path_unclear("/a/%2F", 6) &&
              !http1_path_unclear("/a/b.c?x=/../", 13),
          "unclear paths");
    CHECK(http1_prefix_match("/repos/x", 8, "/repos") && http1_prefix_match("/repos", 6, "/repos") &&
              !http1_prefix_match("/reposx", 7, "/repos") &&
              http1_prefix_match("/v1/a?q", 7, "/v1/") && !http1_prefix_match("/v2", 3, "/v1/"),
          "prefix matching by segment");
}

static void rewriting(void)
{
    struct http_head h;
    struct http_secret s[2] = {{"T", SI, (const uint8_t *)"re al&", 6},
                               {"U", "fluebox-standin-ffffffffffffffffffffffffffffffff", NULL, 0}};
    uint8_t *out;
    size_t ol;
    uint64_t used;
    char basic[128], cred[128];
    snprintf(cred, sizeof cred, "git:%s", SI);
    char b64[128];
    http1_b64_encode((const uint8_t *)cred, strlen(cred), b64);
    char req[1024];
    snprintf(req, sizeof req,
             "POST /x?key=" SI " HTTP/1.1\r\nHost: a.test\r\nAuthorization: Basic %s\r\n"
             "X-Key: pre" SI "post\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n",
             b64);
    CHECK(http1_parse_request((const uint8_t *)req, strlen(req), &h) == 1, "head with stand-ins");
    CHECK(http1_rewrite(&h, s, 2, true, &out, &ol, &used) == 0 && used == 1,
          "bound stand-ins swapped");
    out = fb_xrealloc(out, ol + 1);
    out[ol] = 0;
    http1_b64_encode((const uint8_t *)"git:re al&", 10, basic);
    char want[512];
    snprintf(want, sizeof want,
             "POST /x?key=re%%20al%%26 HTTP/1.1\r\nHost: a.test\r\nAuthorization: Basic %s\r\n"
             "X-Key: prere al&post\r\nContent-Length: 3\r\n\r\n", basic);
    CHECK(!strcmp((char *)out, want), "the rewritten head: query encoded, Basic re-encoded, "
          "header swapped, Expect dropped");
    free(out);
    /* the other secret's stand-in, anywhere: refused */
    const char *where[] = {
        "GET /?k=fluebox-standin-ffffffffffffffffffffffffffffffff HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nX: fluebox-standin-ffffffffffffffffffffffffffffffff\r\n\r\n",
    };
    for (size_t i = 0; i < 2; i++) {
        http1_parse_request((const uint8_t *)where[i], strlen(where[i]), &h);
        CHECK(http1_rewrite(&h, s, 2, false, &out, &ol, &used) == 2 && !out,
              "unbound stand-in refused (%s)", i ? "header" : "query");
    }
    snprintf(cred, sizeof cred, "u:%s", s[1].standin);
    http1_b64_encode((const uint8_t *)cred, strlen(cred), b64);
    snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: basic %s\r\n\r\n", b64);
    http1_parse_request((const uint8_t *)req, strlen(req), &h);
    CHECK(http1_rewrite(&h, s, 2, false, &out, &ol, &used) == 2, "unbound stand-in inside Basic refused");
}

static void grants(void)
{
    struct fb_policy p;
    struct fb_err err = {0};
    policy_init(&p);
    p.net = FB_NET_ALLOW;
    p.tls_ca = true;
    policy_add_allow(&p, "api.test", &err);
    policy_add_allow(&p, "other.test", &err);
    struct fb_egress *e;
    struct tls_ca *ca;
    CHECK(egress_start(&p, NULL, 0, &e, &err) == 0 && egress_ca_new(&p, &ca, &err) == 0 && ca,
          "egress and CA without names");
    egress_adopt_ca(e, ca);
    CHECK(!egress_inspects(e, "api.test", 443), "nothing inspected at first");
    struct fb_grant g = {FB_GRANT_SECRET, "TOK:api.test", "real-value", 10, 0};
    CHECK(egress_grant(e, &g, &err) == 0 && egress_inspects(e, "api.test", 443) &&
              !egress_inspects(e, "other.test", 443),
          "grant a secret: its host inspected");
    char si[64];
    CHECK(egress_standin(e, "TOK", si, sizeof si) && !strncmp(si, "fluebox-standin-", 16),
          "the new secret's stand-in");
    struct fb_grant bad = {FB_GRANT_SECRET, "TOK:nothere.test", "v", 1, 0};
    CHECK(egress_grant(e, &bad, &err) < 0 && strstr(err.msg, "not an allowed name"),
          "grant for a name not allowed refused");
    struct fb_grant al = {FB_GRANT_ALLOW, "new.test", NULL, 0, 0};
    CHECK(egress_grant(e, &al, &err) < 0 && strstr(err.msg, "listener"),
          "grant allow without a listener refused");
    /* a request with the stand-in, to each host */
    char req[256];
    snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: other.test\r\nX: %s\r\n\r\n", si);
    struct http_head h;
    http1_parse_request((const uint8_t *)req, strlen(req), &h);
    struct rules_verdict v;
    CHECK(rules_request(e, "other.test", 443, &h, &v) < 0 && strstr(v.why, "secret TOK") &&
              !strstr(v.why, "real-value"),
          "stand-in towards another host refused, by name");
    rules_verdict_free(&v);
    snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: api.test\r\nX: %s\r\n\r\n", si);
    http1_parse_request((const uint8_t *)req, strlen(req), &h);
    CHECK(rules_request(e, "api.test", 443, &h, &v) == 0 && v.head &&
              memmem(v.head, v.head_len, "X: real-value", 13) && !strcmp(v.secrets, "TOK") &&
              v.nvalues == 1,
          "stand-in towards its host swapped");
    rules_verdict_free(&v);
    struct fb_grant hr = {FB_GRANT_HTTP, "GET api.test/ok", NULL, 0, 0};
    CHECK(egress_grant(e, &hr, &err) == 0, "grant an HTTP rule");
    CHECK(rules_request(e, "api.test", 443, &h, &v) < 0 && strstr(v.why, "allow-http"),
          "a request the rule does not allow refused");
    rules_verdict_free(&v);
    CHECK(egress_revoke(e, &hr, &err) == 0 && rules_request(e, "api.test", 443, &h, &v) == 0,
          "revoke the rule: allowed again");
    rules_verdict_free(&v);
    struct fb_grant rs = {FB_GRANT_SECRET, "TOK", NULL, 0, 0};
    CHECK(egress_revoke(e, &rs, &err) == 0 && rules_request(e, "api.test", 443, &h, &v) < 0,
          "revoke the secret: its stand-in refused everywhere");
    rules_verdict_free(&v);
    struct fb_grant t = {FB_GRANT_SECRET, "TOK:api.test", "v2", 2, 50};
    CHECK(egress_grant(e, &t, &err) == 0 && egress_inspects(e, "api.test", 443) &&
              egress_standin(e, "TOK", req, sizeof req) && !strcmp(req, si),
          "grant again with a ttl: the same stand-in");
    int64_t until = egress_now_ms() + 5000;
    while (egress_inspects(e, "api.test", 443) && egress_now_ms() < until)
        ;
    CHECK(!egress_inspects(e, "api.test", 443), "the ttl lapses");
    struct fb_grant ra = {FB_GRANT_ALLOW, "other.test", NULL, 0, 0};
    CHECK(egress_allowed(e, "other.test", 443) && egress_revoke(e, &ra, &err) == 0 &&
              !egress_allowed(e, "other.test", 443),
          "revoke an allowed name");
    egress_free(e);
    policy_free(&p);
}

void unit_secrets(void)
{
    policy_parsing();
    heads();
    rewriting();
    grants();
}
