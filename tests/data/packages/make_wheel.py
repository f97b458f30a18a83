"""Builds a pure-Python wheel of tiny_py_server.py, version given, with no build
backend (nothing is fetched): python3 make_wheel.py OUT_DIR VERSION [NAME [REQUIRES...]]
(NAME defaults to tiny-py; its console script has the same name; each REQUIRES is a
Requires-Dist line)."""

import base64
import hashlib
import os
import sys
import zipfile

out_dir, version = sys.argv[1], sys.argv[2]
name = sys.argv[3] if len(sys.argv) > 3 else "tiny-py"
requires = "".join("Requires-Dist: %s\n" % r for r in sys.argv[4:])
dist = name.replace("-", "_")
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "tiny_py_server.py"), "rb") as f:
    server = f.read().replace(b'"tiny-py"', ('"%s"' % name).encode())
info = "%s-%s.dist-info" % (dist, version)
files = {
    dist + "/__init__.py": server,
    info + "/METADATA": ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
                         "Summary: A tiny stdio MCP server for tests\n%s" % (name, version, requires)).encode(),
    info + "/WHEEL": b"Wheel-Version: 1.0\nGenerator: make_wheel\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    info + "/entry_points.txt": ("[console_scripts]\n%s = %s:main\n" % (name, dist)).encode(),
}
record = []
for name, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append("%s,sha256=%s,%d" % (name, digest, len(data)))
record.append(info + "/RECORD,,")
files[info + "/RECORD"] = ("\n".join(record) + "\n").encode()
path = os.path.join(out_dir, "%s-%s-py3-none-any.whl" % (dist, version))
with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as whl:
    for name, data in files.items():
        # A fixed date: the same version always gives the same bytes.
        whl.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), data)
print(path)
