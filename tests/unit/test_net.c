/* Unit tests of the network allowlist's pure code: --egress-resolve and
 * --allow-net parsing, policy combinations, the DNS and first-bytes parsers
 * (more of those, with fuzzing, in tests/net/parsers_test.c). */
#include "dns_wire.h"
#include "egress.h"
#include "nametab.h"
#include "fb.h"
#include "netns.h"
#include "policy.h"
#include "sniff.h"
#include "toolchain.h"
#include "unit.h"

#include <string.h>

static void resolve_syntax(void)
{
    struct fb_policy p;
    struct fb_err err;
    policy_init(&p);
    CHECK(policy_add_resolve(&p, "api.test=127.0.0.1", &err) == 0 && p.resolve[0].port == 0 &&
              p.resolve[0].to_port == 0 && !strcmp(p.resolve[0].addr, "127.0.0.1"),
          "resolve NAME=IP");
    CHECK(policy_add_resolve(&p, "API.Test:443=127.0.0.1:8443", &err) == 0 &&
              !strcmp(p.resolve[1].name, "api.test") && p.resolve[1].port == 443 &&
              p.resolve[1].to_port == 8443,
          "resolve NAME:PORT=IP:PORT");
    CHECK(policy_add_resolve(&p, "v6.test=::1", &err) == 0 && !strcmp(p.resolve[2].addr, "::1") &&
              p.resolve[2].to_port == 0,
          "resolve bare IPv6");
    CHECK(policy_add_resolve(&p, "v6.test:443=[::1]:8443", &err) == 0 &&
              !strcmp(p.resolve[3].addr, "::1") && p.resolve[3].to_port == 8443,
          "resolve [IPv6]:PORT");
    CHECK(policy_add_resolve(&p, "a.test=[::1", &err) < 0, "resolve refuses an open bracket");
    CHECK(policy_add_resolve(&p, "a.test=1.2.3.4:0", &err) < 0, "resolve refuses port 0");
    CHECK(policy_add_resolve(&p, "a.test:70000=1.2.3.4", &err) < 0, "resolve refuses port 70000");
    CHECK(policy_add_resolve(&p, "a.test=example.com", &err) < 0, "resolve refuses a name as address");
    CHECK(policy_add_resolve(&p, "a..test=1.2.3.4", &err) < 0, "resolve refuses a bad name");
    CHECK(policy_add_allow(&p, "10.0.0.1", &err) < 0 && strstr(err.msg, "IP address"),
          "allow refuses an IP address");
    CHECK(policy_add_allow(&p, "*.0.1", &err) < 0, "allow refuses a numeric wildcard");
    policy_free(&p);
}

static void combinations(void)
{
    struct fb_policy p;
    struct fb_err err;
    const struct fb_callenv ce = {.path = "/usr/bin:/bin"};
    policy_init(&p);
    p.argv = fb_xcalloc(2, sizeof(char *));
    p.argv[0] = fb_xstrdup("/bin/true");
    policy_add_allow(&p, "a.test", &err);
    CHECK(policy_finish(&p, &ce, &err) == 0 && p.net == FB_NET_ALLOW,
          "--allow-net implies allow mode");
    p.net = FB_NET_NONE;
    p.net_explicit = true;
    CHECK(policy_finish(&p, &ce, &err) < 0 && strstr(err.msg, "--net none"),
          "--allow-net with an explicit --net none is an error");
    p.net = FB_NET_ALLOW;
    p.proxy_env = true;
    policy_add_allow(&p, "b.test:3128", &err);
    CHECK(policy_finish(&p, &ce, &err) < 0 && strstr(err.msg, "proxy"),
          "an allowed port equal to the proxy port is an error");
    uint16_t ports[FB_NET_MAX_PORTS];
    CHECK(policy_allowed_ports(&p, ports, FB_NET_MAX_PORTS) == 3, "ports: 80, 443 and 3128");
    policy_free(&p);
}

static void parsers(void)
{
    struct sniff s;
    const char *req = "GET / HTTP/1.1\r\nHost: Api.Test:8080\r\n\r\n";
    sniff_classify((const uint8_t *)req, strlen(req), &s);
    CHECK(s.kind == SNIFF_HTTP && !strcmp(s.name, "api.test"), "sniff: HTTP Host without port");
    sniff_classify((const uint8_t *)"\x16\x03\x01", 3, &s);
    CHECK(s.kind == SNIFF_MORE, "sniff: a TLS record header alone needs more");
    sniff_classify((const uint8_t *)"SSH-2.0-x\r\n", 11, &s);
    CHECK(s.kind == SNIFF_OTHER, "sniff: SSH is neither TLS nor HTTP");
    uint8_t q[] = {0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 'a', 4, 't', 'e', 's', 't', 0, 0, 28, 0, 1};
    struct dns_query d;
    CHECK(dns_parse_query(q, sizeof q, &d) == DNS_OK && !strcmp(d.name, "a.test") && d.qtype == 28,
          "dns: AAAA query parsed");
    uint8_t out[128];
    size_t n = dns_build_reply(q, &d, DNS_RCODE_NXDOMAIN, NULL, 0, out, sizeof out);
    CHECK(n == sizeof q && (out[3] & 0xf) == DNS_RCODE_NXDOMAIN && out[7] == 0, "dns: NXDOMAIN reply");
}

static void names(void)
{
    struct nametab t = {0};
    char buf[32];
    bool stable = true;
    for (int i = 0; i < 5000; i++) {
        snprintf(buf, sizeof buf, "n%d.test", i);
        stable &= nametab_add(&t, buf) == (size_t)i;
    }
    CHECK(stable && nametab_add(&t, "n17.test") == 17 && nametab_find(&t, "n4999.test") == 4999 &&
              nametab_find(&t, "n5000.test") == -1 && t.n == 5000,
          "nametab: indices stable in the order added, found again after growing");
    nametab_free(&t);
    CHECK(nametab_find(&t, "n1.test") == -1 && t.n == 0, "nametab: empty after free");
}

static void denial_note(void)
{
    struct fb_net_summary s;
    memset(&s, 0, sizeof s);
    char line[1200];
    CHECK(!egress_denial_note(&s, line, sizeof line), "note: nothing denied, no note");
    s.mode = FB_NET_NONE;
    s.names_denied = 1;
    s.ndenied_names = 1;
    strcpy(s.denied_names[0], "registry.npmjs.org");
    CHECK(egress_denial_note(&s, line, sizeof line) &&
              !strcmp(line, "network: 1 name denied (registry.npmjs.org): the network is off; allow "
                            "names with --allow-net NAME"),
          "note: one name, network off: %s", line);
    s.mode = FB_NET_ALLOW;
    s.names_denied = 7;
    s.ndenied_names = FB_NET_NOTE_MAX + 1;
    strcpy(s.denied_names[1], "b.test");
    strcpy(s.denied_names[2], "c.test");
    s.conns_refused = 2;
    s.nrefused = 1;
    strcpy(s.refused[0], "api.test:22");
    CHECK(egress_denial_note(&s, line, sizeof line) &&
              !strcmp(line, "network: 7 names denied (registry.npmjs.org, b.test, c.test, ...), 2 "
                            "connections refused (api.test:22): allow with --allow-net NAME[:PORT]"),
          "note: names and connections, more than shown: %s", line);
}

void unit_net(void)
{
    resolve_syntax();
    combinations();
    parsers();
    names();
    denial_note();
}
