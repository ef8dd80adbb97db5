/* progfile.c — what a program file is, read from the host without running
 * it: in a system tree or not, its #! line, whether an ELF program runs
 * from its file alone, the Python venv around it, the version manager's
 * layout it sits in (toolchain.c decides what to bind from these). */
#include "progfile.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

char *tc_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return fb_xstrdup(".");
    if (slash == path)
        return fb_xstrdup("/");
    return fb_xstrndup(path, (size_t)(slash - path));
}

bool tc_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool tc_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

bool tc_is_exec_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Trees bound into every sandbox at the same path (mount.c). */
static const char *const system_trees[] = {"/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/",
                                           "/lib32/", "/libx32/", "/etc/alternatives/"};

bool tc_in_system_tree(const char *path)
{
    for (size_t i = 0; i < FB_ARRAY_LEN(system_trees); i++) {
        size_t l = strlen(system_trees[i]);
        if (!strncmp(path, system_trees[i], l) ||
            (!strncmp(path, system_trees[i], l - 1) && path[l - 1] == 0))
            return true;
    }
    return false;
}

bool tc_under(const char *path, const char *dir)
{
    size_t l = strlen(dir);
    if (l == 1 && dir[0] == '/')
        return path[0] == '/';
    return !strncmp(path, dir, l) && (path[l] == '/' || path[l] == 0);
}

const char *tc_base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}


/* "#!interp [arg]": interp and the first argument (malloc'ed), or false. */
bool pf_read_shebang(const char *path, char **interp, char **arg)
{
    char buf[256];
    *interp = *arg = NULL;
    if (fb_read_file(path, buf, sizeof buf) < 3 || buf[0] != '#' || buf[1] != '!')
        return false;
    char *s = buf + 2;
    s[strcspn(s, "\r\n")] = 0;
    s += strspn(s, " \t");
    size_t l = strcspn(s, " \t");
    if (!l)
        return false;
    *interp = fb_xstrndup(s, l);
    s += l;
    s += strspn(s, " \t");
    if (*s) {
        size_t al = strcspn(s, " \t");
        *arg = fb_xstrndup(s, al);
        /* env -S NAME ...: the name is the next word. */
        if (!strcmp(*arg, "-S")) {
            free(*arg);
            s += al;
            s += strspn(s, " \t");
            *arg = *s ? fb_xstrndup(s, strcspn(s, " \t")) : NULL;
        }
    }
    return true;
}


#define ELF_SCAN(Ehdr, Phdr, Dyn)                                                              \
    do {                                                                                       \
        Ehdr eh;                                                                               \
        if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || eh.e_phentsize != sizeof(Phdr) || \
            eh.e_phnum > 256)                                                                  \
            return PF_NOT_ELF;                                                                    \
        for (unsigned i = 0; i < eh.e_phnum; i++) {                                            \
            Phdr ph;                                                                           \
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph) \
                return PF_NOT_ELF;                                                                \
            if (ph.p_type == PT_INTERP) {                                                      \
                char interp[256];                                                              \
                size_t n = ph.p_filesz < sizeof interp ? (size_t)ph.p_filesz : sizeof interp - 1; \
                if (pread(fd, interp, n, (off_t)ph.p_offset) != (ssize_t)n)                    \
                    return PF_NOT_ELF;                                                            \
                interp[n] = 0;                                                                 \
                if (!tc_in_system_tree(interp)) {                                                 \
                    snprintf(why, cap, "its loader is %.200s", interp);                            \
                    return PF_ELF_NEEDS;                                                          \
                }                                                                              \
            } else if (ph.p_type == PT_DYNAMIC) {                                              \
                size_t nd = (size_t)(ph.p_filesz / sizeof(Dyn));                               \
                if (nd > 4096)                                                                 \
                    nd = 4096;                                                                 \
                for (size_t k = 0; k < nd; k++) {                                              \
                    Dyn d;                                                                     \
                    if (pread(fd, &d, sizeof d, (off_t)(ph.p_offset + k * sizeof d)) != (ssize_t)sizeof d) \
                        return PF_NOT_ELF;                                                        \
                    if (d.d_tag == DT_NULL)                                                    \
                        break;                                                                 \
                    if (d.d_tag == DT_RPATH || d.d_tag == DT_RUNPATH) {                        \
                        snprintf(why, cap, "it loads libraries from its own %s",               \
                                 d.d_tag == DT_RPATH ? "RPATH" : "RUNPATH");                   \
                        return PF_ELF_NEEDS;                                                      \
                    }                                                                          \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    } while (0)

/* An ELF program that runs from its file alone: loaded by the system's
 * loader (or static) and with no library path of its own. */
static enum pf_elf pf_elf_check_fd(int fd, char *why, size_t cap)
{
    unsigned char id[EI_NIDENT];
    if (pread(fd, id, sizeof id, 0) != (ssize_t)sizeof id || memcmp(id, ELFMAG, SELFMAG))
        return PF_NOT_ELF;
    const uint16_t one = 1;
    bool little = *(const unsigned char *)&one == 1;
    if (id[EI_DATA] != (little ? ELFDATA2LSB : ELFDATA2MSB)) {
        snprintf(why, cap, "it is an ELF file of another byte order");
        return PF_ELF_NEEDS;
    }
    if (id[EI_CLASS] == ELFCLASS64)
        ELF_SCAN(Elf64_Ehdr, Elf64_Phdr, Elf64_Dyn);
    else if (id[EI_CLASS] == ELFCLASS32)
        ELF_SCAN(Elf32_Ehdr, Elf32_Phdr, Elf32_Dyn);
    else
        return PF_NOT_ELF;
    return PF_ELF_ALONE;
}

enum pf_elf pf_elf_check(const char *path, char *why, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return PF_NOT_ELF;
    enum pf_elf k = pf_elf_check_fd(fd, why, cap);
    close(fd);
    return k;
}

/* "/comp[0]/.../comp[k-1]" */
static char *prefix_of(char **comp, size_t k)
{
    size_t len = 1;
    for (size_t i = 0; i < k; i++)
        len += strlen(comp[i]) + 1;
    char *s = fb_xmalloc(len + 1);
    size_t o = 0;
    for (size_t i = 0; i < k; i++)
        o += (size_t)sprintf(s + o, "/%s", comp[i]);
    if (!o)
        s[o++] = '/';
    s[o] = 0;
    return s;
}

/* The version directory of a version manager that holds real, with a short
 * name of the layout; NULL if real is in none. */
char *pf_version_dir(const char *real, const char **kind)
{
    /* Split into components once. */
    char *comp[128];
    size_t n = 0;
    cleanup_free char *copy = fb_xstrdup(real);
    char *save = NULL;
    for (char *c = strtok_r(copy, "/", &save); c && n < FB_ARRAY_LEN(comp);
         c = strtok_r(NULL, "/", &save))
        comp[n++] = c;
    for (size_t i = 1; i + 1 < n; i++) {
        const char *c = comp[i];
        cleanup_free char *root = prefix_of(comp, i);
        if (!strcmp(c, "versions") && i + 2 < n) {
            /* nvm: NVM_DIR/versions/node/V; pyenv and the rbenv family:
             * ROOT/versions/V, ROOT holding their shims/ or libexec/. */
            cleanup_free char *nvm = fb_xasprintf("%s/nvm.sh", root);
            if (tc_exists(nvm) && i + 3 < n) {
                *kind = "an nvm version directory";
                return prefix_of(comp, i + 3);
            }
            cleanup_free char *shims = fb_xasprintf("%s/shims", root);
            cleanup_free char *libexec = fb_xasprintf("%s/libexec", root);
            if (tc_is_dir(shims) || tc_is_dir(libexec)) {
                cleanup_free char *pyenv = fb_xasprintf("%s/libexec/pyenv", root);
                *kind = tc_exists(pyenv) ? "a pyenv version directory"
                                         : "a version manager's version directory";
                return prefix_of(comp, i + 2);
            }
        } else if (!strcmp(c, "installs") && i + 3 < n) {
            /* asdf (ASDF_DATA_DIR/installs/TOOL/V) and mise. */
            cleanup_free char *shims = fb_xasprintf("%s/shims", root);
            cleanup_free char *plugins = fb_xasprintf("%s/plugins", root);
            if (tc_is_dir(shims) || tc_is_dir(plugins) || !strcmp(comp[i - 1], "mise")) {
                *kind = "an asdf/mise install directory";
                return prefix_of(comp, i + 3);
            }
        } else if (!strcmp(c, "tools") && i + 4 < n && !strcmp(comp[i + 1], "image")) {
            cleanup_free char *user = fb_xasprintf("%s/tools/user", root);
            if (tc_is_dir(user) || !strcmp(comp[i - 1], ".volta")) {
                *kind = "a volta image directory";
                return prefix_of(comp, i + 4);
            }
        } else if (!strcmp(c, "python") && !strcmp(comp[i - 1], "uv") && i + 2 < n &&
                   (!strncmp(comp[i + 1], "cpython-", 8) || !strncmp(comp[i + 1], "pypy-", 5) ||
                    !strncmp(comp[i + 1], "graalpy-", 8))) {
            *kind = "a uv-managed Python";
            return prefix_of(comp, i + 2);
        } else if (!strcmp(c, "toolchains") && i + 2 < n) {
            cleanup_free char *settings = fb_xasprintf("%s/settings.toml", root);
            if (tc_exists(settings)) {
                *kind = "a rustup toolchain";
                return prefix_of(comp, i + 2);
            }
        }
    }
    return NULL;
}

/* A Python program installed outside a venv (pip --user, --prefix): its
 * modules are in PREFIX/lib/pythonX.Y, which fluebox cannot tell apart from
 * the rest of PREFIX. Returns that lib directory or NULL. */
char *pf_python_prefix_lib(const char *real, const char *interp, const char *arg)
{
    const char *prog = !strcmp(tc_base_name(interp), "env") && arg ? arg : tc_base_name(interp);
    if (strncmp(prog, "python", 6))
        return NULL;
    cleanup_free char *bin = tc_dirname(real);
    if (strcmp(tc_base_name(bin), "bin"))
        return NULL;
    cleanup_free char *prefix = tc_dirname(bin);
    cleanup_free char *lib = fb_xasprintf("%s/lib", prefix);
    DIR *d = opendir(lib);
    if (!d)
        return NULL;
    char *found = NULL;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        if (strncmp(e->d_name, "python", 6))
            continue;
        cleanup_free char *sp = fb_xasprintf("%s/%s/site-packages", lib, e->d_name);
        if (tc_is_dir(sp))
            found = fb_xasprintf("%s/%s", lib, e->d_name);
    }
    closedir(d);
    return found;
}

/* The venv whose bin/ holds path (as called, links not followed), or NULL. */
char *pf_venv_of(const char *path)
{
    cleanup_free char *bin = tc_dirname(path);
    if (strcmp(tc_base_name(bin), "bin"))
        return NULL;
    char *venv = tc_dirname(bin);
    cleanup_free char *cfg = fb_xasprintf("%s/pyvenv.cfg", venv);
    struct stat st;
    if (stat(cfg, &st) == 0 && S_ISREG(st.st_mode))
        return venv;
    free(venv);
    return NULL;
}

