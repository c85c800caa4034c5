# SPDX-License-Identifier: BSD-3-Clause
"""The version of the hixl_ucx package: that of the libhixl-ucx source it
ships with (configure's PACKAGE_VERSION; test/py/py_layout.py checks)."""

__version__ = "0.1.0"
