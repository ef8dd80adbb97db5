#!/usr/bin/env python3
"""bench/readme.py — copies the tables of one `make bench` run into
docs/bench.md, so that its tables always come from a single run.

    python3 bench/readme.py [bench/results/latest.md] [docs/bench.md]

Replaces what lies between the page's two markers ("<!-- bench: begin"
... and "<!-- bench: end -->") with the run's header (command, commit,
machine, load) and the sections named in SECTIONS, in that order: the
cold-start, payload, throughput, memory and session tables and the targets
of issue 18 with the reason for each one not met. The other tables (node,
session fork, egress) are in bench/RESULTS.md, a copy of the same run's
latest.md. `make bench-publish` runs both copies."""
import os
import re
import sys

SECTIONS = [
    "cold start: /bin/true",
    "cold start, one at a time",
    "real payload: /usr/bin/python3",
    "throughput",
    "memory",
    "sessions",
    "targets of issue 18",
]
BEGIN = "<!-- bench: begin"
END = "<!-- bench: end -->"


def parse(md):
    """The header, and {title: body} for each "### title" section."""
    parts = re.split(r"^### (.*)$", md, flags=re.M)
    secs = {}
    for i in range(1, len(parts), 2):
        secs[parts[i].strip()] = parts[i + 1]
    return parts[0], secs


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "bench/results/latest.md"
    readme = sys.argv[2] if len(sys.argv) > 2 else "docs/bench.md"
    head, secs = parse(open(src).read())
    intro = "\n".join(l for l in head.splitlines()
                      if l.strip() and not l.startswith(("#", "<!--")))
    ended = re.search(r"^Load average when it ended:.*$", "\n".join(secs.values()), flags=re.M)
    out = ["", intro + (" " + ended.group(0) if ended else ""), ""]
    for want in SECTIONS:
        title = next((t for t in secs if t.startswith(want)), None)
        if title is None:
            sys.exit("bench/readme.py: %s has no section %r" % (src, want))
        body = re.sub(r"^Load average when it ended:.*$", "", secs[title], flags=re.M)
        out += ["#### " + title, "", body.strip("\n"), ""]
    text = open(readme).read()
    a = text.find(BEGIN)
    b = text.find(END)
    if a < 0 or b < a:
        sys.exit("bench/readme.py: %s has no '%s ...' / '%s' markers" % (readme, BEGIN, END))
    a = text.index("\n", a) + 1
    with open(readme + ".tmp", "w") as f:
        f.write(text[:a] + "\n".join(out) + "\n" + text[b:])
    os.replace(readme + ".tmp", readme)


if __name__ == "__main__":
    main()
