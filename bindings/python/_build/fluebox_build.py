"""A tiny in-tree PEP 517 build backend for the fluebox Python package.

Why: the package is pure Python and standard-library only, and it must install
with `pip install ./bindings/python` on machines that cannot reach PyPI. A
normal backend (setuptools, flit, hatchling) would be downloaded into pip's
isolated build environment first; this one needs nothing, so pip's build
isolation has nothing to fetch.

It writes a plain wheel (PEP 427) holding the `fluebox` directory, an sdist
(PEP 517/625), and an editable wheel (PEP 660, a .pth file pointing here).
Metadata comes from the [project] table of pyproject.toml; the version from
the repository's VERSION file when this directory is in the repository.

`make dist` calls build_binary_wheel (not a PEP 517 hook): the same package
with the static fluebox binary as fluebox/_bin/fluebox, found by the client
after FLUEBOX_BIN and before PATH. Its tag, py3-none-manylinux_2_17_x86_64
.musllinux_1_1_x86_64: the Python code is version-independent (py3, no ABI),
and the binary is linked statically, so it loads no C library at all: the
glibc 2.17 / musl 1.1 floors those tags promise are met by having no floor,
and the one real requirement, an x86-64 Linux kernel, is what the tags say.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = "fluebox"


def _project():
    """The [project] table, read with tomllib when present, else a small parser
    that understands the simple `key = "value"` / `key = [..]` lines we use."""
    path = os.path.join(HERE, "pyproject.toml")
    with open(path, "rb") as f:
        raw = f.read()
    try:
        import tomllib  # Python 3.11+

        return tomllib.loads(raw.decode("utf-8"))["project"]
    except ImportError:
        pass
    out, table = {}, None
    for line in raw.decode("utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^\[(.+)\]$", line)
        if m:
            table = m.group(1)
            continue
        if table != "project":
            continue
        m = re.match(r'^([A-Za-z_-]+)\s*=\s*"(.*)"$', line)
        if m:
            out[m.group(1)] = m.group(2)
            continue
        m = re.match(r"^([A-Za-z_-]+)\s*=\s*\[(.*)\]$", line)
        if m:
            out[m.group(1)] = re.findall(r'"([^"]*)"', m.group(2))
    return out


def _version(p):
    """The repository's VERSION (one place for the version), else pyproject's."""
    path = os.path.join(HERE, "..", "..", "VERSION")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return f.readline().strip()
    return p["version"]


def _metadata():
    p = _project()
    p["version"] = _version(p)
    lines = [
        "Metadata-Version: 2.1",
        "Name: %s" % p["name"],
        "Version: %s" % p["version"],
    ]
    if p.get("description"):
        lines.append("Summary: %s" % p["description"])
    if p.get("requires-python"):
        lines.append("Requires-Python: %s" % p["requires-python"])
    lic = p.get("license")
    if isinstance(lic, dict) and lic.get("text"):
        lines.append("License: %s" % lic["text"])
    for c in p.get("classifiers", []):
        lines.append("Classifier: %s" % c)
    body = ""
    readme = os.path.join(HERE, "README.md")
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            body = f.read()
    return p["name"], p["version"], "\n".join(lines) + "\n\n" + body


def _dist_info(name, version):
    return "%s-%s.dist-info" % (name.replace("-", "_"), version)


def _package_files():
    root = os.path.join(HERE, PKG)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            if fn.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(dirpath, fn)
            yield full, os.path.relpath(full, HERE).replace(os.sep, "/")


def _record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _write_wheel(directory, files, tag="py3-none-any", extra_meta=()):
    """files: list of (archive name, bytes[, mode]). Adds dist-info and RECORD."""
    name, version, metadata = _metadata()
    di = _dist_info(name, version)
    wheel_meta = "Wheel-Version: 1.0\nGenerator: fluebox_build\nRoot-Is-Purelib: %s\n" % (
        "true" if tag.endswith("-any") else "false")
    for t in tag.split("-")[2].split("."):
        wheel_meta += "Tag: py3-none-%s\n" % t
    files = [f if len(f) == 3 else (f[0], f[1], 0o644) for f in files] + [
        (di + "/METADATA", metadata.encode("utf-8"), 0o644),
        (di + "/WHEEL", wheel_meta.encode(), 0o644),
    ] + [(di + "/" + n, d, 0o644) for n, d in extra_meta]
    record = io.StringIO()
    for arc, data, _ in files:
        record.write("%s,%s,%d\n" % (arc, _record_hash(data), len(data)))
    record.write("%s/RECORD,,\n" % di)
    files.append((di + "/RECORD", record.getvalue().encode(), 0o644))
    whl = "%s-%s-%s.whl" % (name.replace("-", "_"), version, tag)
    stamp = time.gmtime(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")))[:6]
    with zipfile.ZipFile(os.path.join(directory, whl), "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data, mode in files:
            info = zipfile.ZipInfo(arc, date_time=stamp)
            info.create_system = 3  # Unix: the mode below is kept by pip and unzip
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return whl


# ---- PEP 517 hooks ---------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    name, version, metadata = _metadata()
    di = _dist_info(name, version)
    os.makedirs(os.path.join(metadata_directory, di), exist_ok=True)
    with open(os.path.join(metadata_directory, di, "METADATA"), "w", encoding="utf-8") as f:
        f.write(metadata)
    return di


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = []
    for full, arc in _package_files():
        with open(full, "rb") as f:
            files.append((arc, f.read()))
    return _write_wheel(wheel_directory, files)


BINARY_TAG = "py3-none-manylinux_2_17_x86_64.musllinux_1_1_x86_64"


def build_binary_wheel(wheel_directory, binary):
    """The platform wheel: the package plus the static binary (see the top)."""
    files = []
    for full, arc in _package_files():
        if arc.startswith(PKG + "/_bin/"):
            continue
        with open(full, "rb") as f:
            files.append((arc, f.read()))
    with open(binary, "rb") as f:
        files.append((PKG + "/_bin/fluebox", f.read(), 0o755))
    entry = b"[console_scripts]\nfluebox = fluebox.__main__:main\n"
    return _write_wheel(wheel_directory, files, BINARY_TAG, [("entry_points.txt", entry)])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, [("__editable__.fluebox.pth", (HERE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    name, version, _ = _metadata()
    base = "%s-%s" % (name.replace("-", "_"), version)
    path = os.path.join(sdist_directory, base + ".tar.gz")
    wanted = ["pyproject.toml", "README.md", "_build/fluebox_build.py"]
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as t:
        for rel in wanted:
            if os.path.exists(os.path.join(HERE, rel)):
                t.add(os.path.join(HERE, rel), arcname=base + "/" + rel)
        for full, arc in _package_files():
            t.add(full, arcname=base + "/" + arc)
        for d, _, fns in os.walk(os.path.join(HERE, "tests")):
            for fn in fns:
                if fn.endswith(".py"):
                    full = os.path.join(d, fn)
                    t.add(full, arcname=base + "/" + os.path.relpath(full, HERE))
        _, _, meta = _metadata()
        data = meta.encode("utf-8")
        info = tarfile.TarInfo(base + "/PKG-INFO")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return os.path.basename(path)
