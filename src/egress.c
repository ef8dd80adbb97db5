/* egress.c — PLACEHOLDER until the allowlist relay lands. */
#include "egress.h"

int egress_start(const struct fb_policy *p, const int *fds, size_t nfds, struct fb_egress **out,
                 struct fb_err *err)
{
    (void)p;
    for (size_t i = 0; i < nfds; i++)
        close(fds[i]);
    *out = NULL;
    return fb_errf(err, FB_EXIT_SETUP, "egress is not available in this build yet");
}
int egress_fd(const struct fb_egress *e) { (void)e; return -1; }
void egress_dispatch(struct fb_egress *e) { (void)e; }
void egress_summary(const struct fb_egress *e, struct fb_net_summary *s) { (void)e; (void)s; }
void egress_free(struct fb_egress *e) { (void)e; }
