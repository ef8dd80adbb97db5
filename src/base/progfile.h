/* progfile.h — what a program file is (progfile.c): small path helpers,
 * its #! line, whether an ELF program runs from its file alone, the venv
 * around it, the version manager's layout it sits in. */
#ifndef FB_PROGFILE_H
#define FB_PROGFILE_H

#include "fb.h"

/* In a tree bound into every sandbox at the same path (/usr, /bin, ...). */
bool tc_in_system_tree(const char *path);
/* path is dir or below it. */
bool tc_under(const char *path, const char *dir);
const char *tc_base_name(const char *path);
char *tc_dirname(const char *path);
bool tc_is_dir(const char *path);
bool tc_exists(const char *path); /* lstat: links count */
bool tc_is_exec_file(const char *path);

/* "#!interp [arg]" (env's -S skipped): both malloc'ed, or false. */
bool pf_read_shebang(const char *path, char **interp, char **arg);

enum pf_elf {
    PF_NOT_ELF,
    PF_ELF_ALONE, /* the system's loader (or static), no RPATH/RUNPATH */
    PF_ELF_NEEDS, /* why says what else it loads */
};
enum pf_elf pf_elf_check(const char *path, char *why, size_t cap);

/* The version directory of a version manager's layout that holds real
 * (pyenv/nvm versions, asdf/mise installs, volta images, uv Pythons, rustup
 * toolchains), with the layout's name in *kind; NULL if none. */
char *pf_version_dir(const char *real, const char **kind);
/* The venv whose bin/ holds path (a pyvenv.cfg beside it), or NULL. */
char *pf_venv_of(const char *path);
/* For a Python #! script in PREFIX/bin outside a venv: PREFIX/lib/pythonX.Y
 * when it holds site-packages (pip --user, --prefix), else NULL. */
char *pf_python_prefix_lib(const char *real, const char *interp, const char *arg);

#endif
