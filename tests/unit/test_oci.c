/* test_oci.c — fluebox oci's pure parts: config.json into struct oci_spec
 * (mount options, capabilities, rlimits, namespaces, hooks), the checks
 * that refuse a bad config with the field's name, container ids, id maps. */
#include "unit.h"

#include "oci.h"

#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>

static char dir[64];

/* Parse text as BUNDLE/config.json; returns 0 or -1 with err. */
static int parse(const char *text, struct oci_spec *s, struct fb_err *err)
{
    char path[128];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    fclose(f);
    return oci_spec_load(dir, NULL, s, err);
}

#define PROC "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\"}"

static void spec_ok(void)
{
    struct oci_spec s;
    struct fb_err err = {0};
    int rc = parse("{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\",\"readonly\":true},"
                   "\"process\":{\"args\":[\"sh\",\"-c\",\"x\"],\"cwd\":\"/w\","
                   "\"user\":{\"uid\":1000,\"gid\":100,\"additionalGids\":[5,6]},"
                   "\"capabilities\":{\"bounding\":[\"CAP_KILL\",\"CAP_CHOWN\"],\"ambient\":[\"CAP_KILL\"]},"
                   "\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"soft\":10,\"hard\":20},"
                   "{\"type\":\"RLIMIT_CORE\",\"soft\":18446744073709551615,\"hard\":18446744073709551615}]},"
                   "\"mounts\":[{\"destination\":\"/d\",\"type\":\"tmpfs\",\"source\":\"tmpfs\","
                   "\"options\":[\"nosuid\",\"ro\",\"mode=755\",\"size=1k\",\"rw\"]},"
                   "{\"destination\":\"/b\",\"source\":\"src\",\"options\":[\"rbind\",\"ro\",\"rprivate\"]}],"
                   "\"hooks\":{\"poststop\":[{\"path\":\"/bin/true\",\"args\":[\"true\"],\"timeout\":3}]},"
                   "\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\",\"path\":\"/proc/1/ns/net\"},"
                   "{\"type\":\"mount\"}],\"cgroupsPath\":\"/a/b\",\"maskedPaths\":[\"/proc/kcore\"]}}",
                   &s, &err);
    CHECK(rc == 0, "oci spec: a full config parses (%s)", err.msg);
    if (rc < 0)
        return;
    char root[128];
    snprintf(root, sizeof root, "%s/rootfs", dir);
    CHECK(s.root && !strcmp(s.root, root) && s.root_ro, "oci spec: root.path made absolute in the bundle");
    CHECK(s.proc.uid == 1000 && s.proc.gid == 100 && s.proc.ngids == 2 && s.proc.gids[1] == 6,
          "oci spec: user and additionalGids");
    CHECK(s.proc.caps_set && s.proc.caps[OCI_CAP_BOUNDING] == ((1ull << 5) | 1ull) &&
              s.proc.caps[OCI_CAP_AMBIENT] == 1ull << 5 && !s.proc.caps[OCI_CAP_EFFECTIVE],
          "oci spec: capability sets by name");
    CHECK(s.proc.nrlimits == 2 && s.proc.rlimits[0].resource == RLIMIT_NOFILE &&
              s.proc.rlimits[0].soft == 10 && s.proc.rlimits[1].hard == UINT64_MAX,
          "oci spec: rlimits, RLIM_INFINITY as read from JSON");
    CHECK(s.nmounts == 2 && !(s.mounts[0].flags & MS_RDONLY) && (s.mounts[0].flags & MS_NOSUID) &&
              !strcmp(s.mounts[0].data, "mode=755,size=1k") && !s.mounts[0].bind,
          "oci spec: mount flags in order (ro then rw), data options kept apart");
    CHECK(s.mounts[1].bind && s.mounts[1].recursive && (s.mounts[1].flags & MS_RDONLY) &&
              s.mounts[1].propagation == (MS_PRIVATE | MS_REC) && s.mounts[1].src[0] == '/',
          "oci spec: an rbind with no type, source made absolute");
    const struct oci_ns *net = oci_spec_ns(&s, CLONE_NEWNET);
    CHECK(net && net->path && !strcmp(net->path, "/proc/1/ns/net") &&
              oci_spec_ns(&s, CLONE_NEWPID) && !oci_spec_ns(&s, CLONE_NEWPID)->path &&
              !oci_spec_ns(&s, CLONE_NEWIPC),
          "oci spec: namespaces, new and joined by path");
    CHECK(s.nhooks[OCI_HOOK_POSTSTOP] == 1 && s.hooks[OCI_HOOK_POSTSTOP][0].timeout == 3,
          "oci spec: hooks");
    CHECK(s.cgroups_path && !strcmp(s.cgroups_path, "/a/b") && s.nmasked == 1,
          "oci spec: cgroupsPath, maskedPaths");
    oci_spec_free(&s);
}

static void spec_bad(void)
{
    static const struct {
        const char *json, *want;
    } cases[] = {
        {"{\"ociVersion\":\"2.0.0\"}", "ociVersion"},
        {"{\"ociVersion\":\"1.0.0\"," PROC "}", "root.path"},
        {"{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"}}", "process is needed"},
        {"{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[]}}",
         "process.args"},
        {"{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"sh\"],"
         "\"cwd\":\"rel\"}}", "must be absolute"},
        {"{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"sh\"],"
         "\"capabilities\":{\"bounding\":[\"CAP_NOPE\"]}}}", "unknown capability \"CAP_NOPE\""},
        {"{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"sh\"],"
         "\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"soft\":2,\"hard\":1}]}}", "soft above hard"},
        {"{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"}," PROC ","
         "\"mounts\":[{\"destination\":\"rel\",\"type\":\"tmpfs\"}]}", "mounts[0].destination"},
        {"{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"}," PROC ","
         "\"mounts\":[{\"destination\":\"/b\",\"options\":[\"bind\"]}]}", "a bind needs a source"},
        {"{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"}," PROC ","
         "\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"pid\"}]}}", "listed twice"},
        {"{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"}," PROC ","
         "\"linux\":{\"namespaces\":[{\"type\":\"nope\"}]}}", "unknown type \"nope\""},
        {"{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"}," PROC ","
         "\"hooks\":{\"prestart\":[{\"path\":\"rel\"}]}}", "hooks.prestart[0].path"},
        {"{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"}," PROC ","
         "\"linux\":{\"devices\":[{\"path\":\"/dev/x\",\"type\":\"z\"}]}}", "linux.devices[0]"},
        {"{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"}", "config.json:"},
    };
    for (size_t i = 0; i < FB_ARRAY_LEN(cases); i++) {
        struct oci_spec s;
        struct fb_err err = {0};
        int rc = parse(cases[i].json, &s, &err);
        CHECK(rc < 0 && strstr(err.msg, cases[i].want), "oci spec: refused, naming %s (%s)",
              cases[i].want, err.msg);
        oci_spec_free(&s);
    }
}

static void ids_and_names(void)
{
    struct fb_err err = {0};
    CHECK(oci_id_check("abc-1_2+3.x", &err) == 0, "oci id: letters, digits and _+-.");
    CHECK(oci_id_check("..", &err) < 0 && oci_id_check("a/b", &err) < 0 &&
              oci_id_check("", &err) < 0,
          "oci id: \"..\", a slash and empty are refused");
    CHECK(oci_cap_number("CAP_SYS_ADMIN") == 21 && oci_cap_number("kill") == 5 &&
              oci_cap_number("CAP_TEST") < 0 && !strcmp(oci_cap_name(13), "CAP_NET_RAW"),
          "oci capabilities: names both ways");
    struct oci_spec s;
    memset(&s, 0, sizeof s);
    char *um = NULL, *gm = NULL;
    int rc = oci_id_maps(&s, 300000, &um, &gm, &err);
    CHECK(rc == 0 && um && !strcmp(um, "0 300000 65536\n") && gm && !strcmp(gm, um),
          "oci ids: 65536 ids from the host base by default");
    free(um);
    free(gm);
    struct oci_idmap zero = {0, 0, 65536}, fine = {0, 100000, 1000};
    s.uidmap = s.gidmap = &zero;
    s.nuidmap = s.ngidmap = 1;
    CHECK(oci_id_maps(&s, 300000, &um, &gm, &err) < 0 && strstr(err.msg, "host root"),
          "oci ids: a spec mapping host id 0 is refused");
    s.uidmap = s.gidmap = &fine;
    rc = oci_id_maps(&s, 300000, &um, &gm, &err);
    CHECK(rc == 0 && um && !strcmp(um, "0 100000 1000\n"), "oci ids: the spec's own mappings");
    free(um);
    free(gm);
    CHECK(oci_id_maps(&s, 0, &um, &gm, &err) == 0, "oci ids: the base matters only without mappings");
    free(um);
    free(gm);
}

void unit_oci(void)
{
    snprintf(dir, sizeof dir, "/tmp/fbunit-oci.XXXXXX");
    if (!mkdtemp(dir)) {
        CHECK(0, "oci: a scratch directory");
        return;
    }
    spec_ok();
    spec_bad();
    ids_and_names();
    char path[128];
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    rmdir(dir);
}
