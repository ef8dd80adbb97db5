#!/usr/bin/env python3
"""man.py — the man pages, from their one source in docs/man/*.md, with
go-md2man (Debian's). Before converting, each line

    <!-- options: fluebox CMD... -->

is replaced by the option list of `fluebox CMD... --help`, which the binary
prints from its option tables: the pages list exactly the options the binary
takes. A line

    <!-- include: docs/FILE.md ## HEADING -->

is replaced by that section of the manual (up to its next heading of the
same level), its headings raised one level: the manual stays the one text.
Other comments are dropped; @VERSION@ becomes the version.

Usage: man.py OUTDIR FLUEBOX   (writes OUTDIR/fluebox.1, OUTDIR/fluebox-profile.5)
"""
import os
import re
import subprocess
import sys
import time

OPT = re.compile(r"^  (-\S.*?)(?: {2,}(.*))?$")


def options(fluebox, args):
    """The option rows of `fluebox ARGS --help` as a definition list."""
    text = subprocess.run([fluebox] + args + ["--help"], check=True, capture_output=True,
                          text=True).stdout
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if OPT.match(l))
    # A section heading right above the first option belongs to the list.
    if start > 0 and re.match(r"^\S.*:$", lines[start - 1]):
        start -= 1
    out, spec = [], None
    for line in lines[start:]:
        m = OPT.match(line)
        if m:
            spec = m.group(1).strip()
            if m.group(2):
                out.append(term(spec, m.group(2)))
                spec = None
        elif spec and line.startswith("   "):
            out.append(term(spec, line.strip()))
            spec = None
        elif re.match(r"^\S.*:$", line):
            out.append("**%s**\n" % esc(line[:-1]))
    return "\n".join(out)


def esc(s):
    return re.sub(r"([\\`*_\[\]<>|])", r"\\\1", s)


def term(spec, help_):
    # "-e, --env K=V" -> **-e**, **--env** *K=V*
    parts = []
    for piece in spec.split(", "):
        words = piece.split(" ", 1)
        parts.append("**%s**%s" % (esc(words[0]), " *%s*" % esc(words[1]) if len(words) > 1 else ""))
    return "%s\n: %s\n" % (", ".join(parts), esc(help_))


def include(top, path, heading):
    """The section of docs/FILE.md under heading, its headings raised."""
    with open(os.path.join(top, path), encoding="utf-8") as f:
        lines = f.read().splitlines()
    level = heading.split(" ", 1)[0]
    start = lines.index(heading) + 1
    out = []
    for line in lines[start:]:
        m = re.match(r"^(#+) ", line)
        if m and len(m.group(1)) <= len(level):
            break
        out.append(line[1:] if m else line)
    return "# %s\n%s" % (heading[len(level) + 1:].upper(), "\n".join(out))


def tables_to_lists(text):
    """Markdown tables as definition lists: wide tables do not fit a
    terminal in roff, a list does. The first column is the term."""
    out, head = [], None
    for line in text.split("\n"):
        if line.startswith("|") and line.endswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if head is None:
                head = cells
            elif not all(re.fullmatch(r":?-+:?", c) for c in cells if c):
                rest = "; ".join("%s: %s" % (h, c) if h and i < len(cells) - 1 else c
                                 for i, (h, c) in enumerate(zip(head[1:], cells[1:]), 1))
                out.append("%s\n: %s\n" % (cells[0], rest))
            continue
        head = None
        out.append(line)
    return "\n".join(out)


def title(src, version):
    """The "% NAME(SECTION) | MANUAL" line as a .TH line, and the rest."""
    first, rest = src.split("\n", 1)
    m = re.match(r"^% (\S+)\((\d)\) \| (.*)$", first)
    if not m:
        raise SystemExit("man.py: the first line must be %% NAME(SECTION) | MANUAL: %s" % first)
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    date = time.strftime("%Y-%m-%d", time.gmtime(int(epoch) if epoch else time.time()))
    th = '.TH "%s" "%s" "%s" "fluebox %s" "%s"\n' % (m.group(1), m.group(2), date, version,
                                                   m.group(3))
    return th, src


def main():
    outdir, fluebox = sys.argv[1], sys.argv[2]
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(top, "VERSION")) as f:
        version = f.readline().strip()
    os.makedirs(outdir, exist_ok=True)
    for name in ("fluebox.1", "fluebox-profile.5"):
        with open(os.path.join(top, "docs", "man", name + ".md"), encoding="utf-8") as f:
            src = f.read().replace("@VERSION@", version)
        src = re.sub(r"<!-- options: fluebox ([^>]*?) -->",
                     lambda m: options(fluebox, m.group(1).split()), src)
        src = re.sub(r"<!-- include: (\S+) (#+ [^>]*?) -->",
                     lambda m: include(top, m.group(1), m.group(2)), src)
        src = re.sub(r"<!--.*?-->\n?", "", src, flags=re.S)
        src = tables_to_lists(src)
        th, src = title(src, version)
        res = subprocess.run(["go-md2man"], input=src, capture_output=True, text=True, check=True)
        roff = res.stdout
        # go-md2man renders the "% " title block as a .TH line of its own
        # making; the page gets this one (name, section, date, version).
        roff = re.sub(r"^\.TH .*\n", lambda _: th, roff, count=1, flags=re.M)
        with open(os.path.join(outdir, name), "w", encoding="utf-8") as f:
            f.write(roff)


if __name__ == "__main__":
    main()
