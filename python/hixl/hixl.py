# SPDX-License-Identifier: BSD-3-Clause
"""hixl.hixl: where CANN's binding keeps its names (its native extension);
the same names as the package ``hixl``, for code that imports from here."""

from hixl import *  # noqa: F401,F403 (the names CANN's submodule has)
from hixl import __all__  # noqa: F401
