# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the checks that read the static library with nm
# (check_symbols.sh, check_circles.sh): sets libs and nm_cmd, or exits
# 77 (SKIP) without nm or without the static library (--disable-static).
libs="${HIXL_TOP_BUILDDIR:-$(pwd)/..}/src/.libs"
nm_cmd=${NM:-nm}

set -- $nm_cmd
if ! command -v "$1" >/dev/null 2>&1; then
    echo "SKIP: no nm ($nm_cmd)"
    exit 77
fi
if [ ! -f "$libs/libhixl-ucx.a" ]; then
    echo "SKIP: no static library in $libs (built with --disable-static?)"
    exit 77
fi
