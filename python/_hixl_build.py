# SPDX-License-Identifier: BSD-3-Clause
"""Build backend of the hixl-ucx package: setuptools', checked first.

setuptools before 70.1 builds wheels only with the separate `wheel`
package.  `pip install --no-build-isolation` uses the interpreter's own
setuptools, and an interpreter with an older setuptools and no `wheel`
(a fresh pyenv or venv Python: setuptools 65, pip 23, no wheel) then
fails deep inside setuptools with "invalid command 'bdist_wheel'".  This
says what to do before anything is built.
"""

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403 (the same backend)

_ADVICE = """\
hixl-ucx: cannot build a wheel with this interpreter's packages: its
setuptools (%s) is older than 70.1, which builds wheels by itself, and
the `wheel` package is not installed.  With --no-build-isolation pip uses
what the interpreter has.  Any one of these works:
  - install wheel first:        python -m pip install wheel
  - or newer setuptools:        python -m pip install 'setuptools>=70.1'
  - or let pip fetch them:      drop --no-build-isolation (needs an index)
  - or use Debian's python3 (apt-get install python3-wheel), or a venv
    made from it:               /usr/bin/python3 -m venv --system-site-packages venv
"""


def _check_wheel_support() -> None:
    import setuptools
    try:
        import wheel  # noqa: F401
        return
    except ImportError:
        pass
    parts = []
    for p in setuptools.__version__.split(".")[:2]:
        digits = "".join(c for c in p if c.isdigit())
        parts.append(int(digits or 0))
    if tuple(parts) >= (70, 1):
        return
    raise SystemExit(_ADVICE % setuptools.__version__)


def prepare_metadata_for_build_wheel(*args, **kwargs):
    _check_wheel_support()
    return _setuptools.prepare_metadata_for_build_wheel(*args, **kwargs)


def build_wheel(*args, **kwargs):
    _check_wheel_support()
    return _setuptools.build_wheel(*args, **kwargs)


def prepare_metadata_for_build_editable(*args, **kwargs):
    _check_wheel_support()
    return _setuptools.prepare_metadata_for_build_editable(*args, **kwargs)


def build_editable(*args, **kwargs):
    _check_wheel_support()
    return _setuptools.build_editable(*args, **kwargs)
