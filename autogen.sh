#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Regenerate the build system: ./autogen.sh && ./configure && make
set -e
cd "$(dirname "$0")"
mkdir -p config m4
autoreconf --install --force --warnings=all
