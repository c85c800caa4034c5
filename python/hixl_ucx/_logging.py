# SPDX-License-Identifier: BSD-3-Clause
"""The library's log lines, through Python's ``logging`` module.

Once libhixl-ucx is loaded, every line it logs goes to the logger
``hixl_ucx`` (or a child of it named after the library source file, e.g.
``hixl_ucx.dispatch``) at the matching level: error, warning, info, debug,
and trace as level 5.  Which lines the library logs at all is still the
engines' ``hixl.LogLevel`` business.  Set ``HIXL_UCX_LOG=stderr`` before the
library loads to keep the library's own stderr lines instead.

The callback runs on the library's threads (engines' progress threads
included); it never raises into C, and it is taken out at interpreter exit,
before Python can no longer run it.
"""

import atexit
import ctypes
import logging
import os

LOGGER = logging.getLogger("hixl_ucx")
TRACE = 5
_LEVELS = (logging.ERROR, logging.WARNING, logging.INFO, logging.DEBUG, TRACE)

LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_int,
                          ctypes.c_char_p, ctypes.c_void_p)


def _forward(level, file, line, msg, _arg):
    try:
        lvl = _LEVELS[level] if 0 <= level < len(_LEVELS) else logging.DEBUG
        src = (file or b"hixl").decode("utf-8", "replace")
        logger = LOGGER.getChild(src.rsplit(".", 1)[0])
        if logger.isEnabledFor(lvl):
            logger.handle(logger.makeRecord(
                logger.name, lvl, src, line,
                (msg or b"").decode("utf-8", "replace"), None, None))
    except Exception:   # pylint: disable=broad-except
        pass            # nothing may go back into the library


_CALLBACK = LOG_FN(_forward)


def install(lib):
    """Route lib's log lines to ``logging`` (unless HIXL_UCX_LOG=stderr)."""
    if os.environ.get("HIXL_UCX_LOG", "") == "stderr":
        return
    lib.hixl_set_log_handler(_CALLBACK, None)
    # at exit, before Python stops being able to run _forward: back to
    # stderr (a NULL function pointer)
    atexit.register(lib.hixl_set_log_handler, ctypes.cast(None, LOG_FN),
                    None)
