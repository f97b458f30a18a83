"""Writes a source distribution by hand (nothing is built or fetched):
python3 make_sdist.py OUT_DIR NAME VERSION MARKER static|dynamic [REQUIRES...]

Its PKG-INFO is Metadata-Version 2.2, with `Dynamic: Requires-Dist` when asked. Its
build backend is in the archive itself (no build requirements, so uv can build it
offline when it installs it) and appends a line to MARKER each time it runs: the hook
and $BUILT_BY ("resolver" when unset), so a test sees whether and by whom it ran.
setup.py does the same if anything executes it."""

import io
import os
import sys
import tarfile

out_dir, name, version, marker, kind = sys.argv[1:6]
requires = sys.argv[6:]
dist = name.replace("-", "_")
base = "%s-%s" % (dist, version)
pkg_info = "Metadata-Version: 2.2\nName: %s\nVersion: %s\n" % (name, version)
if kind == "dynamic":
    pkg_info += "Dynamic: Requires-Dist\n"
pkg_info += "".join("Requires-Dist: %s\n" % r for r in requires)
mark = (
    "import os\n"
    "def _mark(hook):\n"
    "    with open(%r, 'a') as f:\n"
    "        f.write(hook + ' ' + os.environ.get('BUILT_BY', 'resolver') + '\\n')\n"
) % marker
backend = mark + '''
import base64, hashlib, zipfile

NAME, VERSION, DIST, REQUIRES = %r, %r, %r, %r


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _mark("build_wheel")
    info = "%%s-%%s.dist-info" %% (DIST, VERSION)
    files = {
        DIST + "/__init__.py": b"",
        info + "/METADATA": ("Metadata-Version: 2.1\\nName: %%s\\nVersion: %%s\\n%%s" %% (
            NAME, VERSION, "".join("Requires-Dist: %%s\\n" %% r for r in REQUIRES))).encode(),
        info + "/WHEEL": b"Wheel-Version: 1.0\\nGenerator: make_sdist\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%%s,sha256=%%s,%%d" %% (path, digest, len(data)))
    record.append(info + "/RECORD,,")
    files[info + "/RECORD"] = ("\\n".join(record) + "\\n").encode()
    filename = "%%s-%%s-py3-none-any.whl" %% (DIST, VERSION)
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w") as whl:
        for path, data in files.items():
            whl.writestr(path, data)
    return filename
''' % (name, version, dist, requires)
files = {
    base + "/PKG-INFO": pkg_info,
    base + "/pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n',
    base + "/backend.py": backend,
    base + "/setup.py": mark + "_mark('setup.py')\n",
}
path = os.path.join(out_dir, base + ".tar.gz")
with tarfile.open(path, "w:gz", format=tarfile.USTAR_FORMAT) as tar:
    for member, text in files.items():
        data = text.encode()
        entry = tarfile.TarInfo(member)
        entry.size = len(data)
        entry.mtime = 1767225600
        tar.addfile(entry, io.BytesIO(data))
print(path)
