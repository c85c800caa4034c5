# SPDX-License-Identifier: BSD-3-Clause
"""The ctypes side of hixl_ucx against the C header (run by it_py_layout.sh).

Writes a C program from what the Python package declares (every structure
and field of hixl_ucx._ctypes, every status, enum value and bound of
hixl_ucx._constants: async connect states and features included),
compiles it against include/hixl/hixl.h with $CC and
compares what the compiler says (sizeof, offsetof, values) with ctypes.  A
field the header does not have fails to compile; one laid out differently
fails the comparison.  Also: every function the package binds is declared
in the header with the same number of parameters, and the package version
is configure's.

Environment: CC, HIXL_INCLUDE_DIR (the directory holding hixl/hixl.h),
HIXL_PACKAGE_VERSION (optional), PYTHONPATH reaching hixl_ucx.
"""

import ctypes
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

import hixl_ucx
from hixl_ucx import _constants, _ctypes, _lib


def c_program():
    lines = ["#include <stddef.h>", "#include <stdio.h>",
             "#include <hixl/hixl.h>", "int main(void) {",
             '    printf("{\\n");']
    for cname, cls in _ctypes.STRUCTS.items():
        lines.append('    printf("\\"%s\\": [%%zu, {", sizeof(%s));' % (
            cname, cname))
        for i, (field, _) in enumerate(cls._fields_):
            lines.append('    printf("%s\\"%s\\": [%%zu, %%zu]", '
                         'offsetof(%s, %s), sizeof(((%s *)0)->%s));' % (
                             ", " if i else "", field, cname, field, cname,
                             field))
        lines.append('    printf("}],\\n");')
    for enum in _ctypes.ENUMS:
        lines.append('    printf("\\"sizeof %s\\": %%zu,\\n", sizeof(%s));' %
                     (enum, enum))
    values = constants()
    for i, cname in enumerate(sorted(values)):
        lines.append('    printf("\\"%s\\": %%lld%s\\n", (long long)%s);' % (
            cname, "," if i + 1 < len(values) else "", cname))
    lines += ['    printf("}\\n");', "    return 0;", "}"]
    return "\n".join(lines) + "\n"


def constants():
    """C name -> the value the package uses."""
    out = {name: num for num, name in _constants.STATUS_NAMES.items()}
    for e in (_constants.MemType, _constants.TransferOp):
        for m in e:
            out["HIXL_" + m.name] = int(m)
    for m in _constants.TransferStatus:
        out["HIXL_TRANSFER_" + m.name] = int(m)
    for m in _constants.AsyncConnectStatus:
        out["HIXL_ASYNC_" + m.name] = int(m)
    for m in _constants.FeatureType:
        out["HIXL_FEATURE_" + m.name] = int(m)
    for m in _constants.WaitMode:
        out["HIXL_WAIT_" + m.name] = int(m)
    out["HIXL_TRANSFER_ARG_TIMEOUT"] = _ctypes.ARG_TIMEOUT
    out["HIXL_TRANSFER_ARG_NOTIFY"] = _ctypes.ARG_NOTIFY
    out["HIXL_TRANSFER_ARG_USER_DATA"] = _ctypes.ARG_USER_DATA
    out["HIXL_NOTIFY_NAME_MAX"] = _constants.NOTIFY_NAME_MAX
    out["HIXL_ENGINE_NAME_MAX"] = _constants.ENGINE_NAME_MAX
    return out


def compile_and_run(include_dir):
    cc = shlex.split(os.environ.get("CC") or "cc")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "layout.c")
        exe = os.path.join(tmp, "layout")
        with open(src, "w") as f:
            f.write(c_program())
        res = subprocess.run(cc + ["-std=gnu11", "-I", include_dir, src,
                                   "-o", exe], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT)
        if res.returncode != 0:
            sys.stdout.write(c_program())
            raise SystemExit("FAIL: the layout program does not compile "
                             "against the header (a field or constant the "
                             "package names is not there):\n" +
                             res.stdout.decode(errors="replace"))
        out = subprocess.run([exe], stdout=subprocess.PIPE, check=True)
        return json.loads(out.stdout.decode())


def header_functions(include_dir):
    """hixl_* function name -> number of parameters, from hixl.h."""
    with open(os.path.join(include_dir, "hixl", "hixl.h")) as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    out = {}
    for m in re.finditer(r"HIXL_API[^;(]*?\b(hixl_\w+)\s*\(([^)]*)\)\s*;",
                         text):
        params = m.group(2).strip()
        out[m.group(1)] = 0 if params in ("", "void") else \
            params.count(",") + 1
    return out


def main():
    include_dir = os.environ.get("HIXL_INCLUDE_DIR") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "include")
    errors = []
    c = compile_and_run(include_dir)
    for cname, (size, fields) in _ctypes.struct_layouts().items():
        csize, cfields = c[cname]
        if size != csize:
            errors.append("%s: ctypes sizeof %d, C %d" % (cname, size,
                                                          csize))
        for field, (off, fsize) in fields.items():
            if [off, fsize] != cfields[field]:
                errors.append("%s.%s: ctypes offset/size %d/%d, C %d/%d" % (
                    cname, field, off, fsize, *cfields[field]))
    for enum in _ctypes.ENUMS:
        if c["sizeof " + enum] != ctypes.sizeof(_ctypes.ENUM_CTYPE):
            errors.append("%s is %d bytes, passed as %d" % (
                enum, c["sizeof " + enum],
                ctypes.sizeof(_ctypes.ENUM_CTYPE)))
    for cname, value in constants().items():
        if c[cname] != value:
            errors.append("%s: package %d, header %d" % (cname, value,
                                                         c[cname]))
    funcs = header_functions(include_dir)
    for name, (_, argtypes) in _lib.PROTOTYPES.items():
        if name not in funcs:
            errors.append("%s is bound but not declared in hixl.h" % name)
        elif funcs[name] != len(argtypes):
            errors.append("%s: %d parameters in hixl.h, %d bound" % (
                name, funcs[name], len(argtypes)))
    want = os.environ.get("HIXL_PACKAGE_VERSION")
    if want and hixl_ucx.__version__ != want:
        errors.append("hixl_ucx.__version__ %s, configure's %s" % (
            hixl_ucx.__version__, want))
    for e in errors:
        print("FAIL: " + e)
    if errors:
        return 1
    print("PASS: %d structures, %d constants, %d functions of hixl.h match "
          "hixl_ucx %s" % (len(_ctypes.STRUCTS), len(constants()),
                           len(_lib.PROTOTYPES), hixl_ucx.__version__))
    return 0


if __name__ == "__main__":
    sys.exit(main())
