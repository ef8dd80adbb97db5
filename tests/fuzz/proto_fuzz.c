/* proto_fuzz.c — libFuzzer target for the wire protocol's parser and
 * encoders (src/server/proto.c): every input is a request line as the server would
 * see it. Checks, beyond "no crash, no sanitizer report":
 *   - a request is accepted, or refused with one of the protocol's codes;
 *   - every typed parameter getter either succeeds or fails with
 *     invalid_params naming the parameter;
 *   - every response line the server would send is one line of valid JSON
 *     with the request's id;
 *   - utf8_repair always yields valid UTF-8, leaves valid input unchanged,
 *     and gives the same bytes whether the input comes in one piece or two;
 *   - base64 encode/decode round-trips.
 * Built and run briefly by tests/suites/fuzz-proto.sh; longer: make fuzz-proto. */
#include "proto.h"

#include <string.h>

#define CHECK(c)                                                                   \
    do {                                                                           \
        if (!(c)) {                                                                \
            fprintf(stderr, "check failed: %s (%s:%d)\n", #c, __FILE__, __LINE__); \
            abort();                                                               \
        }                                                                          \
    } while (0)

static const char *const codes[] = {"parse_error", "invalid_request", "method_not_found", NULL};

static bool code_ok(const char *c)
{
    for (size_t i = 0; codes[i]; i++)
        if (c && !strcmp(c, codes[i]))
            return true;
    return false;
}

static void check_line(char *line, size_t len, json_t *id)
{
    CHECK(len > 0 && line[len - 1] == '\n');
    CHECK(memchr(line, '\n', len - 1) == NULL);
    json_error_t je;
    json_t *o = json_loadb(line, len - 1, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    CHECK(json_is_object(o));
    json_t *oid = json_object_get(o, "id");
    CHECK(oid != NULL);
    if (id)
        CHECK(json_equal(oid, id));
    else
        CHECK(json_is_null(oid));
    json_decref(o);
    free(line);
}

static void check_getter(int r, struct proto_err *e, const char *key)
{
    if (r < 0) {
        CHECK(e->code && !strcmp(e->code, "invalid_params"));
        /* The parameter named is the key or its parent object. */
        CHECK(e->param[0] && !strncmp(key, e->param, strlen(e->param)));
    }
    perr_clear(e);
}

static void getters(json_t *params)
{
    static const char *const keys[] = {
        "session", "path", "data", "command", "argv", "env", "limits.memory", "limits.pids",
        "limits.cpus", "offset", "length", "mode", "encoding", "stdin", "recursive",
        "options", "ttlMs", NULL};
    for (size_t i = 0; keys[i]; i++) {
        const char *k = keys[i];
        struct proto_err e = {0};
        const char *s;
        bool b;
        int64_t n;
        unsigned m;
        json_t *j;
        check_getter(pget_str(params, k, &s, NULL, false, 4095, &e), &e, k);
        check_getter(pget_str(params, k, &s, NULL, true, 0, &e), &e, k);
        check_getter(pget_bool(params, k, &b, false, &e), &e, k);
        check_getter(pget_int(params, k, &n, 0, -5, 1 << 20, &e), &e, k);
        check_getter(pget_size(params, k, &n, 0, &e), &e, k);
        int r = pget_mode(params, k, &m, 0644, &e);
        if (r == 0)
            CHECK(m <= 07777);
        check_getter(r, &e, k);
        check_getter(pget_encoding(params, k, &b, &e), &e, k);
        check_getter(pget_path(params, k, &s, &e), &e, k);
        check_getter(pget_strarray(params, k, &j, true, &e), &e, k);
        check_getter(pget_strmap(params, k, &j, &e), &e, k);
        json_t *v = json_object_get(params, k);
        if (v) {
            int sig = proto_signal_parse(v);
            CHECK(sig == -1 || (sig > 0 && sig < 32 && proto_signal_name(sig)));
        }
    }
}

static void utf8_checks(const unsigned char *d, size_t n)
{
    char *out = malloc(3 * n + 1);
    size_t used;
    size_t ol = utf8_repair(d, n, out, true, &used);
    CHECK(used == n);
    CHECK(utf8_valid((const unsigned char *)out, ol));
    if (utf8_valid(d, n))
        CHECK(ol == n && !memcmp(out, d, n));
    /* In two pieces, carrying an incomplete sequence, as exec streams do. */
    size_t cut = n ? d[0] % (n + 1) : 0;
    char *o2 = malloc(3 * n + 8);
    size_t u1;
    size_t l1 = utf8_repair(d, cut, o2, false, &u1);
    CHECK(cut - u1 <= 3);
    size_t restn = n - u1;
    size_t u2;
    size_t l2 = utf8_repair(d + u1, restn, o2 + l1, true, &u2);
    CHECK(u2 == restn);
    CHECK(l1 + l2 == ol && !memcmp(o2, out, ol));
    free(o2);
    free(out);
}

static void b64_checks(const unsigned char *d, size_t n)
{
    char *enc = malloc(b64_encoded_len(n) + 1);
    size_t el = b64_encode(d, n, enc);
    CHECK(el == b64_encoded_len(n));
    unsigned char *dec = malloc(b64_decoded_max(el));
    ssize_t dl = b64_decode(enc, el, dec);
    CHECK(dl == (ssize_t)n && !memcmp(dec, d, n));
    free(dec);
    /* Decoding arbitrary text never writes past the bound. */
    unsigned char *d2 = malloc(b64_decoded_max(n) + 1);
    ssize_t l2 = b64_decode((const char *)d, n, d2);
    CHECK(l2 < 0 || (size_t)l2 <= b64_decoded_max(n));
    free(d2);
    free(enc);
}

/* The big-string shortcut of the parser gives the same tree (or the same
 * error code) as jansson alone. */
static void bulk_differential(const uint8_t *data, size_t size)
{
    struct proto_req r1, r2;
    struct proto_err e1 = {0}, e2 = {0};
    size_t saved = proto_bulk_min;
    proto_bulk_min = 1;
    int a = proto_parse_request((const char *)data, size, &r1, &e1);
    proto_bulk_min = (size_t)-1;
    int b = proto_parse_request((const char *)data, size, &r2, &e2);
    proto_bulk_min = saved;
    if (a != b || (a < 0 && strcmp(e1.code, e2.code)))
        fprintf(stderr, "shortcut: %d %s / plain: %d %s\n", a, e1.code, b, e2.code);
    CHECK(a == b);
    if (a == 0)
        CHECK(json_equal(r1.root, r2.root));
    else
        CHECK(!strcmp(e1.code, e2.code));
    proto_req_free(&r1);
    proto_req_free(&r2);
    perr_clear(&e1);
    perr_clear(&e2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct proto_req req;
    struct proto_err e = {0};
    size_t len;
    char *line;
    bulk_differential(data, size);
    if (proto_parse_request((const char *)data, size, &req, &e) < 0) {
        CHECK(code_ok(e.code));
        line = proto_error_line(req.id, &e, &len);
        check_line(line, len, req.id);
    } else {
        CHECK(req.method && proto_method_known(req.method));
        CHECK(json_is_object(req.params));
        getters(req.params);
        json_t *lim = json_object_get(req.params, "limits");
        if (json_is_object(lim))
            getters(lim);
        line = proto_result_line(req.id, json_deep_copy(req.params), &len);
        check_line(line, len, req.id);
        line = proto_event_line(req.id, "stdout", json_pack("{s:s}", "data", "x"), &len);
        check_line(line, len, req.id);
        /* An error whose message and path quote the client's bytes. */
        struct proto_err e2 = {0};
        e2.code = "ENOENT";
        snprintf(e2.message, sizeof e2.message, "%.*s", (int)(size < 200 ? size : 200), (const char *)data);
        e2.path = strndup((const char *)data, size < 300 ? size : 300);
        line = proto_error_line(req.id, &e2, &len);
        check_line(line, len, req.id);
        perr_clear(&e2);
    }
    proto_req_free(&req);
    perr_clear(&e);
    json_t *pid = proto_peek_id((const char *)data, size);
    CHECK(!pid || json_is_string(pid) || json_is_integer(pid));
    json_decref(pid);
    utf8_checks(data, size);
    b64_checks(data, size);
    return 0;
}
