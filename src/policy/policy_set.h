/* policy_set.h — typed setters: the one place where a value for the policy
 * is checked and stored. The command line (policy_opts.c parses text, then calls
 * these) and session.create's parameters (JSON numbers and strings, no
 * detour through text) share them, so the same value means the same thing
 * and gets the same error either way.
 *
 * name: how the caller spelled the setting ("--workspace", "workspace"); the
 * one-line error names it and the value ("--workspace /x: No such file or
 * directory"). Setters of numbers take what, the setting and its value as
 * the caller got it ("--mem 1M", "limits.memory"), since the number alone
 * would not show what was typed: "--mem 1M: too small (at least 4M)".
 * Sizes and counts: -1 is unlimited; 0 is an error (as on the command
 * line); leave a setter uncalled to keep the profile's value. */
#ifndef FB_POLICY_SET_H
#define FB_POLICY_SET_H

#include "policy.h"

/* Filesystem. Host paths are resolved (realpath) here, with the caller's
 * rights and current directory. */
int policy_set_workspace(struct fb_policy *p, const char *dir, const char *name,
                         struct fb_err *err);
/* dst NULL: the same path inside as src (resolved). */
int policy_add_bind(struct fb_policy *p, const char *src, const char *dst, bool rw,
                    const char *name, struct fb_err *err);
int policy_add_tmpfs(struct fb_policy *p, const char *dst, int64_t size, const char *name,
                     struct fb_err *err);
/* An absolute path inside; "/" is allowed. */
int policy_set_cwd(struct fb_policy *p, const char *dir, const char *name, struct fb_err *err);
void policy_set_cow(struct fb_policy *p, bool on);
int policy_set_cow_upper(struct fb_policy *p, const char *dir, const char *name,
                         struct fb_err *err);
/* Files written at exit ("-": stdout for --changes, stderr for --report):
 * checked for writability now, so a bad path fails before the command runs. */
int policy_set_changes(struct fb_policy *p, const char *path, const char *name,
                       struct fb_err *err);
int policy_set_report(struct fb_policy *p, const char *path, const char *name,
                      struct fb_err *err);
/* --record FILE: a new file (never an existing one) in an existing
 * directory; it also lists denied system calls (--seccomp-log). --record-key
 * FILE: readable (record.c checks it is an Ed25519 private key). */
int policy_set_record(struct fb_policy *p, const char *path, const char *name, struct fb_err *err);
int policy_set_record_key(struct fb_policy *p, const char *path, const char *name,
                          struct fb_err *err);
/* The record's directory must be out of the sandbox's reach: not the
 * workspace (unless --cow or read-only), a read-write --bind or below one. */
int policy_record_reach(const struct fb_policy *p, const char *record, struct fb_err *err);
int policy_set_net_log(struct fb_policy *p, const char *path, const char *name,
                       struct fb_err *err);

/* What the boundary is made of: "namespaces" or "landlock" (policy.h). */
int policy_set_isolation(struct fb_policy *p, const char *value, const char *name,
                         struct fb_err *err);

/* Identity and environment. */
int policy_set_host_id(struct fb_policy *p, uint32_t id, const char *name, struct fb_err *err);
int policy_set_hostname(struct fb_policy *p, const char *host, const char *name,
                        struct fb_err *err);
int policy_set_env(struct fb_policy *p, const char *kv, const char *name, struct fb_err *err);
int policy_set_env_pass(struct fb_policy *p, const char *key, const char *name,
                        struct fb_err *err);

/* Limits. */
int policy_set_mem(struct fb_policy *p, int64_t bytes, const char *what, struct fb_err *err);
int policy_set_cpus(struct fb_policy *p, double cpus, const char *what, struct fb_err *err); /* 0: unlimited */
int policy_set_pids(struct fb_policy *p, int64_t n, const char *what, struct fb_err *err);
int policy_set_disk(struct fb_policy *p, int64_t bytes, const char *what, struct fb_err *err);
int policy_set_nofile(struct fb_policy *p, int64_t n, const char *what, struct fb_err *err);
int policy_set_fsize(struct fb_policy *p, int64_t bytes, const char *what, struct fb_err *err);
int policy_set_timeout(struct fb_policy *p, int64_t ms, const char *what, struct fb_err *err); /* -1: none */

/* Network. */
void policy_set_net(struct fb_policy *p, enum fb_net_mode mode);
int policy_set_max_conns(struct fb_policy *p, int64_t n, const char *what, struct fb_err *err);
int policy_set_conn_idle(struct fb_policy *p, int64_t ms, const char *what, struct fb_err *err);

#endif
