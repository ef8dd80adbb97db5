/* Unit tests of the flight record's writer and checker (src/record/): a
 * signed record verifies under its key and not without it; checkpoints come
 * every FB_RECORD_CHECKPOINT_LINES lines; an existing file is refused; a
 * changed byte is tampering, a cut end is cut short. The key is made here
 * with libcrypto, in a temporary directory. */
#include "record.h"
#include "record_check.h"
#include "unit.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdlib.h>
#include <string.h>

static void events(struct fb_record *r, int n)
{
    for (int i = 0; i < n; i++)
        record_event(r, json_pack("{s:s, s:i}", "event", "test", "i", i));
}

static int count_checkpoints(const char *path)
{
    char buf[1 << 16];
    int n = 0;
    FILE *f = fopen(path, "r");
    while (f && fgets(buf, sizeof buf, f))
        n += strstr(buf, "\"event\":\"checkpoint\"") != NULL;
    if (f)
        fclose(f);
    return n;
}

/* Rewrite path with f applied to its bytes. */
static void edit(const char *path, void (*f)(char *s, size_t *n))
{
    static char s[1 << 20];
    FILE *in = fopen(path, "r");
    size_t n = in ? fread(s, 1, sizeof s, in) : 0;
    if (in)
        fclose(in);
    f(s, &n);
    FILE *out = fopen(path, "w");
    if (out) {
        fwrite(s, 1, n, out);
        fclose(out);
    }
}

static void flip_third_line(char *s, size_t *n)
{
    char *l = strchr(strchr(s, '\n') + 1, '\n') + 1;
    char *d = strstr(l, "\"i\":1");
    if (d)
        d[4] = '7';
}

static void cut_last_line(char *s, size_t *n)
{
    s[*n - 1] = 0;
    *n = (size_t)(strrchr(s, '\n') - s) + 1;
}

void unit_record(void)
{
    char dir[] = "/tmp/fbunit-record.XXXXXX", key[600], rec[600], rec2[600];
    if (!mkdtemp(dir)) {
        CHECK(0, "record: mkdtemp");
        return;
    }
    snprintf(key, sizeof key, "%s/key.pem", dir);
    snprintf(rec, sizeof rec, "%s/r.jsonl", dir);
    snprintf(rec2, sizeof rec2, "%s/u.jsonl", dir);
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    FILE *kf = fopen(key, "w");
    bool wrote = k && kf && PEM_write_PrivateKey(kf, k, NULL, NULL, 0, NULL, NULL) == 1;
    if (kf)
        fclose(kf);
    CHECK(wrote, "record: a test key");

    struct fb_err err = {0};
    struct fb_record *r = record_open(rec, key, &err);
    CHECK(r != NULL, "record: record_open with a key (%s)", err.msg);
    events(r, 2 * FB_RECORD_CHECKPOINT_LINES + 10);
    CHECK(record_close(r, NULL, &err) == 0, "record: record_close");
    CHECK(count_checkpoints(rec) == 2, "record: a checkpoint every %d lines (%d)",
          FB_RECORD_CHECKPOINT_LINES, count_checkpoints(rec));
    struct fb_rec_verdict v;
    record_check(rec, k, NULL, NULL, &v);
    CHECK(v.status == FB_REC_OK && v.signed_upto == v.lines, "record: verifies under its key: %s",
          v.msg);
    record_check(rec, NULL, NULL, NULL, &v);
    CHECK(v.status == FB_REC_UNTRUSTED, "record: without --key, not trusted: %s", v.msg);

    CHECK(record_open(rec, NULL, &err) == NULL && strstr(err.msg, "exists"),
          "record: an existing file is refused: %s", err.msg);

    r = record_open(rec2, NULL, &err);
    events(r, 3);
    record_close(r, NULL, &err);
    record_check(rec2, NULL, NULL, NULL, &v);
    CHECK(v.status == FB_REC_UNTRUSTED && v.lines == 5, "record: unsigned, 5 lines: %s", v.msg);
    edit(rec2, flip_third_line);
    record_check(rec2, NULL, NULL, NULL, &v);
    CHECK(v.status == FB_REC_TAMPERED && strstr(v.msg, "line 4:"), "record: a changed byte: %s",
          v.msg);

    edit(rec, cut_last_line);
    record_check(rec, k, NULL, NULL, &v);
    CHECK(v.status == FB_REC_CUT && v.signed_upto > 0, "record: the end cut: %s", v.msg);

    EVP_PKEY_free(k);
    unlink(key);
    unlink(rec);
    unlink(rec2);
    rmdir(dir);
}
