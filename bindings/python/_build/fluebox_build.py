"""A tiny in-tree PEP 517 build backend for the fluebox Python package.

Why: the package is pure Python and standard-library only, and it must install
with `pip install ./bindings/python` on machines that cannot reach PyPI. A
normal backend (setuptools, flit, hatchling) would be downloaded into pip's
isolated build environment first; this one needs nothing, so pip's build
isolation has nothing to fetch.

It writes a plain wheel (PEP 427) holding the `fluebox` directory, an sdist
(PEP 517/625), and an editable wheel (PEP 660, a .pth file pointing here).
Metadata comes from the [project] table of pyproject.toml.
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


def _metadata():
    p = _project()
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


def _write_wheel(directory, files):
    """files: list of (archive name, bytes). Adds dist-info and RECORD."""
    name, version, metadata = _metadata()
    di = _dist_info(name, version)
    wheel_meta = (
        "Wheel-Version: 1.0\nGenerator: fluebox_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    files = list(files) + [
        (di + "/METADATA", metadata.encode("utf-8")),
        (di + "/WHEEL", wheel_meta.encode()),
    ]
    record = io.StringIO()
    for arc, data in files:
        record.write("%s,%s,%d\n" % (arc, _record_hash(data), len(data)))
    record.write("%s/RECORD,,\n" % di)
    files.append((di + "/RECORD", record.getvalue().encode()))
    whl = "%s-%s-py3-none-any.whl" % (name.replace("-", "_"), version)
    stamp = time.gmtime(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")))[:6]
    with zipfile.ZipFile(os.path.join(directory, whl), "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in files:
            info = zipfile.ZipInfo(arc, date_time=stamp)
            info.external_attr = 0o644 << 16
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
