/* mountinfo.c — one /proc/self/mountinfo line split into its fields, and
 * its escapes undone (mountinfo.h). The format (proc(5)):
 *   id parent maj:min root mountpoint opts [optional...] - fstype source super */
#include "mountinfo.h"

#include "fb.h"

#include <string.h>

bool mountinfo_split(char *line, struct mountinfo_ent *e)
{
    char *fields[6] = {0};
    char *save = NULL, *tok = strtok_r(line, " \n", &save);
    int i = 0;
    for (; tok && i < 6; i++, tok = strtok_r(NULL, " \n", &save))
        fields[i] = tok;
    while (tok && strcmp(tok, "-"))
        tok = strtok_r(NULL, " \n", &save);
    e->fstype = tok ? strtok_r(NULL, " \n", &save) : NULL;
    e->source = e->fstype ? strtok_r(NULL, " \n", &save) : NULL;
    e->super = e->source ? strtok_r(NULL, " \n", &save) : NULL;
    e->root = fields[3];
    e->mnt = fields[4];
    e->opts = fields[5];
    return i == 6 && e->super;
}

char *mountinfo_unescape(const char *s)
{
    char *out = fb_xmalloc(strlen(s) + 1), *o = out;
    while (*s) {
        if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
            s[3] >= '0' && s[3] <= '7') {
            *o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
            s += 4;
        } else {
            *o++ = *s++;
        }
    }
    *o = 0;
    return out;
}
