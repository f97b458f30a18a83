"""Builds a pure-Python wheel of tiny_py_server.py, version given, with no build
backend (nothing is fetched): python3 make_wheel.py OUT_DIR VERSION"""

import base64
import hashlib
import os
import sys
import zipfile

out_dir, version = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "tiny_py_server.py"), "rb") as f:
    server = f.read()
info = "tiny_py-%s.dist-info" % version
files = {
    "tiny_py/__init__.py": server,
    info + "/METADATA": ("Metadata-Version: 2.1\nName: tiny-py\nVersion: %s\n"
                         "Summary: A tiny stdio MCP server for tests\n" % version).encode(),
    info + "/WHEEL": b"Wheel-Version: 1.0\nGenerator: make_wheel\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    info + "/entry_points.txt": b"[console_scripts]\ntiny-py = tiny_py:main\n",
}
record = []
for name, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append("%s,sha256=%s,%d" % (name, digest, len(data)))
record.append(info + "/RECORD,,")
files[info + "/RECORD"] = ("\n".join(record) + "\n").encode()
path = os.path.join(out_dir, "tiny_py-%s-py3-none-any.whl" % version)
with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as whl:
    for name, data in files.items():
        # A fixed date: the same version always gives the same bytes.
        whl.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), data)
print(path)
