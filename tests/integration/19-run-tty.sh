#!/bin/bash
# 19-run-tty.sh — `fluebox run -t`: a one-shot cold run on a terminal of the
# sandbox's own devpts, driven from a pseudo-terminal this test opens
# (python3's pty module) as a person at a terminal would: the command sees a
# terminal of the caller's size, a resize of the caller's terminal reaches
# it, Ctrl-C interrupts the inside foreground job (not fluebox), TIOCSTI on
# that terminal is denied, the exit status passes through (and a timeout's
# 124), the caller's terminal is back in its own mode afterwards; with stdin
# not a terminal the pty is still there and stdin's data (and its end)
# reach the command; input typed ahead is kept; without -t what the command
# changes on the caller's terminal (stty) is put back at the end, after a
# signal too.
. "$ROOT/tests/lib.sh"

command -v python3 >/dev/null || skip_all "missing: python3"
command -v bash >/dev/null || skip_all "missing: bash"
if [ "$FB_AS" = root ]; then FBCMD=("$FB"); else
  FBCMD=(setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp "$FB")
fi
chmod 755 "$T"

python3 - "${FBCMD[@]}" <<'PY'
import fcntl, os, pty, select, signal, struct, sys, termios, time

fb = sys.argv[1:]
def ok(name): print("ok - " + name, flush=True)
def fail(name, why): print("not ok - %s: %s" % (name, " ".join(str(why).split())[:300]), flush=True)

def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

def start(args):
    pid, fd = pty.fork()
    if pid == 0:
        # The caller's terminal: 27 x 91, cooked, echo; fluebox run -t on it.
        set_size(0, 27, 91)
        os.environ["TERM"] = "xterm"
        os.execvp(fb[0], fb + args)
    return pid, fd

class Term:
    def __init__(self, fd):
        self.fd, self.buf, self.seen = fd, b"", ""
    def expect(self, text, timeout=30):
        """Read the terminal until text shows up (a condition, not a sleep)."""
        end = time.monotonic() + timeout
        want = text.encode()
        while want not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                return False
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    return False
                if not chunk:
                    return False
                self.buf += chunk
        i = self.buf.index(want) + len(want)
        self.seen, self.buf = self.buf[:i].decode("utf-8", "replace"), self.buf[i:]
        return True
    def send(self, s):
        os.write(self.fd, s.encode())
    def rest(self):
        """Everything until the other side closes."""
        while True:
            r, _, _ = select.select([self.fd], [], [], 30)
            if not r:
                break
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.buf += chunk
        return self.buf.decode("utf-8", "replace")

def status(pid):
    _, st = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(st) if hasattr(os, "waitstatus_to_exitcode") else st >> 8

def restored(fd, name):
    lflag = termios.tcgetattr(fd)[3]
    if lflag & termios.ICANON and lflag & termios.ECHO:
        ok(name)
    else:
        fail(name, "lflag=%#x" % lflag)

# 1. An interactive shell on the terminal.
pid, fd = start(["run", "-t", "--env", "PS1=PROMPT$ ", "--", "bash", "--norc", "--noprofile", "-i"])
t = Term(fd)
if not t.expect("PROMPT$ "):
    fail("run -t: an interactive shell starts", t.buf[-300:])
    os.kill(pid, signal.SIGKILL)
    sys.exit(0)
ok("run -t: an interactive shell starts")
lflag = termios.tcgetattr(fd)[3]
if lflag & (termios.ICANON | termios.ECHO | termios.ISIG):
    fail("the caller's terminal is raw while the command runs", "lflag=%#x" % lflag)
else:
    ok("the caller's terminal is raw while the command runs (keys, Ctrl-C too, go inside)")

t.send("test -t 0 && test -t 1 && test -t 2 && echo TTY$((1)); tty; stty size; echo END$((1))\r")
if t.expect("END1\r\n") and "TTY1" in t.seen and "/dev/pts/" in t.seen:
    ok("stdin, stdout and stderr inside are a terminal of the sandbox's devpts")
else:
    fail("inside terminal", t.seen)
if "27 91" in t.seen:
    ok("the window size inside is the caller's (27 x 91)")
else:
    fail("window size", t.seen)

# The caller's terminal is resized: the terminal inside follows.
t.expect("PROMPT$ ")
set_size(fd, 40, 132)
os.kill(pid, signal.SIGWINCH)  # a terminal emulator's resize does this too
deadline = time.monotonic() + 20
good = False
while time.monotonic() < deadline and not good:
    t.send("stty size; echo END$((2))\r")
    good = t.expect("END2\r\n") and "40 132" in t.seen
    t.expect("PROMPT$ ")
ok("a resize of the caller's terminal reaches the inside") if good else fail("resize", t.seen)

# A SIGWINCH trap inside sees it (the kernel's, on the terminal's size change).
t.send("trap 'echo WINCH$((3))' WINCH; echo END$((3))\r")
t.expect("END3\r\n")
t.expect("PROMPT$ ")
set_size(fd, 30, 100)
os.kill(pid, signal.SIGWINCH)
# The keys may reach the relay before fluebox handles its SIGWINCH: ask
# again until the new size shows (a condition, not a sleep).
deadline = time.monotonic() + 20
seen = ""
while time.monotonic() < deadline and not ("30 100" in seen and "WINCH3" in seen):
    t.send("stty size; echo END$((4))\r")
    t.expect("END4\r\n")
    seen += t.seen
    t.expect("PROMPT$ ")
    seen += t.seen
if "30 100" in seen and "WINCH3" in seen:
    ok("the foreground group inside gets SIGWINCH on a resize")
else:
    fail("SIGWINCH inside", seen)

# Ctrl-C interrupts the foreground job inside; the shell (and fluebox) stay.
t.send("sh -c 'echo START$((1)); exec sleep 300'\r")
t.expect("START1\r\n")
t.send("\x03")
if t.expect("PROMPT$ ", 30):
    t.send("echo rc=$?\r")
if t.expect("rc=130", 30):
    ok("Ctrl-C interrupts the inside foreground job (status 130), the shell stays")
else:
    fail("Ctrl-C", t.buf[-300:])
t.expect("PROMPT$ ")

# TIOCSTI (pushing input into a terminal) stays denied on this terminal.
t.send("python3 -c \"import fcntl, termios\ntry:\n    fcntl.ioctl(0, termios.TIOCSTI, b'x'); print('TIOCSTI ' + 'allowed')\n"
       "except OSError as e:\n    print('TIOCSTI ' + 'denied %d' % e.errno)\"; echo END$((5))\r")
if t.expect("END5\r\n") and ("TIOCSTI denied %d" % 1) in t.seen:
    ok("TIOCSTI on the terminal is denied (EPERM)")
else:
    fail("TIOCSTI", t.seen)
t.expect("PROMPT$ ")

t.send("exit 7\r")
code = status(pid)
ok("the exit status passes through (7)") if code == 7 else fail("exit status", code)
restored(fd, "the caller's terminal is back in canonical mode with echo")
os.close(fd)

# 2. A timeout ends it (124) and the terminal is put back all the same.
pid, fd = start(["run", "-t", "--timeout", "2s", "--", "sh", "-c", "echo UP$((1)); exec sleep 300"])
t = Term(fd)
t.expect("UP1")
code = status(pid)
ok("run -t --timeout: exit 124") if code == 124 else fail("timeout", code)
restored(fd, "after a timeout the caller's terminal is restored")
os.close(fd)

# 3. SIGTERM to fluebox: forwarded, the command dies of it, terminal restored.
pid, fd = start(["run", "-t", "--", "sh", "-c", "echo UP$((2)); exec sleep 300"])
t = Term(fd)
t.expect("UP2")
os.kill(pid, signal.SIGTERM)
code = status(pid)
ok("run -t and SIGTERM: exit 143") if code == 143 else fail("SIGTERM", code)
restored(fd, "after a signal the caller's terminal is restored")
os.close(fd)

# 4. Typed ahead: keys typed before fluebox puts the terminal in raw mode
# (or a line piped in under script(1)) reach the command; none is dropped.
pid, fd = pty.fork()
if pid == 0:
    os.execvp(fb[0], fb + ["run", "-t", "--", "sh", "-c", "IFS= read -r l; echo \"GOT<$l>\"; exit 3"])
os.write(fd, b"typed-ahead\n")  # before the run starts: it waits in the terminal
t = Term(fd)
if t.expect("GOT<typed-ahead>", 30):
    ok("run -t: input typed ahead before the run started reaches the command")
    code = status(pid)
    ok("  ... and the run ends (exit 3)") if code == 3 else fail("typed ahead: exit", code)
else:
    fail("run -t: input typed ahead", "lost: %r" % t.buf[-200:])
    os.kill(pid, signal.SIGKILL)
    status(pid)
os.close(fd)

# 5. Without -t the command shares the caller's terminal: what it changes
# there (echo, canonical mode, the interrupt key) is put back at the end.
def settings_back(fd, name):
    a = termios.tcgetattr(fd)
    if a[3] & termios.ICANON and a[3] & termios.ECHO and a[6][termios.VINTR] == b"\x03":
        ok(name)
    else:
        fail(name, "lflag=%#x intr=%r" % (a[3], a[6][termios.VINTR]))

pid, fd = pty.fork()
if pid == 0:
    os.execvp(fb[0], fb + ["run", "--", "sh", "-c", "stty -echo -icanon intr undef; echo CHANGED$((1))"])
t = Term(fd)
t.expect("CHANGED1")
code = status(pid)
ok("run without -t: stty inside runs (exit 0)") if code == 0 else fail("stty run", code)
settings_back(fd, "run without -t: the caller's terminal is put back (echo, canonical, Ctrl-C)")
os.close(fd)

# ... also when fluebox ends on a signal: SIGTERM (forwarded, exit 143) and
# SIGALRM (fatal to fluebox itself).
for sig, want in ((signal.SIGTERM, 143), (signal.SIGALRM, -signal.SIGALRM)):
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(fb[0], fb + ["run", "--", "sh", "-c", "stty -echo -icanon intr undef; echo CHANGED$((2)); exec sleep 300"])
    t = Term(fd)
    t.expect("CHANGED2")
    lflag = termios.tcgetattr(fd)[3]
    if lflag & termios.ECHO:
        fail("%s: the command changed the terminal" % sig.name, "lflag=%#x" % lflag)
    os.kill(pid, sig)
    code = status(pid)
    ok("run without -t and %s: exit %d" % (sig.name, want)) if code == want else fail("%s exit" % sig.name, code)
    settings_back(fd, "run without -t: after %s the caller's terminal is put back" % sig.name)
    os.close(fd)
PY

# stdin not a terminal: the pty is there all the same, stdin's data and its
# end reach the command through it.
OUTF=$T/pipe.out
printf 'one\ntwo\n' | "${FBCMD[@]}" run -t -- sh -c 'test -t 0 && test -t 1 && echo TTY; cat; echo RC=$?' >"$OUTF" 2>"$T/pipe.err"
RC=$?
if [ $RC = 0 ] && grep -q '^TTY' "$OUTF" && [ "$(grep -c '^two' "$OUTF")" -ge 1 ] && grep -q 'RC=0' "$OUTF"; then
  ok "run -t with stdin a pipe: a terminal inside, the data and its end reach the command"
else
  fail "run -t with a pipe" "rc=$RC $(tr '\r\n' '  ' <"$OUTF") $(cat "$T/pipe.err")"
fi
run_fb run -t -- seq 1 20000
if [ "$RC" = 0 ] && [ "$(printf %s "$OUT" | tr -d '\r' | tail -n 1)" = 20000 ] && [ "$(printf %s "$OUT" | wc -l)" -ge 19999 ]; then
  ok "run -t with stdout a file: all of the output arrives"
else
  fail "run -t output to a file" "rc=$RC $(printf %s "$OUT" | tail -c 100) $ERR"
fi
expect_rc "run -t with stdin /dev/null: the exit status passes through" 5 run -t -- sh -c 'exit 5'

no_leftovers "run -t leaves nothing behind"
