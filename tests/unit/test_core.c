/* Unit tests of the core's pure code: size and duration parsing, allow
 * patterns, the policy's environment handling. */
#include "fb.h"
#include "policy.h"
#include "unit.h"

#include <string.h>

static void sizes(void)
{
    int64_t v;
    CHECK(fb_parse_size("512M", &v) == 0 && v == 512LL << 20, "size 512M");
    CHECK(fb_parse_size("1G", &v) == 0 && v == 1LL << 30, "size 1G");
    CHECK(fb_parse_size("1GiB", &v) == 0 && v == 1LL << 30, "size 1GiB");
    CHECK(fb_parse_size("64k", &v) == 0 && v == 65536, "size 64k");
    CHECK(fb_parse_size("4096", &v) == 0 && v == 4096, "size plain bytes");
    CHECK(fb_parse_size("1.5G", &v) == 0 && v == 3LL << 29, "size 1.5G");
    CHECK(fb_parse_size("unlimited", &v) == 0 && v == -1, "size unlimited");
    CHECK(fb_parse_size("0", &v) < 0, "size 0 refused");
    CHECK(fb_parse_size("-1M", &v) < 0, "size negative refused");
    CHECK(fb_parse_size("12Q", &v) < 0, "size bad suffix refused");
    CHECK(fb_parse_size("", &v) < 0, "size empty refused");
    CHECK(fb_parse_size("M", &v) < 0, "size without number refused");
    CHECK(fb_parse_size("1e30", &v) < 0, "size overflow refused");
}

static void durations(void)
{
    int64_t v;
    CHECK(fb_parse_duration_ms("500ms", &v) == 0 && v == 500, "duration 500ms");
    CHECK(fb_parse_duration_ms("30s", &v) == 0 && v == 30000, "duration 30s");
    CHECK(fb_parse_duration_ms("5m", &v) == 0 && v == 300000, "duration 5m");
    CHECK(fb_parse_duration_ms("1h", &v) == 0 && v == 3600000, "duration 1h");
    CHECK(fb_parse_duration_ms("2", &v) == 0 && v == 2000, "duration bare seconds");
    CHECK(fb_parse_duration_ms("0.5s", &v) == 0 && v == 500, "duration 0.5s");
    CHECK(fb_parse_duration_ms("0s", &v) < 0, "duration 0 refused");
    CHECK(fb_parse_duration_ms("-3s", &v) < 0, "duration negative refused");
    CHECK(fb_parse_duration_ms("3 days", &v) < 0, "duration bad unit refused");
}

static void allow_patterns(void)
{
    struct fb_policy p;
    struct fb_err err;
    policy_init(&p);
    CHECK(policy_add_allow(&p, "Example.COM", &err) == 0, "allow plain name");
    CHECK(policy_add_allow(&p, "*.pypi.org:443", &err) == 0, "allow wildcard with port");
    CHECK(policy_add_allow(&p, "*.", &err) < 0, "refuse *.");
    CHECK(policy_add_allow(&p, "*", &err) < 0, "refuse *");
    CHECK(policy_add_allow(&p, "foo..com", &err) < 0, "refuse empty label");
    CHECK(policy_add_allow(&p, "a.com:0", &err) < 0, "refuse port 0");
    CHECK(policy_add_allow(&p, "a.com:70000", &err) < 0, "refuse port 70000");
    CHECK(policy_add_allow(&p, "a*.com", &err) < 0, "refuse inner wildcard");
    CHECK(policy_add_allow(&p, "-a.com", &err) < 0, "refuse leading hyphen");
    CHECK(policy_add_allow(&p, "*.com", &err) < 0, "refuse wildcard over a TLD");
    CHECK(policy_allow_match(&p, "example.com", 443) != NULL, "match name on 443");
    CHECK(policy_allow_match(&p, "example.com", 80) != NULL, "match name on 80");
    CHECK(policy_allow_match(&p, "example.com", 22) == NULL, "no match on port 22");
    CHECK(policy_allow_match(&p, "www.example.com", 443) == NULL, "plain name does not cover subdomains");
    CHECK(policy_allow_match(&p, "files.pypi.org", 443) != NULL, "wildcard matches a subdomain");
    CHECK(policy_allow_match(&p, "a.b.pypi.org", 443) != NULL, "wildcard matches deeper");
    CHECK(policy_allow_match(&p, "pypi.org", 443) == NULL, "wildcard does not match the bare name");
    CHECK(policy_allow_match(&p, "files.pypi.org", 80) == NULL, "explicit port only");
    CHECK(policy_allow_match(&p, "evilpypi.org", 443) == NULL, "suffix must be at a label boundary");
    CHECK(policy_add_resolve(&p, "api.test=127.0.0.1", &err) == 0, "resolve NAME=IP");
    CHECK(policy_add_resolve(&p, "api.test=::1", &err) == 0, "resolve NAME=IPv6");
    CHECK(policy_add_resolve(&p, "api.test=nothost", &err) < 0, "resolve refuses a non-address");
    CHECK(policy_add_resolve(&p, "=1.2.3.4", &err) < 0, "resolve refuses an empty name");
    policy_free(&p);
}

static void env(void)
{
    struct fb_policy p;
    policy_init(&p);
    policy_add_env_set(&p, "A=1");
    policy_add_env_set(&p, "B=2");
    policy_add_env_set(&p, "A=3");
    CHECK(p.nenv_set == 2 && !strcmp(p.env_set[0], "A=3"), "a later --env replaces an earlier one");
    policy_free(&p);
}

void unit_core(void)
{
    sizes();
    durations();
    allow_patterns();
    env();
}
