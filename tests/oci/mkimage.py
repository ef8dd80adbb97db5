#!/usr/bin/env python3
"""mkimage.py OUT.tar NAME [CMD-JSON] — an OCI image (image-layout tar, for `ctr images
import`) of one layer: busybox-static at /bin/busybox with its applets as
symlinks, /etc/passwd and /etc/group, and /tmp. Built from the host's
Debian busybox-static package, offline. CMD-JSON: the image's command (a
JSON list; default ["/bin/sh"]), e.g. a pod's pause image.
mkimage.py --rootfs OUT.tar — the layer alone, a plain root file system tar
(for `docker import`)."""
import hashlib, io, json, os, shutil, subprocess, sys, tarfile, time

rootfs_only = sys.argv[1] == "--rootfs"
if rootfs_only:
    out, name, cmd = sys.argv[2], "", []
else:
    out, name = sys.argv[1], sys.argv[2]
    cmd = json.loads(sys.argv[3]) if len(sys.argv) > 3 else ["/bin/sh"]
busybox = shutil.which("busybox") or "/bin/busybox"
applets = subprocess.run([busybox, "--list"], capture_output=True, text=True, check=True).stdout.split()

def add(tf, name, data=None, mode=0o644, kind=tarfile.REGTYPE, link=""):
    ti = tarfile.TarInfo(name)
    ti.mode, ti.type, ti.linkname, ti.mtime = mode, kind, link, 0
    if data is not None:
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    else:
        tf.addfile(ti)

layer = io.BytesIO()
with tarfile.open(fileobj=layer, mode="w", format=tarfile.GNU_FORMAT) as tf:
    for d in ("bin", "etc", "tmp", "root", "proc", "sys", "dev"):
        add(tf, d, mode=0o1777 if d == "tmp" else 0o755, kind=tarfile.DIRTYPE)
    with open(busybox, "rb") as f:
        add(tf, "bin/busybox", f.read(), mode=0o755)
    for a in sorted(set(applets)):
        if a != "busybox":
            add(tf, "bin/" + a, kind=tarfile.SYMTYPE, link="busybox")
    add(tf, "etc/passwd", b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")
    add(tf, "etc/group", b"root:x:0:\nnogroup:x:65534:\n")
layer = layer.getvalue()
if rootfs_only:
    with open(out, "wb") as f:
        f.write(layer)
    sys.exit(0)

def blob(data):
    return "sha256:" + hashlib.sha256(data).hexdigest(), data

layer_d, _ = blob(layer)
config = json.dumps({
    "architecture": "amd64", "os": "linux",
    "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
               "Cmd": cmd, "WorkingDir": "/"},
    "rootfs": {"type": "layers", "diff_ids": [layer_d]},
}, sort_keys=True).encode()
config_d, _ = blob(config)
manifest = json.dumps({
    "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_d, "size": len(config)},
    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer_d, "size": len(layer)}],
}, sort_keys=True).encode()
manifest_d, _ = blob(manifest)
index = json.dumps({
    "schemaVersion": 2,
    "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifest_d,
                   "size": len(manifest), "platform": {"architecture": "amd64", "os": "linux"},
                   "annotations": {"org.opencontainers.image.ref.name": name}}],
}).encode()

with tarfile.open(out, "w") as tf:
    add(tf, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
    add(tf, "index.json", index)
    for d, data in ((layer_d, layer), (config_d, config), (manifest_d, manifest)):
        add(tf, "blobs/sha256/" + d.split(":")[1], data)
