/* oci_schema.c — the JSON types of the OCI runtime spec, checked before
 * anything is read from it.
 *
 * runc decodes config.json into typed Go structures, so a field of the
 * wrong type ("memory": {"limit": "lots"}, "terminal": "yes") fails create
 * with one line. This file gives fluebox the same strictness: a table of the
 * spec's fields (the runtime spec 1.x, Linux) with their types, walked over
 * the document; the first field of the wrong type is named by its path
 * ("linux.resources.memory.limit: expected an integer, not a string").
 * Fields the table does not know are left alone, as runc leaves them; null
 * stands for "not set", as in Go. Besides types it refuses what no valid
 * spec holds and what could not be kept: a control character in cwd (a
 * path the shim and the state file would carry broken), and annotations
 * larger than OCI_ANNOTATIONS_MAX (they are kept in the state). */
#include "oci.h"

#include <string.h>

enum kind {
    K_ANY,
    K_STR,
    K_BOOL,
    K_INT,   /* any integer (int64) */
    K_UINT,  /* an integer >= 0; above INT64_MAX arrives as -1 (big_ints) */
    K_U32,   /* 0..UINT32_MAX */
    K_OBJ,   /* an object whose fields are in sub */
    K_ARR,   /* an array whose elements are elem */
    K_MAPSTR /* an object of strings (annotations, sysctl, unified) */
};

struct field {
    const char *name;
    enum kind kind;
    const struct field *sub;   /* K_OBJ: its fields; K_ARR of K_OBJ: the elements' fields */
    enum kind elem;            /* K_ARR: the elements' kind */
};

#define END {NULL, K_ANY, NULL, K_ANY}

static const struct field idmap[] = {
    {"containerID", K_U32, NULL, 0}, {"hostID", K_U32, NULL, 0}, {"size", K_U32, NULL, 0}, END};
static const struct field user[] = {
    {"uid", K_U32, NULL, 0},      {"gid", K_U32, NULL, 0},
    {"umask", K_U32, NULL, 0},    {"additionalGids", K_ARR, NULL, K_U32},
    {"username", K_STR, NULL, 0}, END};
static const struct field console[] = {
    {"height", K_U32, NULL, 0}, {"width", K_U32, NULL, 0}, END};
static const struct field caps[] = {
    {"bounding", K_ARR, NULL, K_STR},  {"effective", K_ARR, NULL, K_STR},
    {"inheritable", K_ARR, NULL, K_STR}, {"permitted", K_ARR, NULL, K_STR},
    {"ambient", K_ARR, NULL, K_STR},   END};
static const struct field rlimit[] = {
    {"type", K_STR, NULL, 0}, {"hard", K_UINT, NULL, 0}, {"soft", K_UINT, NULL, 0}, END};
static const struct field process[] = {
    {"terminal", K_BOOL, NULL, 0},
    {"consoleSize", K_OBJ, console, 0},
    {"user", K_OBJ, user, 0},
    {"args", K_ARR, NULL, K_STR},
    {"commandLine", K_STR, NULL, 0},
    {"env", K_ARR, NULL, K_STR},
    {"cwd", K_STR, NULL, 0},
    {"capabilities", K_OBJ, caps, 0},
    {"rlimits", K_ARR, rlimit, K_OBJ},
    {"noNewPrivileges", K_BOOL, NULL, 0},
    {"apparmorProfile", K_STR, NULL, 0},
    {"oomScoreAdj", K_INT, NULL, 0},
    {"selinuxLabel", K_STR, NULL, 0},
    END};
static const struct field root[] = {{"path", K_STR, NULL, 0}, {"readonly", K_BOOL, NULL, 0}, END};
static const struct field mount[] = {
    {"destination", K_STR, NULL, 0},      {"type", K_STR, NULL, 0},
    {"source", K_STR, NULL, 0},           {"options", K_ARR, NULL, K_STR},
    {"uidMappings", K_ARR, idmap, K_OBJ}, {"gidMappings", K_ARR, idmap, K_OBJ},
    END};
static const struct field hook[] = {
    {"path", K_STR, NULL, 0}, {"args", K_ARR, NULL, K_STR},
    {"env", K_ARR, NULL, K_STR}, {"timeout", K_INT, NULL, 0}, END};
static const struct field hooks[] = {
    {"prestart", K_ARR, hook, K_OBJ},        {"createRuntime", K_ARR, hook, K_OBJ},
    {"createContainer", K_ARR, hook, K_OBJ}, {"startContainer", K_ARR, hook, K_OBJ},
    {"poststart", K_ARR, hook, K_OBJ},       {"poststop", K_ARR, hook, K_OBJ},
    END};
static const struct field ns[] = {{"type", K_STR, NULL, 0}, {"path", K_STR, NULL, 0}, END};
static const struct field device[] = {
    {"type", K_STR, NULL, 0},  {"path", K_STR, NULL, 0},     {"major", K_INT, NULL, 0},
    {"minor", K_INT, NULL, 0}, {"fileMode", K_U32, NULL, 0}, {"uid", K_U32, NULL, 0},
    {"gid", K_U32, NULL, 0},   END};
static const struct field devrule[] = {
    {"allow", K_BOOL, NULL, 0}, {"type", K_STR, NULL, 0}, {"major", K_INT, NULL, 0},
    {"minor", K_INT, NULL, 0},  {"access", K_STR, NULL, 0}, END};
static const struct field memory[] = {
    {"limit", K_INT, NULL, 0},          {"reservation", K_INT, NULL, 0},
    {"swap", K_INT, NULL, 0},           {"kernel", K_INT, NULL, 0},
    {"kernelTCP", K_INT, NULL, 0},      {"swappiness", K_UINT, NULL, 0},
    {"disableOOMKiller", K_BOOL, NULL, 0}, {"useHierarchy", K_BOOL, NULL, 0},
    {"checkBeforeUpdate", K_BOOL, NULL, 0}, END};
static const struct field cpu[] = {
    {"shares", K_UINT, NULL, 0},         {"quota", K_INT, NULL, 0},
    {"burst", K_UINT, NULL, 0},          {"period", K_UINT, NULL, 0},
    {"realtimeRuntime", K_INT, NULL, 0}, {"realtimePeriod", K_UINT, NULL, 0},
    {"cpus", K_STR, NULL, 0},            {"mems", K_STR, NULL, 0},
    {"idle", K_INT, NULL, 0},            END};
static const struct field pids[] = {{"limit", K_INT, NULL, 0}, END};
static const struct field hugepage[] = {
    {"pageSize", K_STR, NULL, 0}, {"limit", K_UINT, NULL, 0}, END};
static const struct field resources[] = {
    {"devices", K_ARR, devrule, K_OBJ}, {"memory", K_OBJ, memory, 0},
    {"cpu", K_OBJ, cpu, 0},             {"pids", K_OBJ, pids, 0},
    {"blockIO", K_OBJ, NULL, 0},        {"hugepageLimits", K_ARR, hugepage, K_OBJ},
    {"network", K_OBJ, NULL, 0},        {"rdma", K_OBJ, NULL, 0},
    {"unified", K_MAPSTR, NULL, 0},     END};
static const struct field scarg[] = {
    {"index", K_U32, NULL, 0}, {"value", K_UINT, NULL, 0},
    {"valueTwo", K_UINT, NULL, 0}, {"op", K_STR, NULL, 0}, END};
static const struct field syscall_rule[] = {
    {"names", K_ARR, NULL, K_STR},  {"action", K_STR, NULL, 0},
    {"errnoRet", K_U32, NULL, 0},   {"args", K_ARR, scarg, K_OBJ}, END};
static const struct field seccomp[] = {
    {"defaultAction", K_STR, NULL, 0},    {"defaultErrnoRet", K_U32, NULL, 0},
    {"architectures", K_ARR, NULL, K_STR}, {"flags", K_ARR, NULL, K_STR},
    {"listenerPath", K_STR, NULL, 0},     {"listenerMetadata", K_STR, NULL, 0},
    {"syscalls", K_ARR, syscall_rule, K_OBJ}, END};
static const struct field linux_[] = {
    {"namespaces", K_ARR, ns, K_OBJ},        {"uidMappings", K_ARR, idmap, K_OBJ},
    {"gidMappings", K_ARR, idmap, K_OBJ},    {"devices", K_ARR, device, K_OBJ},
    {"cgroupsPath", K_STR, NULL, 0},         {"resources", K_OBJ, resources, 0},
    {"sysctl", K_MAPSTR, NULL, 0},           {"seccomp", K_OBJ, seccomp, 0},
    {"rootfsPropagation", K_STR, NULL, 0},   {"maskedPaths", K_ARR, NULL, K_STR},
    {"readonlyPaths", K_ARR, NULL, K_STR},   {"mountLabel", K_STR, NULL, 0},
    {"intelRdt", K_OBJ, NULL, 0},            {"personality", K_OBJ, NULL, 0},
    END};
/* process is checked by oci_schema_process (exec's process.json too). */
static const struct field spec[] = {
    {"ociVersion", K_STR, NULL, 0},  {"root", K_OBJ, root, 0},
    {"hostname", K_STR, NULL, 0},    {"domainname", K_STR, NULL, 0},
    {"mounts", K_ARR, mount, K_OBJ}, {"hooks", K_OBJ, hooks, 0},
    {"annotations", K_MAPSTR, NULL, 0}, {"linux", K_OBJ, linux_, 0},
    END};

static const char *type_name(json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return json_integer_value(v) < 0 ? "a negative integer" : "an integer";
    case JSON_REAL: return "a fraction";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

static const char *kind_name(enum kind k)
{
    switch (k) {
    case K_STR: return "a string";
    case K_BOOL: return "true or false";
    case K_INT: return "an integer";
    case K_UINT: return "an integer of 0 or more";
    case K_U32: return "an integer of 0 to 4294967295";
    case K_OBJ: return "an object";
    case K_ARR: return "an array";
    case K_MAPSTR: return "an object of strings";
    case K_ANY: break;
    }
    return "anything";
}

static bool kind_ok(json_t *v, enum kind k)
{
    switch (k) {
    case K_ANY: return true;
    case K_STR: return json_is_string(v);
    case K_BOOL: return json_is_boolean(v);
    case K_INT: return json_is_integer(v);
    case K_UINT: return json_is_integer(v) && json_integer_value(v) >= -1;
    case K_U32:
        return json_is_integer(v) && json_integer_value(v) >= 0 &&
               json_integer_value(v) <= (json_int_t)UINT32_MAX;
    case K_OBJ:
    case K_MAPSTR: return json_is_object(v);
    case K_ARR: return json_is_array(v);
    }
    return false;
}

static int check(json_t *v, enum kind k, const struct field *sub, enum kind elem,
                 const char *path, struct fb_err *err);

static int check_fields(json_t *o, const struct field *f, const char *path, struct fb_err *err)
{
    for (; f && f->name; f++) {
        json_t *v = json_object_get(o, f->name);
        if (!v || json_is_null(v))
            continue;
        char p[256];
        snprintf(p, sizeof p, "%s%s%s", path, *path ? "." : "", f->name);
        if (check(v, f->kind, f->sub, f->elem, p, err) < 0)
            return -1;
    }
    return 0;
}

static int check(json_t *v, enum kind k, const struct field *sub, enum kind elem,
                 const char *path, struct fb_err *err)
{
    if (!kind_ok(v, k))
        return fb_errf(err, FB_EXIT_SETUP, "%s: expected %s, not %s", path, kind_name(k),
                       type_name(v));
    if (k == K_OBJ)
        return check_fields(v, sub, path, err);
    if (k == K_MAPSTR) {
        const char *key;
        json_t *e;
        json_object_foreach(v, key, e) {
            if (!json_is_string(e))
                return fb_errf(err, FB_EXIT_SETUP, "%s.%s: expected a string, not %s", path,
                               key, type_name(e));
        }
        return 0;
    }
    if (k == K_ARR) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            char p[256];
            snprintf(p, sizeof p, "%s[%zu]", path, i);
            if (check(json_array_get(v, i), elem, sub, K_ANY, p, err) < 0)
                return -1;
        }
    }
    return 0;
}

static bool has_control(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return true;
    return false;
}

int oci_schema_process(json_t *j, const char *where, struct fb_err *err)
{
    if (!json_is_object(j))
        return fb_errf(err, FB_EXIT_SETUP, "%s: expected an object, not %s", where,
                       type_name(j));
    if (check_fields(j, process, where, err) < 0)
        return -1;
    const char *cwd = json_string_value(json_object_get(j, "cwd"));
    if (cwd && has_control(cwd))
        return fb_errf(err, FB_EXIT_SETUP, "%s.cwd: a control character (such as a newline) "
                       "in the path", where);
    return 0;
}

int oci_schema_spec(json_t *j, struct fb_err *err)
{
    if (!json_is_object(j))
        return fb_errf(err, FB_EXIT_SETUP, "config.json: expected an object, not %s",
                       type_name(j));
    if (check_fields(j, spec, "", err) < 0)
        return -1;
    json_t *ann = json_object_get(j, "annotations");
    size_t total = 0;
    const char *key;
    json_t *v;
    json_object_foreach(ann, key, v) {
        total += strlen(key) + json_string_length(v);
    }
    if (total > OCI_ANNOTATIONS_MAX)
        return fb_errf(err, FB_EXIT_SETUP, "annotations: %zu bytes, more than the %d KiB "
                       "fluebox keeps", total, OCI_ANNOTATIONS_MAX / 1024);
    return 0;
}
