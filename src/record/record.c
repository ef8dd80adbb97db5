/* record.c — the flight recorder's writer (see record.h; the format is
 * docs/record.md).
 *
 * Every line is {"seq":N,"time":T,"prev":H,"event":E,...}: N counts lines
 * from 1, H is the SHA-256 (hex) of the previous line's bytes without its
 * newline (of nothing for line 1: FB_RECORD_GENESIS). A signed line (a
 * checkpoint, the end) ends with ,"sig":S}: S is the Ed25519 signature of
 * the line's bytes up to that field with a "}" in its place, so it covers
 * the line and, through prev, every line before it.
 *
 * A line is written with one write() (the rest of a partial one follows at
 * once): a SIGKILLed supervisor leaves whole lines, a valid prefix. The file
 * is created, never reused: appending to an existing record would put two
 * chains in one file, and replacing one would lose what it held. */
#include "record.h"

#include "record_crypto.h"

#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <time.h>

struct fb_record {
    int fd;
    char *path;
    int key_fd;       /* -1: unsigned */
    EVP_PKEY *key;    /* only while a line is being signed */
    char pub[FB_ED25519_PUB_HEX];
    int64_t seq;      /* of the last line written */
    char prev[FB_SHA256_HEX];
    int64_t since_sig; /* lines since the last checkpoint */
    uint64_t sig_ns;
    bool failed;      /* a write failed: nothing more is written */
    char fail_msg[300];
    char sig_msg[512]; /* why a line that should be signed is not */
};

static void fail(struct fb_record *r, const char *detail)
{
    if (r->failed)
        return;
    r->failed = true;
    /* Said by record_close(), to whoever asked for the record. */
    snprintf(r->fail_msg, sizeof r->fail_msg, "--record %s: %s: the record stops after line %lld",
             r->path, detail, (long long)r->seq);
}

/* The private key, read again from its descriptor for each signature and
 * freed (wiped) right after it: it is in memory only while a line is being
 * signed, never when a sandbox is cloned from this process. */
static EVP_PKEY *key(struct fb_record *r, char *why, size_t cap)
{
    struct fb_err err = {0};
    r->key = rc_private_key_fd(r->key_fd, "--record-key", &err);
    char pub[FB_ED25519_PUB_HEX];
    if (r->key && (rc_public_hex(r->key, pub) < 0 || strcmp(pub, r->pub))) {
        snprintf(err.msg, sizeof err.msg, "--record-key: the key file changed during the run");
        rc_free(r->key);
        r->key = NULL;
    }
    if (!r->key)
        snprintf(why, cap, "%s", err.msg);
    return r->key;
}

/* Write {seq, time, prev, ...o} (o consumed), signed when sign. */
static void put_line(struct fb_record *r, json_t *o, bool sign)
{
    if (r->failed) {
        json_decref(o);
        return;
    }
    char t[40];
    fb_iso_time(t, sizeof t);
    json_t *line = json_pack("{s:I, s:s, s:s}", "seq", (json_int_t)(r->seq + 1), "time", t,
                             "prev", r->prev);
    json_object_update(line, o);
    json_decref(o);
    char why[512] = "";
    EVP_PKEY *k = sign ? key(r, why, sizeof why) : NULL;
    if (sign && !k) {
        json_object_set_new(line, "sig_error", json_string(why));
        snprintf(r->sig_msg, sizeof r->sig_msg, "%s", why);
    }
    char *s = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
    json_decref(line);
    if (!s) {
        fail(r, "an event could not be encoded");
        return;
    }
    size_t n = strlen(s);
    char *out = s;
    char sig[FB_ED25519_SIG_HEX];
    if (k) {
        if (rc_sign_hex(k, s, n, sig) < 0) {
            rc_free(r->key);
            r->key = NULL;
            free(s);
            fail(r, "libcrypto could not sign");
            return;
        }
        s[n - 1] = 0; /* the closing brace */
        rc_free(r->key);
        r->key = NULL;
        out = fb_xasprintf("%s,\"sig\":\"%s\"}", s, sig);
        free(s);
        n = strlen(out);
        r->since_sig = 0;
        r->sig_ns = fb_now_ns();
    }
    rc_sha256_hex(out, n, r->prev);
    char *w = fb_xrealloc(out, n + 1);
    w[n] = '\n';
    if (fb_write_all(r->fd, w, n + 1) < 0)
        fail(r, strerror(errno));
    else
        r->seq++, r->since_sig++;
    free(w);
}

static void sync_file(struct fb_record *r)
{
    if (!r->failed && fsync(r->fd) < 0 && errno != EINVAL)
        fail(r, strerror(errno));
}

int record_fd(const struct fb_record *r) { return r ? r->fd : -1; }

struct fb_record *record_open(const char *path, const char *key_path, struct fb_err *err)
{
    rc_init();
    struct fb_record *r = fb_xcalloc(1, sizeof *r);
    r->fd = r->key_fd = -1;
    if (key_path) {
        r->key_fd = open(key_path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (r->key_fd < 0) {
            fb_errno(err, FB_EXIT_SETUP, "--record-key %s", key_path);
            goto fail;
        }
        char what[PATH_MAX + 16];
        snprintf(what, sizeof what, "--record-key %s", key_path);
        EVP_PKEY *k = rc_private_key_fd(r->key_fd, what, err);
        if (!k)
            goto fail;
        int rc = rc_public_hex(k, r->pub);
        rc_free(k); /* read again for each signature (record_crypto.c) */
        if (rc < 0) {
            fb_errf(err, FB_EXIT_SETUP, "%s: no public key can be derived from it", what);
            goto fail;
        }
    }
    r->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC | O_NOCTTY,
                 0600);
    if (r->fd < 0) {
        if (errno == EEXIST)
            fb_errf(err, FB_EXIT_SETUP,
                    "--record %s: the file exists; a record is never appended to or replaced "
                    "(give a new name)", path);
        else
            fb_errno(err, FB_EXIT_SETUP, "--record %s", path);
        goto fail;
    }
    r->path = fb_xstrdup(path);
    memcpy(r->prev, FB_RECORD_GENESIS, sizeof r->prev);
    r->sig_ns = fb_now_ns();
    json_t *o = json_pack("{s:s, s:i, s:s, s:s, s:o, s:o}", "event", "record", "format",
                          FB_RECORD_FORMAT, "fluebox", FB_VERSION, "hash", "sha256", "signature",
                          key_path ? json_string("ed25519") : json_null(), "public_key",
                          key_path ? json_string(r->pub) : json_null());
    put_line(r, o, false);
    if (r->failed) {
        fb_errf(err, FB_EXIT_SETUP, "%s", r->fail_msg);
        unlink(path);
        goto fail;
    }
    return r;
fail:
    record_abandon(r);
    return NULL;
}

void record_event(struct fb_record *r, json_t *o)
{
    if (!r) {
        json_decref(o);
        return;
    }
    put_line(r, o, false);
    bool due = r->since_sig >= FB_RECORD_CHECKPOINT_LINES ||
               fb_now_ns() - r->sig_ns >= FB_RECORD_CHECKPOINT_SEC * 1000000000ull;
    if (!due || r->failed)
        return;
    if (r->key_fd >= 0)
        put_line(r, json_pack("{s:s}", "event", "checkpoint"), true);
    else
        r->since_sig = 0, r->sig_ns = fb_now_ns();
    sync_file(r);
}

int record_close(struct fb_record *r, json_t *o, struct fb_err *err)
{
    if (!r) {
        json_decref(o);
        return 0;
    }
    json_t *end = json_pack("{s:s}", "event", "end");
    if (o) {
        json_object_update(end, o);
        json_decref(o);
    }
    put_line(r, end, r->key_fd >= 0);
    sync_file(r);
    int rc = 0;
    if (r->failed)
        rc = fb_errf(err, FB_EXIT_SETUP, "%s", r->fail_msg);
    else if (r->sig_msg[0])
        rc = fb_errf(err, FB_EXIT_SETUP, "--record %s: not signed: %s", r->path, r->sig_msg);
    else if (close(r->fd) < 0 && errno != EINTR)
        rc = fb_errno(err, FB_EXIT_SETUP, "--record %s", r->path);
    else
        r->fd = -1;
    record_abandon(r);
    return rc;
}

void record_discard(struct fb_record *r)
{
    if (r && r->path)
        unlink(r->path);
    record_abandon(r);
}

void record_abandon(struct fb_record *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    if (r->key_fd >= 0)
        close(r->key_fd);
    rc_free(r->key);
    free(r->path);
    free(r);
}
