#!/usr/bin/env python3
"""Client side of the network tests; runs INSIDE the sandbox (stdlib only).

Each subcommand prints one result line and exits 0 when it got what it
expected, 1 otherwise. Every socket has a timeout so a broken relay makes a
test fail instead of hang.
"""
import hashlib
import random
import socket
import ssl
import struct
import sys
import threading
import urllib.request

T = 60  # seconds; generous, only there to turn a hang into a failure


def ctx_for(cafile):
    return ssl.create_default_context(cafile=cafile) if cafile else None


def fetch(url, cafile=None):
    with urllib.request.urlopen(url, context=ctx_for(cafile), timeout=T) as r:
        return r.read()


def cmd_get(url, cafile=""):
    """urllib GET; prints the body."""
    sys.stdout.write(fetch(url, cafile or None).decode(errors="replace"))
    return 0


def cmd_parallel(url, n, sha, cafile=""):
    """n concurrent GETs of url; every body must hash to sha."""
    n = int(n)
    results = [None] * n
    barrier = threading.Barrier(n)

    def one(i):
        try:
            barrier.wait(timeout=T)
            results[i] = hashlib.sha256(fetch(url, cafile or None)).hexdigest()
        except Exception as e:  # noqa: BLE001 - reported below
            results[i] = "error: %r" % e

    ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    good = sum(1 for r in results if r == sha)
    print("parallel %d/%d intact" % (good, n))
    for r in results:
        if r != sha:
            print("  bad:", r)
            break
    return 0 if good == n else 1


def http_get_raw(host, port, path, tls_ctx=None):
    s = socket.create_connection((host, int(port)), timeout=T)
    if tls_ctx:
        s = tls_ctx.wrap_socket(s, server_hostname=host)
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path, host)).encode())
    return s


def cmd_stall(host, port, big_path, small_url, cafile=""):
    """Open a download of big_path and never read it; small_url must still
    work, several times."""
    ctx = ctx_for(cafile or None)
    stalled = [http_get_raw(host, port, big_path, ctx) for _ in range(3)]
    for _ in range(5):
        body = fetch(small_url, cafile or None)
        if not body.startswith(b"hello"):
            print("unexpected body", body[:100])
            return 1
    print("ok: 5 fetches while 3 downloads were stalled")
    for s in stalled:
        s.close()
    return 0


def cmd_upload_stall(host, port, small_url):
    """Push data at a server that never reads until the send blocks, then
    small_url must still work."""
    s = socket.create_connection((host, int(port)), timeout=T)
    s.setblocking(False)
    sent = 0
    chunk = b"x" * 65536
    while True:
        try:
            sent += s.send(chunk)
        except BlockingIOError:
            break
    for _ in range(5):
        body = fetch(small_url)
        if not body.startswith(b"hello"):
            print("unexpected body", body[:100])
            return 1
    print("ok: send blocked after %d bytes, 5 fetches went through" % sent)
    s.close()
    return 0


def cmd_tls(host, port, sni, cafile):
    """TLS to host:port presenting sni; prints connected/refused."""
    try:
        s = socket.create_connection((host, int(port)), timeout=T)
        ctx = ssl.create_default_context(cafile=cafile)
        ss = ctx.wrap_socket(s, server_hostname=sni)
        ss.sendall(("GET /hello HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % sni).encode())
        data = ss.recv(4096)
        print("connected:", data.split(b"\r\n")[0].decode(errors="replace"))
        return 0
    except (OSError, ssl.SSLError) as e:
        print("refused:", repr(e))
        return 1


def cmd_raw(host, port, payload):
    """Send payload (Python escapes allowed) to host:port; print the answer."""
    try:
        s = socket.create_connection((host, int(port)), timeout=T)
        s.sendall(payload.encode().decode("unicode_escape").encode("latin-1"))
        data = s.recv(4096)
        print("answer:", data[:200])
        return 0 if data else 1
    except OSError as e:
        print("refused:", repr(e))
        return 1


def cmd_rawall(host, port, payload):
    """Send payload (Python escapes allowed) to host:port, read until the
    connection ends; print every "hello ..." line of the answers and how it
    ended (closed, reset)."""
    s = socket.create_connection((host, int(port)), timeout=T)
    s.sendall(payload.encode().decode("unicode_escape").encode("latin-1"))
    data, end = b"", "closed"
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    except ConnectionResetError:
        end = "reset"
    except socket.timeout:
        end = "timeout"
    for line in data.split(b"\n"):
        if line.startswith(b"hello "):
            print(line.decode(errors="replace").strip())
    print("end:", end)
    return 0


def cmd_ws(host, port, path, then=""):
    """An upgrade request to path; after a 101, send bytes and expect them
    back. then (escapes allowed): bytes to send instead of the echo test
    when the answer is not 101. Prints what happened."""
    s = socket.create_connection((host, int(port)), timeout=T)
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\n\r\n" % (path, host)).encode())
    head = b""
    try:
        while b"\r\n\r\n" not in head:
            b = s.recv(1)
            if not b:
                break
            head += b
    except ConnectionResetError:
        print("reset before the answer")
        return 1
    status = head.split(b" ")[1].decode() if head.count(b" ") else "?"
    if status == "101":
        msg = bytes(range(256)) * 4 + b"GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n"
        s.sendall(msg)
        got = b""
        while len(got) < len(msg):
            b = s.recv(65536)
            if not b:
                break
            got += b
        print("101, echo", "intact" if got == msg else "broken")
        return 0
    print("answer", status)
    if then:
        s.sendall(then.encode().decode("unicode_escape").encode("latin-1"))
        rest = b""
        try:
            while b"hello other" not in rest:
                b = s.recv(65536)
                if not b:
                    break
                rest += b
            print("then: closed" if b"hello other" not in rest else "then: passed")
        except ConnectionResetError:
            print("then: reset")
    return 0


def tcp_queues(port):
    """From /proc/net/tcp (this network namespace): the sum of receive and
    send queue bytes of sockets whose local port is port, and of those whose
    remote port is port."""
    local = remote = 0
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            v = line.split()
            lport = int(v[1].split(":")[1], 16)
            rport = int(v[2].split(":")[1], 16)
            tx, rx = (int(x, 16) for x in v[4].split(":"))
            if lport == port:
                local += tx + rx
            elif rport == port:
                remote += tx + rx
    return local, remote


def cmd_hold(host, down_port, up_port, n, sync):
    """n connections to down_port that never read (receive buffer raised
    first) and n to up_port that send without end; once sync/measure exists,
    write sync/inside: the queue bytes of the relay's ends of those
    connections in this namespace (the supervisor's sockets) and of our own."""
    import os, time
    n = int(n)
    conns = []
    # Resolved once, first: once the connections below fill what the
    # sandbox's sockets may hold (memory.kmem.tcp on cgroup v1), a DNS
    # answer has no room left either.
    host = socket.gethostbyname(host)
    for _ in range(n):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
        s.settimeout(T)
        s.connect((host, int(down_port)))
        conns.append(s)

    def pump(s):
        block = b"y" * 65536
        try:
            while True:
                s.sendall(block)
        except OSError:
            pass
    for _ in range(n):
        s = socket.create_connection((host, int(up_port)), timeout=None)
        conns.append(s)
        threading.Thread(target=pump, args=(s,), daemon=True).start()
    open(os.path.join(sync, "opened"), "w").close()
    for _ in range(6000):  # the host side says when to look (300 s at most)
        if os.path.exists(os.path.join(sync, "measure")):
            break
        time.sleep(0.05)
    rd, od = tcp_queues(int(down_port))
    ru, ou = tcp_queues(int(up_port))
    with open(os.path.join(sync, "inside.tmp"), "w") as f:
        f.write("relay_in=%d own=%d\n" % (rd + ru, od + ou))
    os.rename(os.path.join(sync, "inside.tmp"), os.path.join(sync, "inside"))
    print("held %d connections" % (2 * n), flush=True)
    os._exit(0)


def cmd_connect(host, port, hostname=None):
    """A bare TCP connect + one HTTP request: prints connected/refused."""
    try:
        s = socket.create_connection((host, int(port)), timeout=10)
        s.sendall(b"GET / HTTP/1.1\r\nHost: %s\r\n\r\n" % (hostname or host).encode())
        data = s.recv(100)
        if data:
            print("connected:", data[:60])
            return 0
        print("refused: closed without data")
        return 1
    except OSError as e:
        print("refused:", repr(e))
        return 1


def cmd_banner(host, port):
    s = socket.create_connection((host, int(port)), timeout=T)
    f = s.makefile("rb")
    b = f.readline()
    s.sendall(b"ping\r\n")
    e = f.readline()
    print("banner:", b.strip().decode(), "/", e.strip().decode())
    return 0 if b.startswith(b"220") and e.startswith(b"echo ping") else 1


def dns_query(name, qtype, qid=0x1234):
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\0" + struct.pack(">HH", qtype, 1)


TYPES = {"A": 1, "AAAA": 28, "TXT": 16, "MX": 15, "ANY": 255, "HTTPS": 65}
RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}


def udp_ask(pkt, timeout=5):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(timeout)
    s.sendto(pkt, ("127.0.0.53", 53))
    try:
        return s.recv(4096)
    except socket.timeout:
        return None
    finally:
        s.close()


def cmd_dns(name, qtype, transport="udp"):
    """Print 'RCODE nanswers' for one query."""
    pkt = dns_query(name, TYPES[qtype])
    if transport == "tcp":
        s = socket.create_connection(("127.0.0.53", 53), timeout=T)
        s.sendall(struct.pack(">H", len(pkt)) + pkt)
        n = struct.unpack(">H", s.recv(2))[0]
        r = b""
        while len(r) < n:
            r += s.recv(n - len(r))
    else:
        r = udp_ask(pkt)
    if not r:
        print("no answer")
        return 1
    print(RCODES.get(r[3] & 0xF, r[3] & 0xF), struct.unpack(">H", r[6:8])[0])
    return 0


def cmd_viadns(name, port):
    """Ask the sandbox's resolver directly (not /etc/hosts), connect to the
    answer, send an HTTP request; prints connected/refused."""
    r = udp_ask(dns_query(name, 1))
    if not r or r[3] & 0xF or struct.unpack(">H", r[6:8])[0] != 1:
        print("refused: no answer")
        return 1
    return cmd_connect(socket.inet_ntoa(r[-4:]), port, name)


def cmd_dnsfuzz(count, seed="1"):
    """Throw malformed queries at the resolver over UDP and TCP; then a valid
    query must still be answered."""
    rnd = random.Random(int(seed))
    good = dns_query("fuzz.example", 1)
    crafted = [
        b"", b"\x00", b"\x12\x34", good[:11], good[:12], good[:13], good[:-1], good[:-4],
        good[:2] + b"\x81\x00" + good[4:],               # a response
        good[:2] + b"\x28\x00" + good[4:],               # opcode 5
        good[:4] + b"\x00\x00" + good[6:],               # no question
        good[:4] + b"\x00\x02" + good[6:],               # two questions
        good[:4] + b"\x00\x01\x00\x01" + good[8:],       # an answer in a query
        good[:12] + b"\xc0\x0c\x00\x01\x00\x01",         # pointer loop
        good[:12] + b"\x3f" + b"a" * 10,                 # label past the end
        good[:12] + b"\x40" + b"a" * 64 + b"\0\0\1\0\1", # label type 01
        good[:12] + (b"\x3f" + b"a" * 63) * 5 + b"\0\0\1\0\1",  # name > 255
        good[:12] + b"\x03a\x00b\x03c.d\x00\x00\x10\x00\x01",   # NUL and dot in labels
        good[:12] + b"\0\0\1\0\3",                       # root, class CH
        good + b"\0" * 3000,                             # trailing junk
    ]
    pkts = crafted + [bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 600)))
                      for _ in range(int(count))]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for p in pkts:
        s.sendto(p, ("127.0.0.53", 53))
    s.sendto(b"\x00" * 5000, ("127.0.0.53", 53))
    s.close()
    for p in crafted + [b"\xff\xff", b"\x00\x01\x00", b"\x00\x00"]:
        try:
            t = socket.create_connection(("127.0.0.53", 53), timeout=5)
            t.sendall(struct.pack(">H", len(p)) + p if p[:2] not in (b"\xff\xff",) else p)
            t.settimeout(1)
            try:
                t.recv(4096)
            except OSError:
                pass
            t.close()
        except OSError:
            pass
    r = udp_ask(dns_query("after.fuzz", 1, 0x4242))
    ok = r is not None and r[:2] == b"\x42\x42"
    print("resolver %s after %d malformed packets" % ("answers" if ok else "is gone", len(pkts)))
    return 0 if ok else 1


def cmd_dnsflood(count, suffix, window="64"):
    """Send count A queries for distinct names q<i>.suffix over UDP, keeping
    up to window unanswered; prints how many were answered. A lost datagram
    is given up on after a second without replies."""
    count, window = int(count), int(window)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect(("127.0.0.53", 53))
    s.settimeout(1)
    sent = answered = 0
    while answered < count:
        while sent < count and sent - answered < window:
            s.send(dns_query("q%d.%s" % (sent, suffix), 1, sent & 0xFFFF))
            sent += 1
        try:
            s.recv(4096)
            answered += 1
        except socket.timeout:
            if sent == count:
                break
            answered = sent  # a datagram was lost: go on
    print("flood %d sent %d answered" % (sent, answered))
    return 0


def cmd_refusals(count, host, port):
    """count TCP connections to host:port, each refused by the relay; prints
    how many were."""
    refused = 0
    for _ in range(int(count)):
        try:
            c = socket.create_connection((host, int(port)), timeout=T)
            c.sendall(b"x")
            refused += c.recv(1) == b""
            c.close()
        except OSError:
            refused += 1
    print("refused %d" % refused)
    return 0


def main():
    cmd = sys.argv[1].replace("-", "_")
    sys.exit(globals()["cmd_" + cmd](*sys.argv[2:]))


if __name__ == "__main__":
    main()
