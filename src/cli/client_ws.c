/* client_ws.c — the session subcommands beyond create/rm/ls/info
 * (docs/server.md):
 *   fluebox session publish [--any-uid] [--allow-host NAME]... ID [HOSTPORT:]PORT
 *                                                   prints the URL
 *   fluebox session unpublish ID PORT
 *   fluebox session diff [--json] ID [PATH...]     the patch (or the JSON)
 *   fluebox session commit [--force] [--json] ID [PATH...]
 *   fluebox session reset ID
 *   fluebox session fork [--label L] [--json] ID   prints the new session's id
 *   fluebox session snapshot ID NAME | restore ID NAME
 *   fluebox session grant [--ttl DURATION] ID allow-net|allow-http|secret SPEC
 *   fluebox session revoke ID allow-net|allow-http|secret SPEC
 * Each is one request of the protocol (session.publish, workspace.diff,
 * ...); errors are one line on stderr and exit status 125. */
#include "client.h"
#include "sess_sandbox.h"

#include <string.h>

static int set_label(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    ((struct copts *)ctx)->label = v;
    return 0;
}

static int set_ttl(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    if (fb_parse_duration_ms(v, &((struct copts *)ctx)->ttl) < 0 || ((struct copts *)ctx)->ttl <= 0)
        return fb_errf(err, FB_EXIT_SETUP, "--ttl %s: expected a duration such as 10m", v);
    return 0;
}

static int set_flag(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    struct copts *co = ctx;
    if (!strcmp(o->name, "any-uid"))
        co->any_uid = true;
    else if (!strcmp(o->name, "force"))
        co->force = true;
    return 0;
}

int set_allow_host(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    struct copts *co = ctx;
    if (!co->allow_hosts)
        co->allow_hosts = json_array();
    json_array_append_new(co->allow_hosts, json_string(v));
    return 0;
}

int set_publish(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    struct copts *co = ctx;
    const char *colon = strchr(v, ':');
    uint64_t a = 0, b;
    cleanup_free char *h = colon ? fb_xstrndup(v, (size_t)(colon - v)) : NULL;
    if ((colon && (fb_parse_u64(h, &a) < 0 || a > 65535)) || fb_parse_u64(colon ? colon + 1 : v, &b) < 0 ||
        b < 1 || b > 65535)
        return fb_errf(err, FB_EXIT_SETUP, "--%s %s: expected [HOSTPORT:]PORT (ports 1 to 65535)",
                       o->name, v);
    if (!co->publish)
        co->publish = json_array();
    json_array_append_new(co->publish, json_pack("{s:I, s:I}", "port", (json_int_t)b, "hostPort", (json_int_t)a));
    return 0;
}

void publish_add_hosts(struct copts *co)
{
    size_t i;
    json_t *v;
    if (!co->allow_hosts || !co->publish)
        return;
    json_array_foreach(co->publish, i, v)
        json_object_set(v, "hosts", co->allow_hosts);
}

const struct fb_opt ws_opts[] = {
    SOCKET_OPT,
    {"json", 0, FB_ARG_NONE, NULL, FB_OPT_ANY, set_json, "print the server's JSON answer", NULL},
    {"any-uid", 0, FB_ARG_NONE, NULL, FB_OPT_ANY, set_flag,
     "publish: let every local user connect, not only the session's owner", NULL},
    ALLOW_HOST_OPT,
    {"force", 0, FB_ARG_NONE, NULL, FB_OPT_ANY, set_flag,
     "commit: apply even with conflicts", NULL},
    {"label", 0, FB_ARG_VALUE, "TEXT", FB_OPT_ANY, set_label,
     "fork: the new session's label (default: the original's)", NULL},
    {"ttl", 0, FB_ARG_VALUE, "DURATION", FB_OPT_ANY, set_ttl,
     "grant: it lapses after this long (default: it stays until revoked)", NULL},
};
const size_t ws_opts_n = FB_ARRAY_LEN(ws_opts);

struct sub {
    const char *name, *args, *help;
    int min, max; /* operands after the id: -1 = any */
};

static const struct sub subs[] = {
    {"publish", "ID [HOSTPORT:]PORT",
     "Relays 127.0.0.1:HOSTPORT on the host (a free port unless given) to PORT inside the\n"
     "session, and prints the URL. Only the session's owner may connect unless --any-uid.\n"
     "With --allow-host NAME (repeatable) only HTTP requests whose Host names NAME are\n"
     "relayed (against DNS rebinding; *.NAME: every name below NAME).",
     1, 1},
    {"unpublish", "ID PORT", "Closes the host listener of PORT and its connections.", 1, 1},
    {"diff", "ID [PATH...]",
     "Prints what the session changed in its copy-on-write workspace, as a patch that\n"
     "`git apply` accepts (--json: the list of changes with their diffs).",
     0, -1},
    {"commit", "ID [PATH...]",
     "Applies the session's workspace changes (all, or those under PATHs) to the host\n"
     "directory; nothing is applied when one conflicts with a change made on the host.",
     0, -1},
    {"reset", "ID", "Discards every change of the session's copy-on-write workspace.", 0, 0},
    {"fork", "ID",
     "Makes a new session of the same parameters whose workspace layer (the copy-on-write\n"
     "layer, or a tmpfs /workspace), home and /tmp start as copies of this one's, and\n"
     "prints its id. Running processes are not copied: the fork starts with none.",
     0, 0},
    {"snapshot", "ID NAME",
     "Saves the session's copy-on-write layer (what it changed) as NAME (replacing an\n"
     "earlier NAME); it counts against the session's --disk and goes with it.",
     1, 1},
    {"restore", "ID NAME",
     "Puts the session's workspace back as it was at snapshot NAME (commands already\n"
     "running keep the files they have open).",
     1, 1},
    {"grant", "ID allow-net|allow-http|secret SPEC",
     "Adds to the running session's network rules (docs/secrets.md): an allowed name\n"
     "(as --allow-net), an HTTP rule (as --allow-http) or a secret NAME:HOSTS whose value\n"
     "is read here from the environment variable NAME (or NAME=@FILE:HOSTS); a secret\n"
     "new to the session prints its stand-in. --ttl: it lapses after that long.",
     2, 2},
    {"revoke", "ID allow-net|allow-http|secret SPEC",
     "Takes back a grant, or a rule the session was created with (secret NAME: all of it).",
     2, 2},
};

/* session grant/revoke's params: kind, spec and, for a secret granted,
 * its value, read here (our environment variable NAME, or FILE). 0, or -1
 * with err. */
static int grant_params(json_t *params, bool grant, int64_t ttl, char **args, struct fb_err *err)
{
    static const char *const kinds[][2] = {
        {"allow-net", "allowNet"}, {"allow-http", "allowHttp"}, {"secret", "secret"}};
    size_t k = 0;
    while (k < FB_ARRAY_LEN(kinds) && strcmp(kinds[k][0], args[0]))
        k++;
    if (k == FB_ARRAY_LEN(kinds))
        return fb_errf(err, FB_EXIT_SETUP, "expected allow-net, allow-http or secret, not %s",
                       args[0]);
    json_object_set_new(params, "kind", json_string(kinds[k][1]));
    if (ttl > 0)
        json_object_set_new(params, "ttlMs", json_integer(ttl));
    if (strcmp(args[0], "secret")) {
        json_object_set_new(params, "spec", json_string(args[1]));
        return 0;
    }
    size_t nl = strcspn(args[1], ":=");
    cleanup_free char *name = fb_xstrndup(args[1], nl);
    bool file = args[1][nl] == '=';
    if (!grant) {
        /* Revoke: the spec without a file, no value. */
        const char *rest = file ? strchr(args[1] + nl, ':') : args[1] + nl;
        cleanup_free char *spec = fb_xasprintf("%s%s", name, rest ? rest : "");
        json_object_set_new(params, "spec", json_string(spec));
        return 0;
    }
    json_t *one = cli_secret_json(args[1], err);
    if (!one)
        return -1;
    json_t *hosts = json_object_get(one, "hosts"), *h;
    size_t i;
    cleanup_free char *spec = fb_xasprintf("%s:", name);
    json_array_foreach(hosts, i, h)
    {
        char *more = fb_xasprintf("%s%s%s", spec, i ? "," : "", json_string_value(h));
        free(spec);
        spec = more;
    }
    json_object_set_new(params, "spec", json_string(spec));
    json_t *v = json_object_get(one, "value");
    json_object_set_new(params, "value", json_stringn(json_string_value(v), json_string_length(v)));
    sess_secrets_wipe(one);
    json_decref(one);
    return 0;
}

static json_t *paths_of(int argc, char **argv)
{
    json_t *a = json_array();
    for (int i = 0; i < argc; i++)
        json_array_append_new(a, json_string(argv[i]));
    return a;
}

/* Print a patch result (text or base64) on stdout. */
static int print_patch(json_t *res)
{
    json_t *p = json_object_get(res, "patch");
    const char *enc = json_string_value(json_object_get(res, "encoding"));
    if (!json_is_string(p))
        return 0;
    if (enc && !strcmp(enc, "base64"))
        return write_decoded(1, json_string_value(p), json_string_length(p));
    return fb_write_all(1, json_string_value(p), json_string_length(p));
}

/* commit's answer: a summary, and each conflict on stderr as `fluebox run
 * --commit` says them. 0 when committed. */
static int report_commit(json_t *res)
{
    json_t *conf = json_object_get(res, "conflicts"), *it;
    size_t i;
    json_array_foreach(conf, i, it)
    fb_warn("conflict: %s: %s", json_string_value(json_object_get(it, "path")),
            json_string_value(json_object_get(it, "reason")));
    long long applied = (long long)json_integer_value(json_object_get(res, "applied"));
    if (json_is_true(json_object_get(res, "committed"))) {
        printf("committed %lld change%s\n", applied, applied == 1 ? "" : "s");
        return 0;
    }
    const char *why = json_string_value(json_object_get(res, "reason"));
    const char *er = json_string_value(json_object_get(res, "error"));
    fb_warn("commit: %s%s%s", why ? why : "nothing was committed", er ? ": " : "", er ? er : "");
    return FB_EXIT_SETUP;
}

int client_session_more(int argc, char **argv)
{
    const struct sub *sb = NULL;
    for (size_t i = 0; i < FB_ARRAY_LEN(subs); i++)
        if (!strcmp(argv[0], subs[i].name))
            sb = &subs[i];
    if (!sb)
        return -1;
    char cmd[32], usage[512];
    snprintf(cmd, sizeof cmd, "session %s", sb->name);
    snprintf(usage, sizeof usage, "Usage: fluebox session %s [OPTIONS] %s\n%s\n\n", sb->name,
             sb->args, sb->help);
    struct copts co = {0};
    struct fb_parsed parsed;
    int r = client_opts(cmd, usage, ws_opts, FB_ARRAY_LEN(ws_opts), &co, argc - 1, argv + 1,
                        FB_PARSE_PERMUTE, &parsed);
    if (r)
        return r > 0 ? 0 : FB_EXIT_SETUP;
    int n = (int)parsed.nargs - 1;
    char **args = parsed.args + 1;
    if (n < sb->min || (sb->max >= 0 && n > sb->max)) {
        fb_warn("session %s: expected %s (see fluebox session %s --help)", sb->name, sb->args,
                sb->name);
        opt_parsed_free(&parsed);
        return FB_EXIT_SETUP;
    }
    const char *sid = parsed.args[0];
    struct fb_err err = {0};
    json_t *params = json_pack("{s:s}", "session", sid);
    const char *method = NULL;
    if (!strcmp(sb->name, "publish") || !strcmp(sb->name, "unpublish")) {
        struct copts pc = {0};
        struct fb_opt o = {.name = "publish"};
        if (set_publish(&pc, &o, args[0], &err) < 0 ||
            (!strcmp(sb->name, "unpublish") && strchr(args[0], ':'))) {
            if (!err.msg[0])
                fb_errf(&err, FB_EXIT_SETUP, "session unpublish: expected a port number, not %s", args[0]);
            fb_warn("session %s: %s", sb->name, err.msg);
            json_decref(params);
            json_decref(pc.publish);
            json_decref(co.allow_hosts);
            opt_parsed_free(&parsed);
            return FB_EXIT_SETUP;
        }
        json_object_update(params, json_array_get(pc.publish, 0));
        json_decref(pc.publish);
        if (!strcmp(sb->name, "publish")) {
            method = "session.publish";
            json_object_set_new(params, "anyUid", json_boolean(co.any_uid));
            if (co.allow_hosts)
                json_object_set(params, "hosts", co.allow_hosts);
        } else {
            method = "session.unpublish";
            json_object_del(params, "hostPort");
        }
    } else if (!strcmp(sb->name, "diff")) {
        method = "workspace.diff";
        json_object_set_new(params, "format", json_string(co.json ? "json" : "patch"));
    } else if (!strcmp(sb->name, "commit")) {
        method = "workspace.commit";
        json_object_set_new(params, "force", json_boolean(co.force));
    } else if (!strcmp(sb->name, "fork")) {
        method = "session.fork";
        if (co.label)
            json_object_set_new(params, "label", json_string(co.label));
    } else if (!strcmp(sb->name, "grant") || !strcmp(sb->name, "revoke")) {
        method = !strcmp(sb->name, "grant") ? "session.grant" : "session.revoke";
        if (grant_params(params, method[8] == 'g', co.ttl, args, &err) < 0) {
            fb_warn("session %s: %s", sb->name, err.msg);
            json_decref(params);
            opt_parsed_free(&parsed);
            return FB_EXIT_SETUP;
        }
    } else if (!strcmp(sb->name, "snapshot") || !strcmp(sb->name, "restore")) {
        method = !strcmp(sb->name, "snapshot") ? "session.snapshot" : "session.restore";
        json_object_set_new(params, "name", json_string(args[0]));
    } else {
        method = "workspace.reset";
    }
    if (n > 0 && (!strcmp(sb->name, "diff") || !strcmp(sb->name, "commit")))
        json_object_set_new(params, "paths", paths_of(n, args));
    opt_parsed_free(&parsed);
    if (co.allow_hosts && strcmp(sb->name, "publish")) {
        json_decref(co.allow_hosts);
        json_decref(params);
        fb_warn("session %s: --allow-host is an option of session publish", sb->name);
        return FB_EXIT_SETUP;
    }
    json_decref(co.allow_hosts);
    struct cli c;
    if (cli_connect(&c, co.sock, &err) < 0) {
        json_decref(params);
        fb_warn("%s", err.msg);
        return FB_EXIT_SETUP;
    }
    json_t *res = cli_call(&c, method, params, &err);
    cli_close(&c);
    if (!res) {
        fb_warn("%s", err.msg);
        return FB_EXIT_SETUP;
    }
    int rc = 0;
    if (co.json) {
        print_json(res);
        if (!strcmp(sb->name, "commit") && !json_is_true(json_object_get(res, "committed")))
            rc = FB_EXIT_SETUP;
    } else if (!strcmp(sb->name, "commit"))
        rc = report_commit(res);
    else if (!strcmp(sb->name, "publish"))
        puts(json_string_value(json_object_get(res, "url")));
    else if (!strcmp(sb->name, "fork"))
        puts(json_string_value(json_object_get(res, "session")));
    else if (!strcmp(sb->name, "grant") && json_is_string(json_object_get(res, "standin")))
        puts(json_string_value(json_object_get(res, "standin")));
    else if (!strcmp(sb->name, "diff") && print_patch(res) < 0)
        rc = FB_EXIT_SETUP;
    json_decref(res);
    return rc;
}
