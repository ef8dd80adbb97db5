/* oci_podnet.c — the egress allowlist for a pod whose network namespace a
 * CNI plugin made, not fluebox (docs/oci.md, "The allowlist in a pod").
 *
 * Under CRI every container of a pod joins the pod's network namespace by
 * path, the pod sandbox ("pause") container first. With run.fluebox.allow-net
 * among the pod's annotations:
 *   owner   the sandbox container (io.kubernetes.cri.container-type, or
 *           CRI-O's io.kubernetes.cri-o.ContainerType, "sandbox"): its
 *           supervisor, host root in the pod's namespace during create,
 *           takes every interface but loopback down (no route out is left,
 *           and nothing in the pod may bring one up: the namespace belongs to
 *           the host's user namespace), adds the synthetic range and binds
 *           the resolver's and the allowed ports' sockets there
 *           (net_setup_pod), then serves them from its event loop in the
 *           host's namespace for the pod's whole life: the relay goes with
 *           the sandbox container;
 *   member  every other container: created only when its pod's sandbox
 *           container (io.kubernetes.cri.sandbox-id) is a fluebox container
 *           of the same root, running, owning this very namespace (by its
 *           identity on nsfs), with the same allowlist annotations; it gets
 *           the resolver in /etc/resolv.conf and nothing else of its own.
 * Anything else (an allowlist on a namespace joined by path outside a pod)
 * is refused. */
#include "oci.h"

#include <sched.h>
#include <string.h>
#include <sys/stat.h>

static const char *ann(const struct oci_spec *s, const char *key)
{
    return json_string_value(json_object_get(s->annotations, key));
}

static bool wants_allowlist(const struct oci_spec *s)
{
    const char *net = ann(s, "run.fluebox.net"), *proxy = ann(s, "run.fluebox.proxy-env");
    return ann(s, "run.fluebox.allow-net") || (net && !strcmp(net, "allow")) ||
           (proxy && (!strcmp(proxy, "true") || !strcmp(proxy, "1")));
}

enum oci_podnet oci_podnet_role(const struct oci_spec *s)
{
    const struct oci_ns *n = oci_spec_ns(s, CLONE_NEWNET);
    if (!n || !n->path || !wants_allowlist(s))
        return OCI_PODNET_NONE;
    const char *t = ann(s, "io.kubernetes.cri.container-type");
    if (!t)
        t = ann(s, "io.kubernetes.cri-o.ContainerType");
    return t && !strcmp(t, "sandbox") ? OCI_PODNET_OWNER : OCI_PODNET_MEMBER;
}

static bool same_ann(json_t *a, const struct oci_spec *s, const char *key)
{
    const char *x = json_string_value(json_object_get(a, key)), *y = ann(s, key);
    return (!x && !y) || (x && y && !strcmp(x, y));
}

int oci_podnet_member_check(const char *root, const struct oci_spec *s, struct fb_err *err)
{
    const char *sid = ann(s, "io.kubernetes.cri.sandbox-id");
    if (!sid)
        sid = ann(s, "io.kubernetes.cri-o.SandboxID");
    const struct oci_ns *n = oci_spec_ns(s, CLONE_NEWNET);
    if (!sid)
        return fb_errf(err, FB_EXIT_SETUP, "run.fluebox.allow-net on a container that joins the "
                       "network namespace %s: only in a pod, whose sandbox container owns the "
                       "relay (no io.kubernetes.cri.sandbox-id annotation)", n->path);
    struct oci_state o;
    struct fb_err e2 = {0};
    if (oci_state_open(root, sid, &o, &e2) < 0)
        return fb_errf(err, FB_EXIT_SETUP, "run.fluebox.allow-net: the pod's sandbox container "
                       "%s is not a fluebox container here (%s)", sid, e2.msg);
    int rc = -1;
    struct stat a, b;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/ns/net", (int)o.pid);
    if (!json_is_true(json_object_get(o.json, "pod_network")))
        fb_errf(err, FB_EXIT_SETUP, "run.fluebox.allow-net: the pod's sandbox container %s "
                "does not own the pod's network (it was created without the allowlist)", sid);
    else if (!oci_pid_alive(o.pid, o.pid_start) || stat(path, &a) < 0)
        fb_errf(err, FB_EXIT_SETUP, "run.fluebox.allow-net: the pod's sandbox container %s is "
                "not running", sid);
    else if (stat(n->path, &b) < 0)
        fb_errno(err, FB_EXIT_SETUP, "linux.namespaces network: %s", n->path);
    else if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
        fb_errf(err, FB_EXIT_SETUP, "run.fluebox.allow-net: %s is not the network namespace "
                "of the pod's sandbox container %s", n->path, sid);
    else {
        json_t *oa = json_object_get(o.json, "annotations");
        static const char *const keys[] = {"run.fluebox.allow-net", "run.fluebox.egress-resolve",
                                           "run.fluebox.proxy-env", "run.fluebox.net",
                                           "run.fluebox.net-max-conns", "run.fluebox.net-idle"};
        rc = 0;
        for (size_t i = 0; i < FB_ARRAY_LEN(keys) && rc == 0; i++)
            if (!same_ann(oa, s, keys[i]))
                rc = fb_errf(err, FB_EXIT_SETUP, "annotation %s: differs from the pod's sandbox "
                             "container's, whose relay serves the whole pod", keys[i]);
    }
    oci_state_close(&o);
    return rc;
}
