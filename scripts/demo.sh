#!/bin/sh
# demo.sh — `make demo`: run a small agent-style Python tool call in a fresh
# sandbox with a workspace, limits and a report, then show what it could not do.
set -e
cd "$(dirname "$0")/.."
ws=$(mktemp -d /tmp/fluebox-demo.XXXXXX)
trap 'rm -rf "$ws"' EXIT
cat > "$ws/tool.py" <<'PY'
import json, os, socket, subprocess
result = {"cwd": os.getcwd(), "uid": os.getuid(), "files": sorted(os.listdir("."))}
with open("notes.txt", "w") as f:
    f.write("written inside the sandbox\n")
result["processes visible"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
result["sh"] = subprocess.run(["sh", "-c", "echo $((6*7))"], capture_output=True, text=True).stdout.strip()
for what, attempt in [
    ("read /etc/shadow", lambda: open("/etc/shadow").read()),
    ("signal the host process that started it", lambda: os.kill(int(os.environ["HOSTPID"]), 0)),
    ("write /usr", lambda: open("/usr/evil", "w")),
    ("resolve example.com", lambda: socket.getaddrinfo("example.com", 443)),
]:
    try:
        attempt()
        result[what] = "ALLOWED"
    except Exception as e:
        result[what] = "blocked (%s)" % type(e).__name__
print(json.dumps(result, indent=2))
PY
echo "\$ fluebox run --workspace $ws --mem 256M --timeout 30s --report - -- python3 tool.py"
./fluebox run --env HOSTPID=$$ --workspace "$ws" --mem 256M --timeout 30s --report - -- python3 tool.py
echo
echo "on the host, the workspace now holds: $(ls "$ws" | tr '\n' ' ')"
