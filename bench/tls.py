#!/usr/bin/env python3
"""bench/tls.py — the relay with interception (issue 24), for `make bench`
(bench/run.sh, group "tls"): requests per second and MB/s through an
inspected HTTPS host (TLS terminated with the per-run CA, every request
read, a secret put in), against direct TLS to the same local server, and
against the relay passing the same TLS end to end (not inspected).

The server is bench/build/fbtls-source (tls_source.c: HTTP/1.1 over TLS on
127.0.0.1, one process per connection, a certificate from a test CA made
now with the openssl CLI). The client is curl, on the host (direct) and
inside `fluebox run` (relay, inspected), under the name bench.test mapped
with --egress-resolve. Each of the three fetches, interleaved, REPS times:

  1    one request of 0 bytes: the fixed cost (process, sandbox, handshakes)
  N    N requests of 1 KiB on one keep-alive connection
  big  one request of BIG bytes

requests/s = (N - 1) / (median(N) - median(1)); MB/s = BIG / (median(big) -
median(1)): the fixed cost of each way is taken out, so the ratios compare
what the relay adds per request and per byte. Appends the groups to --json
(the format of bench/fbbench.c) and Markdown tables to --md. Never asserts
anything."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

N = 200
BIG = 64 << 20


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def make_ca(d):
    def run(*a):
        subprocess.run(["openssl"] + list(a), check=True, capture_output=True)
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", d + "/ca.key", "-out", d + "/ca.pem", "-days", "2", "-subj", "/CN=fluebox bench CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
        d + "/srv.key", "-out", d + "/srv.csr", "-subj", "/CN=bench.test")
    with open(d + "/srv.ext", "w") as f:
        f.write("subjectAltName=DNS:bench.test\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    run("x509", "-req", "-in", d + "/srv.csr", "-CA", d + "/ca.pem", "-CAkey", d + "/ca.key",
        "-CAcreateserial", "-out", d + "/srv.pem", "-days", "2", "-extfile", d + "/srv.ext")
    for f in ("ca.pem", "srv.pem"):
        os.chmod(os.path.join(d, f), 0o644)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fluebox", required=True)
    ap.add_argument("--source", required=True, help="bench/build/fbtls-source")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--json", required=True)
    ap.add_argument("--md", required=True)
    a = ap.parse_args()
    curl = shutil.which("curl")
    if not curl or not shutil.which("openssl"):
        print("bench tls: needs curl and openssl", file=sys.stderr)
        return 1

    tmp = tempfile.mkdtemp(prefix="fbbench-tls.")
    os.chmod(tmp, 0o755)
    src = None
    try:
        make_ca(tmp)
        with open(tmp + "/token", "w") as f:
            f.write("bench-token-not-a-real-one\n")
        pf = tmp + "/port"
        src = subprocess.Popen([a.source, pf, tmp + "/srv.pem", tmp + "/srv.key"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(200):
            if os.path.exists(pf) or src.poll() is not None:
                break
            time.sleep(0.05)
        port = int(open(pf).read())
        host = "bench.test:%d" % port
        urls = {"1": ["https://%s/0" % host],
                "N": ["https://%s/1024?i=[1-%d]" % (host, N)],
                "big": ["https://%s/%d" % (host, BIG)]}
        run = [a.fluebox, "run", "--profile", "standard", "--allow-net", host,
               "--egress-resolve", "bench.test=127.0.0.1"]
        ways = {
            "direct": lambda u: [curl, "-sSf", "-o", "/dev/null", "--cacert", tmp + "/ca.pem",
                                 "--resolve", "%s:127.0.0.1" % host] + u,
            "relay": lambda u: run + ["--ro-bind", tmp + ":/bench", "--", "curl", "-sSf", "-o", "/dev/null",
                                      "--cacert", "/bench/ca.pem"] + u,
            "inspected": lambda u: run + ["--upstream-ca", tmp + "/ca.pem", "--secret",
                                          "BENCH_TOKEN=@%s/token:%s" % (tmp, host), "--", "sh", "-c",
                                          'exec curl -sSf -o /dev/null -H "Authorization: Bearer $BENCH_TOKEN" "$@"',
                                          "sh"] + u,
        }
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}
        cmds = {(w, k): f(urls[k]) for w, f in ways.items() for k in urls}
        times = {key: [] for key in cmds}
        fails = {key: 0 for key in cmds}
        last_err = {}
        order = list(cmds)
        for r in range(a.reps + 2):  # two warm-up rounds
            order = order[1:] + order[:1]
            for key in order:
                t0 = time.perf_counter()
                p = subprocess.run(cmds[key], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE)
                dt = (time.perf_counter() - t0) * 1000
                if p.returncode:
                    fails[key] += 1
                    last_err[key] = p.stderr.decode(errors="replace").strip().splitlines()[-1:]
                elif r >= 2:
                    times[key].append(dt)
        med = {k: statistics.median(v) if v else float("nan") for k, v in times.items()}

        def rate(w):
            dn = med[(w, "N")] - med[(w, "1")]
            db = med[(w, "big")] - med[(w, "1")]
            return ((N - 1) / (dn / 1000.0) if dn > 0 else float("nan"),
                    (BIG / 1e6) / (db / 1000.0) if db > 0 else float("nan"))
        rates = {w: rate(w) for w in ways}
        vs = []
        for (w, k), v in times.items():
            x = {"name": "%s-%s" % (w, k), "command": " ".join(cmds[(w, k)]), "failures": fails[(w, k)],
                 "samples": len(v)}
            if v:
                x.update({"median_ms": round(statistics.median(v), 3), "p90_ms": round(pct(v, 90), 3),
                          "p99_ms": round(pct(v, 99), 3), "mean_ms": round(statistics.mean(v), 3),
                          "min_ms": round(min(v), 3), "max_ms": round(max(v), 3)})
            vs.append(x)
        title = "relay with interception: HTTPS requests/s and MB/s"
        note = ("Server: bench/tls_source.c on 127.0.0.1 (HTTP/1.1 over TLS, a test CA made by the run). "
                "direct: curl on the host. relay: curl inside `fluebox run --allow-net`, TLS end to end "
                "through the relay. inspected: the same with a --secret for the host (TLS terminated with "
                "the per-run CA, every request read, the secret put in, TLS again to the server with "
                "--upstream-ca). requests/s: %d requests of 1 KiB on one keep-alive connection; MB/s: one "
                "body of %d MiB; each with the one-request run's time (process, sandbox, handshakes) "
                "taken out." % (N, BIG >> 20))
        rv = [{"name": w, "requests_per_s": round(rates[w][0], 1), "mb_per_s": round(rates[w][1], 1),
               "ratios": {"direct": {"requests": round(rates[w][0] / rates["direct"][0], 3),
                                     "mb": round(rates[w][1] / rates["direct"][1], 3)}}} for w in ways]
        with open(a.json, "a") as f:
            f.write(json.dumps({"title": title + " (times)", "kind": "time", "reps": a.reps, "warmup": 2,
                                "note": note, "variants": vs}) + "\n")
            f.write(json.dumps({"title": title, "kind": "rate", "reps": a.reps, "note": note,
                                "variants": rv}) + "\n")
        md = ["", "### %s" % title, "",
              "| way | requests/s | × direct | MB/s | × direct |", "|---|---:|---:|---:|---:|"]
        for x in rv:
            d = x["ratios"]["direct"]
            md.append("| %s | %.0f | %s | %.0f | %s |" % (
                x["name"], x["requests_per_s"], "—" if x["name"] == "direct" else "%.2f×" % d["requests"],
                x["mb_per_s"], "—" if x["name"] == "direct" else "%.2f×" % d["mb"]))
        md += ["", "| run | median ms | p90 ms | p99 ms | failures |", "|---|---:|---:|---:|---:|"]
        for x in vs:
            md.append("| %s | %s | %s | %s | %d |" % (x["name"], x.get("median_ms", "—"), x.get("p90_ms", "—"),
                                                    x.get("p99_ms", "—"), x["failures"]))
        md += ["", "%d interleaved rounds after 2 warm-up rounds. %s" % (a.reps, note)]
        for k, e in last_err.items():
            md.append("%s-%s failed: %s" % (k[0], k[1], " ".join(e)))
        md.append("")
        with open(a.md, "a") as f:
            f.write("\n".join(md) + "\n")
        print("\n".join(md))
        return 0
    finally:
        if src and src.poll() is None:
            src.terminate()
            src.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
