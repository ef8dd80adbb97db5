/* net.h — the sandbox side of networking, run by the child inside its new
 * network namespace before it drops privileges.
 *
 * net_setup_child() brings loopback up and, in allow mode, makes the
 * synthetic range local (an address on lo), binds the DNS sockets and the
 * listeners for the allowed ports (and the CONNECT proxy) and returns them;
 * spawn.c passes them to the supervisor (SCM_RIGHTS, FB_MSG_NETFDS), where
 * egress.c serves them. Nothing here talks to the host network. */
#ifndef FB_NET_H
#define FB_NET_H

#include "policy.h"

/* The sandbox's resolver address (what /etc/resolv.conf names in allow mode). */
#define FB_NET_DNS_ADDR "127.0.0.53"
/* Synthetic addresses handed out for allowed names: 198.18.0.0/15 (RFC 2544). */
#define FB_NET_SYNTH_BASE 0xC6120000u /* 198.18.0.0 */
#define FB_NET_SYNTH_BITS 15

/* fds receives at most FB_CTL_MAX_FDS (32) descriptors; *nfds how many.
 * In none mode only loopback is brought up and *nfds is 0. */
int net_setup_child(const struct fb_policy *p, int *fds, size_t *nfds, struct fb_err *err);

#endif
