/* record_verify.c — `fluebox record verify FILE [--key PUBKEY]` and the
 * check it runs (record_check.h): every line must be JSON with seq = its
 * line number and prev = the SHA-256 of the line before it; a signed line
 * must carry a valid Ed25519 signature under the key the first line names,
 * which must be --key's; nothing may follow the end line. The first line
 * that fails is named with what it says happened. `record show` is
 * dispatched from here too (record_show.c). */
#include "record.h"
#include "record_check.h"

#include <stdio.h>
#include <string.h>

static const char record_usage[] =
    "Usage: fluebox record verify FILE [--key PUBKEY]\n"
    "       fluebox record show FILE [--json]\n"
    "verify checks a record written by --record: the chain of hashes and, with\n"
    "--key (the public half of --record-key, PEM), its signatures. Exit status:\n"
    "0 intact, complete and signed by PUBKEY; 1 tampered (the first wrong line is\n"
    "named); 2 intact but unsigned, not checked against --key, or signed by another\n"
    "key; 3 cut short (a valid prefix without its end line: the writer was killed,\n"
    "or the end removed); 4 not a record, unreadable, or bad usage.\n"
    "show prints a summary: what ran, what changed, where it talked, what was refused.\n";

#define SIG_SUFFIX_LEN (8 + 128 + 2) /* ,"sig":"<128 hex>"} */

struct chk {
    struct fb_rec_verdict *v;
    EVP_PKEY *given;   /* --key */
    EVP_PKEY *named;   /* the first line's public key */
    char prev[FB_SHA256_HEX];
    int64_t n;         /* the line being checked */
    bool ended;        /* the end line was seen */
};

static int verdict(struct chk *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int verdict(struct chk *c, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->v->msg, sizeof c->v->msg, fmt, ap);
    va_end(ap);
    c->v->status = status;
    return -1;
}

/* The first line: {"seq":1,"prev":GENESIS,"event":"record","format":1,...}. */
static int check_header(struct chk *c, json_t *o)
{
    const char *ev = json_string_value(json_object_get(o, "event"));
    json_t *fmt = json_object_get(o, "format");
    if (ev && strcmp(ev, "record") && json_is_integer(json_object_get(o, "seq")) &&
        json_is_string(json_object_get(o, "prev")))
        return verdict(c, FB_REC_TAMPERED, "line 1: a %s line (seq %lld), not the record's "
                       "first: lines were removed from the start", ev,
                       (long long)json_integer_value(json_object_get(o, "seq")));
    if (!ev || strcmp(ev, "record") || !json_is_integer(fmt))
        return verdict(c, FB_REC_BAD, "not a fluebox record (its first line is not one)");
    if (json_integer_value(fmt) != FB_RECORD_FORMAT)
        return verdict(c, FB_REC_BAD, "record format %lld: this fluebox reads format %d",
                       (long long)json_integer_value(fmt), FB_RECORD_FORMAT);
    const char *prev = json_string_value(json_object_get(o, "prev"));
    if (!prev || strcmp(prev, FB_RECORD_GENESIS))
        return verdict(c, FB_REC_TAMPERED, "line 1: its prev is not the fixed first value: "
                       "lines were removed from the start");
    const char *pub = json_string_value(json_object_get(o, "public_key"));
    if (pub) {
        c->named = rc_public_key_hex(pub);
        if (!c->named)
            return verdict(c, FB_REC_TAMPERED, "line 1: public_key is not an Ed25519 key");
        c->v->is_signed = true;
        snprintf(c->v->pub, sizeof c->v->pub, "%s", pub);
    }
    return 0;
}

/* A line's signature: the line's bytes end with ,"sig":"HEX"} and HEX
 * signs the bytes before that comma followed by "}". */
static int check_sig(struct chk *c, const char *line, size_t len, json_t *o)
{
    json_t *sig = json_object_get(o, "sig");
    const char *ev = json_string_value(json_object_get(o, "event"));
    bool should = ev && (!strcmp(ev, "checkpoint") || !strcmp(ev, "end"));
    if (!sig) {
        if (c->named && should && json_object_get(o, "sig_error"))
            return verdict(c, FB_REC_UNTRUSTED, "line %lld: not signed: the writer said: %s",
                           (long long)c->n,
                           json_string_value(json_object_get(o, "sig_error")) ?: "?");
        if (c->named && should)
            return verdict(c, FB_REC_TAMPERED, "line %lld: a signed record's %s line without "
                           "its signature (removed)", (long long)c->n, ev);
        return 0;
    }
    if (!c->named)
        return verdict(c, FB_REC_TAMPERED, "line %lld: a signature in a record whose first "
                       "line names no key", (long long)c->n);
    const char *hex = json_string_value(sig);
    if (!hex || len < SIG_SUFFIX_LEN || strncmp(line + len - SIG_SUFFIX_LEN, ",\"sig\":\"", 8) ||
        strncmp(line + len - SIG_SUFFIX_LEN + 8, hex, 128) || strncmp(line + len - 2, "\"}", 2))
        return verdict(c, FB_REC_TAMPERED, "line %lld: its signature is not where the writer "
                       "puts it (the line was rewritten)", (long long)c->n);
    char *msg = fb_xstrndup(line, len - SIG_SUFFIX_LEN + 1);
    msg[len - SIG_SUFFIX_LEN] = '}';
    bool ok = rc_verify_hex(c->named, msg, len - SIG_SUFFIX_LEN + 1, hex);
    free(msg);
    if (!ok)
        return verdict(c, FB_REC_TAMPERED, "line %lld: its signature does not match: the line "
                       "(or the chain before it) was changed after it was signed",
                       (long long)c->n);
    c->v->signed_upto = c->n;
    return 0;
}

/* seq and prev: the line's place in the chain. */
static int check_chain(struct chk *c, json_t *o)
{
    json_t *seq = json_object_get(o, "seq");
    const char *prev = json_string_value(json_object_get(o, "prev"));
    if (!json_is_integer(seq) || !prev || !json_is_string(json_object_get(o, "event")))
        return verdict(c, FB_REC_TAMPERED, "line %lld: seq, prev or event is missing",
                       (long long)c->n);
    long long s = (long long)json_integer_value(seq), n = (long long)c->n;
    if (s > n)
        return verdict(c, FB_REC_TAMPERED, "line %lld: its seq is %lld: %lld line(s) before "
                       "it were removed, or lines were reordered", n, s, s - n);
    if (s < n)
        return verdict(c, FB_REC_TAMPERED, "line %lld: its seq is %lld: a line was duplicated, "
                       "inserted or moved", n, s);
    if (strcmp(prev, c->prev))
        return verdict(c, FB_REC_TAMPERED, "line %lld: its prev is not the SHA-256 of line "
                       "%lld: line %lld was changed (or lines were swapped or replaced)", n, n - 1,
                       n - 1);
    return 0;
}

static int check_line(struct chk *c, const char *line, size_t len, json_t **out)
{
    json_error_t je;
    json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    if (!o || !json_is_object(o)) {
        json_decref(o);
        if (c->n == 1)
            return verdict(c, FB_REC_BAD, "not a fluebox record (its first line is not JSON)");
        return verdict(c, FB_REC_TAMPERED,
                       "line %lld: not a JSON object: %s", (long long)c->n,
                       c->ended ? "added after the end line" : "the line was changed");
    }
    *out = o;
    if (c->ended)
        return verdict(c, FB_REC_TAMPERED, "line %lld: after the end line: lines were added",
                       (long long)c->n);
    if (c->n == 1 && check_header(c, o) < 0)
        return -1;
    if (check_chain(c, o) < 0 || check_sig(c, line, len, o) < 0)
        return -1;
    const char *ev = json_string_value(json_object_get(o, "event"));
    if (!strcmp(ev, "end"))
        c->ended = true;
    return 0;
}

/* What a chain that checked out line by line amounts to. */
static void conclude(struct chk *c)
{
    struct fb_rec_verdict *v = c->v;
    long long n = (long long)v->lines;
    char signed_note[120] = "";
    if (v->signed_upto)
        snprintf(signed_note, sizeof signed_note, "; signed up to line %lld",
                 (long long)v->signed_upto);
    if (!c->ended) {
        verdict(c, FB_REC_CUT, "cut short: lines 1-%lld are intact, but there is no end line "
                "(the writer was killed, or the end was removed)%s", n, signed_note);
        return;
    }
    if (!v->is_signed) {
        verdict(c, FB_REC_UNTRUSTED, "intact (%lld lines), but unsigned: a full rewrite would "
                "not be caught (record with --record-key)", n);
        return;
    }
    char want[FB_ED25519_PUB_HEX];
    if (!c->given) {
        verdict(c, FB_REC_UNTRUSTED, "intact (%lld lines) and signed by the key it names "
                "(%.16s...), which was not checked: give --key PUBKEY", n, v->pub);
    } else if (rc_public_hex(c->given, want) < 0 || strcmp(want, v->pub)) {
        verdict(c, FB_REC_UNTRUSTED, "intact (%lld lines), but signed by another key "
                "(%.16s...), not --key's (%.16s...)", n, v->pub, want);
    } else {
        verdict(c, FB_REC_OK, "intact, complete and signed by --key (%lld lines)", n);
    }
}

void record_check(const char *path, EVP_PKEY *key,
                  void (*each)(void *arg, int64_t line, json_t *o), void *arg,
                  struct fb_rec_verdict *v)
{
    memset(v, 0, sizeof *v);
    struct chk c = {.v = v, .given = key};
    memcpy(c.prev, FB_RECORD_GENESIS, sizeof c.prev);
    FILE *f = fopen(path, "re");
    if (!f) {
        verdict(&c, FB_REC_BAD, "%s: %s", path, strerror(errno));
        return;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int stop = 0;
    while (!stop && (len = getline(&line, &cap, f)) > 0) {
        c.n++;
        if (line[len - 1] != '\n') {
            /* A writer never leaves half a line: cut mid-line. */
            if (c.n == 1)
                verdict(&c, FB_REC_BAD, "not a fluebox record (no complete first line)");
            else if (c.ended)
                verdict(&c, FB_REC_TAMPERED, "line %lld: after the end line: bytes were added",
                        (long long)c.n);
            else
                verdict(&c, FB_REC_CUT, "cut short in the middle of line %lld: lines 1-%lld "
                        "are intact, there is no end line", (long long)c.n, (long long)c.n - 1);
            stop = 1;
            break;
        }
        json_t *o = NULL;
        stop = check_line(&c, line, (size_t)len - 1, &o) < 0;
        if (!stop) {
            rc_sha256_hex(line, (size_t)len - 1, c.prev);
            v->lines = c.n;
            if (each)
                each(arg, c.n, o);
        }
        json_decref(o);
    }
    if (!stop && ferror(f))
        verdict(&c, FB_REC_BAD, "%s: %s", path, strerror(errno));
    else if (!stop && c.n == 0)
        verdict(&c, FB_REC_CUT, "empty: cut short before its first line");
    else if (!stop)
        conclude(&c);
    free(line);
    fclose(f);
    rc_free(c.named);
}

static int verify_main(int argc, char **argv)
{
    const char *file = NULL, *keyfile = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--key") && i + 1 == argc)
            return fb_warn("record verify: --key needs a PUBKEY file"), FB_REC_BAD;
        else if (!strcmp(argv[i], "--key"))
            keyfile = argv[++i];
        else if (!strncmp(argv[i], "--key=", 6))
            keyfile = argv[i] + 6;
        else if (argv[i][0] == '-' && argv[i][1])
            return fb_warn("record verify: unknown option %s (see fluebox record --help)", argv[i]),
                   FB_REC_BAD;
        else if (!file)
            file = argv[i];
        else
            return fb_warn("record verify: one FILE only"), FB_REC_BAD;
    }
    if (!file)
        return fb_warn("record verify: which FILE? (fluebox record verify FILE [--key PUBKEY])"),
               FB_REC_BAD;
    rc_init();
    struct fb_err err = {0};
    EVP_PKEY *k = keyfile ? rc_public_key_file(keyfile, &err) : NULL;
    if (keyfile && !k) {
        fb_warn("record verify: %s", err.msg);
        return FB_REC_BAD;
    }
    struct fb_rec_verdict v;
    record_check(file, k, NULL, NULL, &v);
    rc_free(k);
    if (v.status == FB_REC_BAD)
        fb_warn("record verify: %s", v.msg);
    else
        printf("%s: %s\n", file, v.msg);
    return v.status;
}

int cmd_record(int argc, char **argv)
{
    if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
        fputs(record_usage, argc < 1 ? stderr : stdout);
        return argc < 1 ? FB_REC_BAD : 0;
    }
    if (!strcmp(argv[0], "verify"))
        return verify_main(argc - 1, argv + 1);
    if (!strcmp(argv[0], "show")) {
        const char *file = NULL;
        bool json = false;
        for (int i = 1; i < argc; i++) {
            if (!strcmp(argv[i], "--json"))
                json = true;
            else if (argv[i][0] == '-' && argv[i][1])
                return fb_warn("record show: unknown option %s", argv[i]), FB_REC_BAD;
            else if (!file)
                file = argv[i];
            else
                return fb_warn("record show: one FILE only"), FB_REC_BAD;
        }
        if (!file)
            return fb_warn("record show: which FILE? (fluebox record show FILE [--json])"),
                   FB_REC_BAD;
        return record_show(file, json);
    }
    fb_warn("record: unknown subcommand \"%s\" (verify or show)", argv[0]);
    return FB_REC_BAD;
}
