#!/bin/bash
# 92-cow-session.sh — copy-on-write sessions over the wire protocol:
# workspace.diff (JSON and patch), workspace.commit (all, chosen paths,
# conflicts, force), workspace.reset, and not_supported without cow.
. "$(dirname "$0")/../lib.sh"
cow_needs_upper && skip_all "tmpfs on this kernel has no user xattrs (Linux < 6.6): --cow needs --cow-upper here (93-cow-upper, tests/vm)"

as_user() {
  if [ "$FB_AS" = root ]; then "$@"; else
    setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp "$@"
  fi
}
own() { [ "$FB_AS" = root ] || chown -R "$FB_AS:$FB_AS" "$@"; }
# The fluebox command line as FB_AS, exec'ing all the way (its pid is $!).
if [ "$FB_AS" = root ]; then FBCMD=("$FB"); else
  FBCMD=(setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp "$FB")
fi
PY=/usr/bin/python3; [ -x $PY ] || PY=$(command -v python3)

W=$T/s; mkdir -p $W/ws/src $W/fresh/src
for d in ws fresh; do
  printf 'one\ntwo\nthree\n' > $W/$d/src/main.c; echo keep > $W/$d/keep.txt; echo old > $W/$d/old.txt
  echo host-owned > $W/$d/h.txt
done
own $W; chmod 755 $T
SOCK=$T/fb.sock
# Its own stdio, so a server that outlives the test cannot hold the
# runner's pipe; stopped by pid whatever happens.
"${FBCMD[@]}" serve --socket $SOCK </dev/null >$T/serve.out 2>$T/serve.err &
SRV=$!
at_exit 'kill $SRV'
for i in $(seq 1 200); do [ -S $SOCK ] && break; sleep 0.05; done

cat > $T/client.py <<'EOF'
import json, os, socket, subprocess, sys
sock, ws, fresh = sys.argv[1:4]
s = socket.socket(socket.AF_UNIX); s.connect(sock); f = s.makefile("rb"); n = [0]
def call(method, **params):
    n[0] += 1
    s.sendall((json.dumps({"id": n[0], "method": method, "params": params}) + "\n").encode())
    while True:
        m = json.loads(f.readline())
        if m.get("id") == n[0] and ("result" in m or "error" in m):
            return m
def check(name, cond, why=""):
    print(("ok - " if cond else "not ok - ") + "cow session: " + name + ("" if cond else ": " + str(why)[:300]))

r = call("session.create", workspace=ws, cow=True)
if "error" in r:
    check("create", False, r); sys.exit(0)
sid = r["result"]["session"]
x = call("exec", session=sid, argv=["sh", "-c",
    "sed -i s/two/TWO/ src/main.c && rm old.txt && echo new > new.txt && mkdir -p d && echo z > d/z && echo s > h.txt"])
check("exec in a cow session", x.get("result", {}).get("exitCode") == 0, x)
check("the host is untouched before a commit",
      open(ws + "/src/main.c").read() == "one\ntwo\nthree\n" and os.path.exists(ws + "/old.txt"))

d = call("workspace.diff", session=sid)
ch = {c["path"]: c for c in d.get("result", {}).get("changes", [])}
want = {"src/main.c": "modified", "old.txt": "deleted", "new.txt": "added", "d": "added", "d/z": "added", "h.txt": "modified"}
check("workspace.diff lists the changes", all(ch.get(p, {}).get("status") == st for p, st in want.items()), d)
check("workspace.diff has text diffs", "-two\n+TWO\n" in ch.get("src/main.c", {}).get("diff", ""), ch.get("src/main.c"))

p = call("workspace.diff", session=sid, format="patch").get("result", {})
open(fresh + "/../p.patch", "w").write(p.get("patch", ""))
ap = subprocess.run(["git", "apply", "../p.patch"], cwd=fresh, capture_output=True)
check("the session patch applies with git apply", ap.returncode == 0 and
      open(fresh + "/src/main.c").read() == "one\nTWO\nthree\n" and not os.path.exists(fresh + "/old.txt")
      and open(fresh + "/d/z").read() == "z\n", ap.stderr)

# The host changes h.txt: committing it is a conflict, and nothing is applied.
open(ws + "/h.txt", "w").write("host changed\n")
c = call("workspace.commit", session=sid).get("result", {})
check("a host change is a conflict, nothing committed",
      c.get("committed") is False and [x["path"] for x in c.get("conflicts", [])] == ["h.txt"]
      and open(ws + "/src/main.c").read() == "one\ntwo\nthree\n", c)

# Chosen paths only.
c = call("workspace.commit", session=sid, paths=["src", "/workspace/new.txt"]).get("result", {})
check("commit of chosen paths", c.get("committed") is True and
      open(ws + "/src/main.c").read() == "one\nTWO\nthree\n" and open(ws + "/new.txt").read() == "new\n"
      and os.path.exists(ws + "/old.txt") and not os.path.exists(ws + "/d"), c)
left = sorted(x["path"] for x in call("workspace.diff", session=sid)["result"]["changes"])
check("committed paths are no change any more", left == ["d", "d/z", "h.txt", "old.txt"], left)

# Another edit of a committed file commits again without a false conflict.
call("exec", session=sid, argv=["sh", "-c", "echo four >> src/main.c"])
c = call("workspace.commit", session=sid, paths=["src/main.c"]).get("result", {})
check("a second commit of the same file is no conflict", c.get("committed") is True and
      open(ws + "/src/main.c").read() == "one\nTWO\nthree\nfour\n", c)

c = call("workspace.commit", session=sid, force=True).get("result", {})
check("force commits over the conflict", c.get("committed") is True and
      open(ws + "/h.txt").read() == "s\n" and not os.path.exists(ws + "/old.txt"), c)

# Reset: the sandbox sees the host as it is now, nothing to diff.
call("exec", session=sid, argv=["sh", "-c", "echo junk > junk.txt; rm keep.txt"])
r = call("workspace.reset", session=sid)
x = call("exec", session=sid, argv=["sh", "-c", "ls; cat h.txt"]).get("result", {})
d = call("workspace.diff", session=sid).get("result", {})
check("workspace.reset discards the layer", r.get("result") == {"reset": True} and
      "junk.txt" not in x.get("stdout", "") and "keep.txt" in x.get("stdout", "") and d.get("changes") == [], (r, x, d))
rd = call("file.read", session=sid, path="h.txt")
check("file operations see the new layer", rd.get("result", {}).get("data") == "s\n", rd)
x = call("exec", session=sid, argv=["sh", "-c", "echo after > after.txt"])
d = call("workspace.diff", session=sid).get("result", {})
check("the new layer records changes", [c["path"] for c in d.get("changes", [])] == ["after.txt"], d)

# Without cow: not_supported. cow without a workspace: refused.
r2 = call("session.create")
e = call("workspace.diff", session=r2["result"]["session"]).get("error", {})
check("not_supported without cow", e.get("code") == "not_supported", e)
e = call("session.create", cow=True).get("error", {})
check("cow needs a workspace", "workspace" in e.get("message", ""), e)
e = call("workspace.commit", session=sid, paths=["../etc"]).get("error", {})
check("paths outside the workspace are refused", e.get("code") == "invalid_params", e)
call("session.destroy", session=sid)
call("session.destroy", session=r2["result"]["session"])
EOF
timeout 300 $([ "$FB_AS" = root ] || echo setpriv --reuid=$FB_AS --regid=$FB_AS --init-groups) \
  $PY $T/client.py $SOCK $W/ws $W/fresh </dev/null
kill $SRV 2>/dev/null; wait $SRV 2>/dev/null
if grep -q "Sanitizer" $T/serve.err; then
  fail "cow session: the server's sanitizers are quiet" "$(grep -m3 -A5 Sanitizer $T/serve.err)"
else
  ok "cow session: the server's sanitizers are quiet"
fi
no_leftovers "cow session: nothing left behind"
