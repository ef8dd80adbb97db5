/* oci_seccomp.c — the spec's linux.seccomp, compiled with libseccomp into a
 * filter of its own. It is loaded after fluebox's two filters (the fixed
 * rules and the profile's, seccomp.h), so it can only take more away: the
 * kernel runs every filter and the strictest answer wins. Syscall names
 * libseccomp does not know are skipped, as runc skips them; a rule whose
 * action is the default is redundant and skipped too. */
#include "oci.h"

#include <seccomp.h>
#include <string.h>
#include <sys/mman.h>

static int action_of(const char *a, json_t *errno_ret, uint32_t *out, struct fb_err *err)
{
    uint16_t e = json_is_integer(errno_ret) ? (uint16_t)json_integer_value(errno_ret) : EPERM;
    if (!a)
        return fb_errf(err, FB_EXIT_SETUP, "linux.seccomp: an action is missing");
    if (!strcmp(a, "SCMP_ACT_ALLOW"))
        *out = SCMP_ACT_ALLOW;
    else if (!strcmp(a, "SCMP_ACT_ERRNO"))
        *out = SCMP_ACT_ERRNO(e);
    else if (!strcmp(a, "SCMP_ACT_KILL") || !strcmp(a, "SCMP_ACT_KILL_THREAD"))
        *out = SCMP_ACT_KILL_THREAD;
    else if (!strcmp(a, "SCMP_ACT_KILL_PROCESS"))
        *out = SCMP_ACT_KILL_PROCESS;
    else if (!strcmp(a, "SCMP_ACT_TRAP"))
        *out = SCMP_ACT_TRAP;
    else if (!strcmp(a, "SCMP_ACT_TRACE"))
        *out = SCMP_ACT_TRACE(e);
    else if (!strcmp(a, "SCMP_ACT_LOG"))
        *out = SCMP_ACT_LOG;
    else if (!strcmp(a, "SCMP_ACT_NOTIFY"))
        return fb_errf(err, FB_EXIT_SETUP, "linux.seccomp: SCMP_ACT_NOTIFY (a seccomp agent) "
                       "is not supported");
    else
        return fb_errf(err, FB_EXIT_SETUP, "linux.seccomp: unknown action \"%s\"", a);
    return 0;
}

static int op_of(const char *o, enum scmp_compare *out)
{
    static const struct {
        const char *n;
        enum scmp_compare c;
    } ops[] = {{"SCMP_CMP_NE", SCMP_CMP_NE}, {"SCMP_CMP_LT", SCMP_CMP_LT},
               {"SCMP_CMP_LE", SCMP_CMP_LE}, {"SCMP_CMP_EQ", SCMP_CMP_EQ},
               {"SCMP_CMP_GE", SCMP_CMP_GE}, {"SCMP_CMP_GT", SCMP_CMP_GT},
               {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ}};
    for (size_t i = 0; o && i < FB_ARRAY_LEN(ops); i++)
        if (!strcmp(o, ops[i].n)) {
            *out = ops[i].c;
            return 0;
        }
    return -1;
}

static uint64_t u64(json_t *j)
{
    if (json_is_integer(j))
        return (uint64_t)json_integer_value(j);
    if (json_is_real(j))
        return (uint64_t)json_real_value(j);
    return 0;
}

static int add_arch(scmp_filter_ctx ctx, json_t *archs, struct fb_err *err)
{
    for (size_t i = 0; json_is_array(archs) && i < json_array_size(archs); i++) {
        const char *a = json_string_value(json_array_get(archs, i));
        if (!a || strncmp(a, "SCMP_ARCH_", 10))
            return fb_errf(err, FB_EXIT_SETUP, "linux.seccomp.architectures[%zu]: unknown", i);
        char lower[32];
        size_t k = 0;
        for (const char *s = a + 10; *s && k < sizeof lower - 1; s++)
            lower[k++] = (char)(*s >= 'A' && *s <= 'Z' ? *s + 32 : *s);
        lower[k] = 0;
        uint32_t token = seccomp_arch_resolve_name(lower);
        if (!token)
            continue; /* an architecture libseccomp does not know here */
        int rc = seccomp_arch_add(ctx, token);
        if (rc < 0 && rc != -EEXIST)
            continue; /* not one this machine runs */
    }
    return 0;
}

/* One rule: conditions on distinct arguments are ANDed in one rule; a
 * second condition on the same argument makes a rule of its own (OR), as
 * runc does. */
static int add_rule(scmp_filter_ctx ctx, uint32_t act, int nr, json_t *args, size_t idx,
                    const char *name, struct fb_err *err)
{
    struct scmp_arg_cmp cmp[6];
    unsigned n = 0;
    size_t nargs = json_is_array(args) ? json_array_size(args) : 0;
    bool dup = false;
    for (size_t i = 0; i < nargs; i++) {
        json_t *a = json_array_get(args, i);
        enum scmp_compare op;
        json_t *ji = json_object_get(a, "index");
        if (!json_is_integer(ji) || json_integer_value(ji) < 0 || json_integer_value(ji) > 5 ||
            op_of(json_string_value(json_object_get(a, "op")), &op) < 0)
            return fb_errf(err, FB_EXIT_SETUP, "linux.seccomp.syscalls[%zu].args[%zu]: bad index "
                           "or op", idx, i);
        unsigned index = (unsigned)json_integer_value(ji);
        for (unsigned k = 0; k < n; k++)
            dup |= cmp[k].arg == index;
        if (n < 6) {
            cmp[n].arg = index;
            cmp[n].op = op;
            cmp[n].datum_a = u64(json_object_get(a, "value"));
            cmp[n].datum_b = u64(json_object_get(a, "valueTwo"));
            n++;
        }
    }
    int rc;
    if (!dup) {
        rc = seccomp_rule_add_array(ctx, act, nr, n, cmp);
    } else {
        rc = 0;
        for (unsigned k = 0; k < n && rc == 0; k++)
            rc = seccomp_rule_add_array(ctx, act, nr, 1, &cmp[k]);
    }
    if (rc < 0 && rc != -EACCES)
        return fb_errf(err, FB_EXIT_SETUP, "linux.seccomp.syscalls[%zu] (%s): %s", idx, name,
                       strerror(-rc));
    return 0;
}

int oci_seccomp_filter(json_t *sc, struct fb_err *err)
{
    if (!json_is_object(sc))
        return -2;
    uint32_t dflt;
    if (action_of(json_string_value(json_object_get(sc, "defaultAction")),
                  json_object_get(sc, "defaultErrnoRet"), &dflt, err) < 0)
        return -1;
    const char *lp = json_string_value(json_object_get(sc, "listenerPath"));
    if (lp && *lp)
        return fb_errf(err, FB_EXIT_SETUP, "linux.seccomp.listenerPath: seccomp agents are not "
                       "supported");
    scmp_filter_ctx ctx = seccomp_init(dflt);
    if (!ctx)
        return fb_errf(err, FB_EXIT_SETUP, "linux.seccomp: libseccomp could not start");
    int fd = -1;
    /* fluebox sets no_new_privs itself; the filter must not. */
    seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
    if (add_arch(ctx, json_object_get(sc, "architectures"), err) < 0)
        goto out;
    json_t *calls = json_object_get(sc, "syscalls");
    for (size_t i = 0; json_is_array(calls) && i < json_array_size(calls); i++) {
        json_t *r = json_array_get(calls, i);
        uint32_t act;
        if (action_of(json_string_value(json_object_get(r, "action")),
                      json_object_get(r, "errnoRet"), &act, err) < 0)
            goto out;
        if (act == dflt)
            continue;
        json_t *names = json_object_get(r, "names");
        json_t *one = json_object_get(r, "name");
        size_t nn = json_is_array(names) ? json_array_size(names) : (json_is_string(one) ? 1 : 0);
        for (size_t k = 0; k < nn; k++) {
            const char *name = json_is_array(names) ? json_string_value(json_array_get(names, k))
                                                    : json_string_value(one);
            int nr = name ? seccomp_syscall_resolve_name(name) : __NR_SCMP_ERROR;
            if (nr == __NR_SCMP_ERROR)
                continue;
            if (add_rule(ctx, act, nr, json_object_get(r, "args"), i, name, err) < 0)
                goto out;
        }
    }
    fd = memfd_create("fluebox-oci-seccomp", MFD_CLOEXEC);
    if (fd < 0) {
        fb_errno(err, FB_EXIT_SETUP, "linux.seccomp: memfd_create");
        goto out;
    }
    int rc = seccomp_export_bpf(ctx, fd);
    if (rc < 0) {
        close(fd);
        fd = -1;
        fb_errf(err, FB_EXIT_SETUP, "linux.seccomp: generating the filter: %s", strerror(-rc));
    }
out:
    seccomp_release(ctx);
    return fd;
}
