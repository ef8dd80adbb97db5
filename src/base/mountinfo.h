/* mountinfo.h — reading /proc/self/mountinfo (proc(5)): one line split into
 * the fields fluebox looks at, and the \ooo escapes undone. Used where a
 * mount must be found by what is mounted (cgroup hierarchies: cgroup_hier.c,
 * cgroup_at.c; an OCI container's overlay: oci_mount.c). */
#ifndef FB_MOUNTINFO_H
#define FB_MOUNTINFO_H

#include <stdbool.h>

/* One line's fields, pointing into the line (split in place); root and
 * mount point still escaped (mountinfo_unescape). */
struct mountinfo_ent {
    char *root;   /* the mount's root within its file system */
    char *mnt;    /* the mount point */
    char *opts;   /* per-mount options */
    char *fstype; /* after the "-" separator */
    char *source;
    char *super;  /* per-superblock options */
};

/* Split line (modified) into e. False for a line that does not have all
 * these fields. */
bool mountinfo_split(char *line, struct mountinfo_ent *e);

/* s with mountinfo's \ooo escapes (space, tab, newline, backslash) undone,
 * malloc'ed. */
char *mountinfo_unescape(const char *s);

#endif
