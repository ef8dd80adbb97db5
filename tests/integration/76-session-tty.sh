#!/bin/bash
# 76-session-tty.sh — `fluebox exec -it` from a real terminal: a pseudo-
# terminal this test opens (python3's pty module) plays the user's terminal
# and drives `fluebox exec -it ID -- bash -i` as a person would: the inside
# is a terminal of the host terminal's size, a resize of the host terminal
# reaches it (SIGWINCH -> exec.resize), Ctrl-C interrupts the inside
# foreground job and not fluebox, an interactive shell has job control, the
# exit status passes through, and the host terminal is back in its own
# mode (canonical, echo) afterwards.
. "$ROOT/tests/lib.sh"

command -v python3 >/dev/null || skip_all "missing: python3"
command -v bash >/dev/null || skip_all "missing: bash"
if [ "$FB_AS" = root ]; then FBCMD=("$FB"); else
  FBCMD=(setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp "$FB")
fi
chmod 755 "$T"
SOCK=$T/fb.sock
"${FBCMD[@]}" serve --socket="$SOCK" --ready-fd 3 </dev/null >"$T/serve.out" 2>"$T/serve.err" 3>"$T/ready" &
SRV=$!
at_exit 'kill $SRV 2>/dev/null'
wait_for 10 grep -q ready "$T/ready" || bail "serve did not start: $(cat "$T/serve.err")"
run_fb session create --socket "$SOCK"
ID=$OUT
case "$ID" in s-*) ;; *) bail "session create: rc=$RC $ERR";; esac

python3 - "$ID" "${FBCMD[@]}" exec --socket "$SOCK" -it -e 'PS1=PROMPT$ ' "$ID" -- bash --norc --noprofile -i <<'PY'
import fcntl, os, pty, select, signal, struct, sys, termios, time

cmd = sys.argv[2:]
def ok(name): print("ok - " + name, flush=True)
def fail(name, why): print("not ok - %s: %s" % (name, " ".join(str(why).split())[:300]), flush=True)

def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

pid, fd = pty.fork()
if pid == 0:
    # The child's terminal: 27 x 91, cooked, echo; fluebox exec -it runs on it.
    set_size(0, 27, 91)
    os.environ["TERM"] = "xterm"
    os.execvp(cmd[0], cmd)

buf = b""
def expect(text, timeout=30):
    """Read the terminal until text shows up (a condition, not a sleep)."""
    global buf
    end = time.monotonic() + timeout
    want = text.encode()
    while want not in buf:
        left = end - time.monotonic()
        if left <= 0:
            return False
        r, _, _ = select.select([fd], [], [], left)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return False
            if not chunk:
                return False
            buf += chunk
    i = buf.index(want) + len(want)
    seen, buf = buf[:i], buf[i:]
    expect.seen = seen.decode("utf-8", "replace")
    return True

def send(s):
    os.write(fd, s.encode())

if not expect("PROMPT$ "):
    fail("exec -it: an interactive shell starts", buf[-300:])
    os.kill(pid, signal.SIGKILL)
    sys.exit(0)
ok("exec -it: an interactive shell starts")

send("tty; stty size; echo END$((1))\r")
if expect("END1\r\n") and "/dev/pts/" in expect.seen and "27 91" in expect.seen:
    ok("the inside is a terminal of the host terminal's size")
else:
    fail("inside terminal and size", getattr(expect, "seen", buf))

# The host terminal is resized: the terminal inside follows.
expect("PROMPT$ ")
set_size(fd, 40, 132)
os.kill(pid, signal.SIGWINCH)  # a terminal emulator's resize does this too
deadline = time.monotonic() + 20
good = False
while time.monotonic() < deadline and not good:
    send("stty size; echo END$((2))\r")
    good = expect("END2\r\n") and "40 132" in expect.seen
    expect("PROMPT$ ")
ok("a resize of the host terminal reaches the inside") if good else fail("resize", expect.seen)

# Ctrl-C interrupts the foreground job inside; the shell (and fluebox) stay.
# Whether it lands in sh or in the sleep sh became, the job ends with 130.
# (The marker is computed so that the echo of the typed line does not match.)
send("sh -c 'echo START$((1)); exec sleep 300'\r")
expect("START1\r\n")
send("\x03")
if expect("PROMPT$ ", 30):
    send("echo rc=$?\r")
if expect("rc=130", 30):
    ok("Ctrl-C interrupts the inside foreground job (status 130), the shell stays")
else:
    fail("Ctrl-C", buf[-300:])
expect("PROMPT$ ")

# Job control: a background job is listed and can be brought back.
send("sleep 300 & jobs; kill %1; wait; echo END$((3))\r")
if expect("END3\r\n") and "Running" in expect.seen and "no job control" not in expect.seen:
    ok("the interactive shell has job control")
else:
    fail("job control", getattr(expect, "seen", buf))
expect("PROMPT$ ")

send("exit 7\r")
_, status = os.waitpid(pid, 0)
code = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8
ok("the exit status passes through (7)") if code == 7 else fail("exit status", code)

attrs = termios.tcgetattr(fd)
lflag = attrs[3]
if lflag & termios.ICANON and lflag & termios.ECHO:
    ok("the host terminal is back in canonical mode with echo")
else:
    fail("terminal restored", "lflag=%#x" % lflag)
os.close(fd)
PY

"${FBCMD[@]}" session rm --socket "$SOCK" "$ID" >/dev/null 2>&1
kill -TERM $SRV; wait $SRV
no_leftovers "terminals leave nothing behind"
