/* netns.h — the sandbox side of networking, run by the child inside its new
 * network namespace before it drops privileges.
 *
 * net_setup_child() brings loopback up, binds the DNS sockets (none and
 * allow modes) and, in allow mode, makes the synthetic range local (an
 * address on lo) and binds the listeners for the allowed ports (and the
 * CONNECT proxy); it returns the sockets;
 * spawn.c passes them to the supervisor (SCM_RIGHTS, FB_MSG_NETFDS), where
 * egress serves them. Nothing here talks to the host network.
 * docs/network.md describes the whole design and its limits. */
#ifndef FB_NET_H
#define FB_NET_H

#include "policy.h"

/* The sandbox's resolver address (what /etc/resolv.conf names in allow mode). */
#define FB_NET_DNS_ADDR "127.0.0.53"
/* Synthetic addresses handed out for allowed names: 198.18.0.0/15 (RFC 2544).
 * 198.18.0.1 is the sandbox's own address on lo; names get .0.2 upwards. */
#define FB_NET_SYNTH_BASE 0xC6120000u /* 198.18.0.0 */
#define FB_NET_SYNTH_BITS 15

/* fds receives at most FB_CTL_MAX_FDS (32) descriptors; *nfds how many.
 * In none mode they are the resolver's two; with --net host none. */
int net_setup_child(const struct fb_policy *p, int *fds, size_t *nfds, struct fb_err *err);

/* A pod's network namespace that someone else made (a CNI plugin), entered
 * by the runtime as host root: every interface but loopback goes down (no
 * route out of the pod is left) and then as net_setup_child() in allow mode.
 * Fails when the namespace has fluebox's synthetic range already (another
 * container took it). The sockets serve every container that joins it. */
int net_setup_pod(const struct fb_policy *p, int *fds, size_t *nfds, struct fb_err *err);

/* Lowers the namespace's tcp_rmem/tcp_wmem maximum to 1 MiB (best effort),
 * through sysdir, a /proc/sys directory, for the network namespace of the
 * caller. mount_build passes the sandbox's own new /proc's: a look-up
 * through the host's /proc/sys compares a name with one dentry per live
 * network namespace (each has its own "net", "ipv4", "tcp_rmem"), so with
 * thousands of sessions it took most of a build's time; a new /proc starts
 * with none. */
void net_clamp_tcp_buffers(int sysdir);

#endif
