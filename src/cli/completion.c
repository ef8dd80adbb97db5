/* completion.c — `fluebox completion bash|zsh|fish`: shell completion
 * scripts generated from the option tables themselves (policy_opts.c's for
 * run, learn and session create, each subcommand's own table beside it), so
 * an option added to a table is completed without anyone editing a script.
 *
 * What is completed: the subcommands, their subcommand words (session ls,
 * profile show, ...), their long and short options, the values an option's
 * metavar lists ("none|allow|host"), the built-in profile names, files for
 * options that take a host path, and any command after "--". */
#include "commands.h"
#include "policy_opts.h"
#include "profile.h"

#include <string.h>

struct ctable {
    const struct fb_opt *opts;
    const size_t *n;
    unsigned scope; /* rows with one of these bits; 0: every row */
};

struct ccmd {
    const char *name, *desc;
    const char *words; /* its subcommand words, space-separated, or NULL */
    struct ctable t[4];
};

#define POLICY(scope) {cli_policy_opts, &cli_npolicy_opts, scope}

static const struct ccmd cmds[] = {
    {"run", "run a command in a fresh sandbox", NULL, {POLICY(FB_OPT_RUN)}},
    {"learn", "run a command and write the profile it needs", NULL,
     {POLICY(FB_OPT_RUN), {learn_opts, &learn_opts_n, 0}}},
    {"serve", "serve sessions on a Unix socket", NULL, {{serve_opts, &serve_opts_n, 0}}},
    {"session", "create, list and manage a server's sessions",
     "create rm ls info publish unpublish diff commit reset fork snapshot restore grant revoke",
     {POLICY(FB_OPT_SESSION), {create_opts, &create_opts_n, 0},
      {session_opts, &session_opts_n, 0}, {ws_opts, &ws_opts_n, 0}}},
    {"exec", "run a command in a session", NULL, {{exec_opts, &exec_opts_n, 0}}},
    {"cp", "copy files into or out of a session", NULL, {{cp_opts, &cp_opts_n, 0}}},
    {"profile", "list, show, check profiles", "list show check bpf",
     {{bpf_opts, &bpf_opts_n, 0}}},
    {"doctor", "what this machine offers, and what is missing", NULL,
     {{doc_opts, &doc_opts_n, 0}}},
    {"oci", "the OCI runtime (runc-compatible)",
     "create start state kill delete exec ps pause resume update run list features",
     {{0}}},
    {"record", "verify or show a --record file", "verify show", {{0}}},
    {"completion", "print a shell completion script", "bash zsh fish", {{0}}},
};

/* Subcommands of layers above this one (mcp), added by main.c. */
static struct ccmd extra[4];
static size_t nextra;

void completion_add_command(const char *name, const char *desc, const struct fb_opt *opts,
                            const size_t *n)
{
    if (nextra < FB_ARRAY_LEN(extra))
        extra[nextra++] = (struct ccmd){name, desc, NULL, {POLICY(FB_OPT_SESSION), {opts, n, 0}}};
}

static size_t ncmds(void)
{
    return FB_ARRAY_LEN(cmds) + nextra;
}

static const struct ccmd *cmd_at(size_t i)
{
    return i < FB_ARRAY_LEN(cmds) ? &cmds[i] : &extra[i - FB_ARRAY_LEN(cmds)];
}

/* Calls fn for each row of cmd's tables that is listed (has help or is an
 * alias of a listed one: every row in scope). */
#define EACH_ROW(c, o)                                                                           \
    for (size_t t_ = 0; t_ < FB_ARRAY_LEN((c)->t) && (c)->t[t_].n; t_++)                         \
        for (size_t i_ = 0; (c)->t[t_].opts && i_ < *(c)->t[t_].n; i_++)                         \
            if (((o) = &(c)->t[t_].opts[i_]),                                                   \
                !(c)->t[t_].scope || ((o)->flags & (c)->t[t_].scope))

/* The words of a metavar that lists its values ("none|allow|host"), or NULL
 * when it names a kind of value (SIZE, FILE|-). Into buf, space-separated. */
static const char *value_words(const struct fb_opt *o, char *buf, size_t len)
{
    if (o->arg == FB_ARG_PROFILE) {
        size_t at = 0;
        buf[0] = 0;
        for (const char *const *n = profile_builtin_names(); n && *n && at + 1 < len; n++)
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? " " : "", *n);
        return buf;
    }
    if (!o->metavar || !strchr(o->metavar, '|'))
        return NULL;
    for (const char *m = o->metavar; *m; m++)
        if ((*m >= 'A' && *m <= 'Z') || strchr("[]<>.", *m))
            return NULL;
    snprintf(buf, len, "%s", o->metavar);
    for (char *b = buf; *b; b++)
        if (*b == '|')
            *b = ' ';
    return buf;
}

static bool wants_file(const struct fb_opt *o)
{
    return o->arg == FB_ARG_HOST_PATH || o->arg == FB_ARG_HOST_BIND || o->arg == FB_ARG_PROFILE;
}

/* Text for a single-quoted shell string: ' becomes '\'' ; for zsh's
 * _arguments also [ ] : and \ are escaped (zsh_spec). */
static void put_quoted(FILE *f, const char *s, bool zsh_spec)
{
    for (; s && *s; s++) {
        if (*s == '\'')
            fputs("'\\''", f);
        else if (zsh_spec && strchr("[]:\\", *s))
            fprintf(f, "\\%c", *s);
        else
            fputc(*s, f);
    }
}

static void bash_script(FILE *f)
{
    const struct fb_opt *o;
    char buf[256];
    fputs("# bash completion for fluebox (generated by `fluebox completion bash`)\n"
          "_fluebox() {\n"
          "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} i\n"
          "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n    COMPREPLY=($(compgen -W '",
          f);
    for (size_t c = 0; c < ncmds(); c++)
        fprintf(f, "%s ", cmd_at(c)->name);
    fputs("--help --version' -- \"$cur\")); return; fi\n"
          "  for ((i = 2; i < COMP_CWORD; i++)); do\n"
          "    if [ \"${COMP_WORDS[i]}\" = -- ]; then COMPREPLY=($(compgen -c -- \"$cur\")); return; fi\n"
          "  done\n  local opts='' words='' files='' vals=''\n  case ${COMP_WORDS[1]} in\n",
          f);
    for (size_t c = 0; c < ncmds(); c++) {
        const struct ccmd *cm = cmd_at(c);
        fprintf(f, "  %s)\n    opts='--help", cm->name);
        if (!strcmp(cm->name, "run"))
            fputs(" --server", f);
        EACH_ROW(cm, o) fprintf(f, " --%s", o->name);
        EACH_ROW(cm, o) if (o->short_name) fprintf(f, " -%c", o->short_name);
        fprintf(f, "'\n    words='%s'\n    case $prev in\n", cm->words ? cm->words : "");
        EACH_ROW(cm, o) {
            if (!o->arg)
                continue;
            const char *w = value_words(o, buf, sizeof buf);
            fprintf(f, "      --%s", o->name);
            if (o->short_name)
                fprintf(f, "|-%c", o->short_name);
            fprintf(f, ") vals='%s'; files=%s ;;\n", w ? w : "", wants_file(o) ? "1" : "");
        }
        fputs("    esac ;;\n", f);
    }
    fputs("  esac\n"
          "  if [ -n \"$vals$files\" ] && [[ $prev == -* ]]; then\n"
          "    COMPREPLY=($(compgen -W \"$vals\" -- \"$cur\"))\n"
          "    [ -n \"$files\" ] && COMPREPLY+=($(compgen -f -- \"$cur\"))\n"
          "  elif [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
          "  elif [ -n \"$words\" ] && [ \"$COMP_CWORD\" -eq 2 ]; then\n"
          "    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
          "  else COMPREPLY=($(compgen -f -- \"$cur\")); fi\n"
          "}\n"
          "complete -F _fluebox fluebox\n",
          f);
}

static void zsh_script(FILE *f)
{
    const struct fb_opt *o;
    char buf[256];
    fputs("#compdef fluebox\n# zsh completion for fluebox (generated by `fluebox completion zsh`)\n"
          "_fluebox() {\n  local -a cmds\n  cmds=(\n",
          f);
    for (size_t c = 0; c < ncmds(); c++)
        fprintf(f, "    '%s:%s'\n", cmd_at(c)->name, cmd_at(c)->desc);
    fputs("  )\n  if (( CURRENT == 2 )); then _describe command cmds; return; fi\n"
          "  local cmd=${words[2]}\n  shift 1 words; (( CURRENT-- ))\n  case $cmd in\n",
          f);
    for (size_t c = 0; c < ncmds(); c++) {
        const struct ccmd *cm = cmd_at(c);
        fprintf(f, "  %s)\n    _arguments -s '(- *)--help[this help]'", cm->name);
        EACH_ROW(cm, o) {
            /* Repeatable options may be given again: '*'. */
            fprintf(f, " \\\n      '*--%s", o->name);
            if (o->arg)
                fputc('=', f);
            fputc('[', f);
            put_quoted(f, o->help ? o->help : "an alias", true);
            fputc(']', f);
            if (o->arg) {
                const char *w = value_words(o, buf, sizeof buf);
                fputc(':', f);
                put_quoted(f, o->metavar ? o->metavar : "value", true);
                fputc(':', f);
                if (w)
                    fprintf(f, "(%s)", w);
                else if (wants_file(o))
                    fputs("_files", f);
                else
                    fputs(" ", f);
            }
            fputc('\'', f);
        }
        if (cm->words)
            fprintf(f, " \\\n      '1:subcommand:(%s)'", cm->words);
        fputs(" \\\n      '*::command or argument:_normal' ;;\n", f);
    }
    fputs("  esac\n}\ncompdef _fluebox fluebox\n", f);
}

static void fish_script(FILE *f)
{
    const struct fb_opt *o;
    char buf[256];
    fputs("# fish completion for fluebox (generated by `fluebox completion fish`)\n"
          "complete -c fluebox -f\n",
          f);
    for (size_t c = 0; c < ncmds(); c++)
        fprintf(f, "complete -c fluebox -n __fish_use_subcommand -a %s -d '%s'\n", cmd_at(c)->name,
                cmd_at(c)->desc);
    for (size_t c = 0; c < ncmds(); c++) {
        const struct ccmd *cm = cmd_at(c);
        const char *cond = "__fish_seen_subcommand_from";
        if (cm->words)
            fprintf(f, "complete -c fluebox -n '%s %s' -a '%s'\n", cond, cm->name, cm->words);
        EACH_ROW(cm, o) {
            fprintf(f, "complete -c fluebox -n '%s %s' -l %s", cond, cm->name, o->name);
            if (o->short_name)
                fprintf(f, " -s %c", o->short_name);
            if (o->arg) {
                const char *w = value_words(o, buf, sizeof buf);
                fputs(wants_file(o) ? " -r -F" : " -x", f);
                if (w)
                    fprintf(f, " -a '%s'", w);
            }
            fputs(" -d '", f);
            put_quoted(f, o->help ? o->help : "an alias", false);
            fputs("'\n", f);
        }
    }
}

int cmd_completion(int argc, char **argv)
{
    static const char usage[] =
        "Usage: fluebox completion bash|zsh|fish\n"
        "Prints a completion script for the shell, made from fluebox's option tables.\n"
        "  bash: source <(fluebox completion bash), or save it as\n"
        "        /usr/share/bash-completion/completions/fluebox\n"
        "  zsh:  save it as _fluebox in a directory of $fpath\n"
        "  fish: fluebox completion fish > ~/.config/fish/completions/fluebox.fish\n";
    if (argc == 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
        fputs(usage, stdout);
        return 0;
    }
    if (argc != 1 || (strcmp(argv[0], "bash") && strcmp(argv[0], "zsh") && strcmp(argv[0], "fish"))) {
        fb_warn("completion: expected one of bash, zsh or fish%s%s%s", argc ? " (not \"" : "",
                argc ? argv[0] : "", argc ? "\")" : "");
        return FB_EXIT_SETUP;
    }
    if (!strcmp(argv[0], "bash"))
        bash_script(stdout);
    else if (!strcmp(argv[0], "zsh"))
        zsh_script(stdout);
    else
        fish_script(stdout);
    return fflush(stdout) == 0 && !ferror(stdout) ? 0 : FB_EXIT_SETUP;
}
