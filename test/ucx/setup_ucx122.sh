#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Install UCX 1.22 from PyPI (the wheel libucx-cu12) and print the prefix
# to give configure: ../configure --with-ucx="$(test/ucx/setup_ucx122.sh)".
#
#   setup_ucx122.sh [ROOT]      ROOT: default $HIXL_UCX122_ROOT or /opt/hixl-ucx122
#
# Idempotent: the venv and the wheel are made and installed only when
# missing (no network then), the prefix is remade every run.
#
# The wheel holds UCX's libraries, headers, ucx_info and ucx_perftest, but
# built elsewhere: its libtool .la files, .pc files and the binaries' run
# path name the build machine's directories (/__w/...).  libtool follows
# those .la files (and fails), and ucx_info run as it is loads the system's
# UCX instead.  So the prefix printed is a view of the wheel made here,
#
#   ROOT/ucx/include      -> the wheel's headers
#   ROOT/ucx/lib/*.so*    -> the wheel's shared libraries (no .la, no .a)
#   ROOT/ucx/lib/ucx      -> the wheel's transport modules (cma, cuda)
#   ROOT/ucx/lib/pkgconfig/*.pc   the wheel's, with prefix=ROOT/ucx
#   ROOT/ucx/bin/ucx_info, ucx_perftest   wrappers that set LD_LIBRARY_PATH
#
# UCX looks for its modules in the ucx/ folder beside the libucs it runs
# with, so neither UCX_MODULE_DIR nor LD_LIBRARY_PATH is needed by a
# program linked with the run path configure --with-ucx adds.  tcp, posix,
# sysv and self are inside libuct; cma is a module; the wheel has no verbs
# transports and its cuda modules fail to load without a GPU driver
# (harmless).  Progress goes to stderr; stdout is the prefix alone.
set -eu

root=${1:-${HIXL_UCX122_ROOT:-/opt/hixl-ucx122}}
spec=${HIXL_UCX122_SPEC:-libucx-cu12==1.22.*}
want=1.22
py=${HIXL_UCX122_PYTHON:-/usr/bin/python3}
venv=$root/venv
view=$root/ucx

say() { echo "setup_ucx122: $*" >&2; }

if [ ! -x "$venv/bin/python" ]; then
    say "making the venv $venv ($py -m venv)"
    mkdir -p "$root"
    "$py" -m venv "$venv" >&2
fi

# The installed wheel's UCX directory and version, or nothing.
wheel_dir() {
    "$venv/bin/python" - <<'EOF' 2>/dev/null
import os, libucx
print(os.path.dirname(libucx.__file__))
EOF
}
installed=$("$venv/bin/python" -c 'import libucx; print(libucx.__version__)' 2>/dev/null || true)
case "$installed" in
"$want".*) say "UCX $installed is installed in $venv" ;;
*)
    say "pip install $spec (found: ${installed:-none})"
    "$venv/bin/pip" install --disable-pip-version-check -q "$spec" >&2
    installed=$("$venv/bin/python" -c 'import libucx; print(libucx.__version__)')
    ;;
esac
ucx=$(wheel_dir)
for f in include/ucp/api/ucp.h include/ucp/api/ucp_version.h lib/libucp.so.0 \
         lib/libucs.so.0 bin/ucx_info; do
    [ -e "$ucx/$f" ] || { say "the wheel in $ucx has no $f"; exit 1; }
done

# The view, made aside and swapped in.
tmp=$root/.ucx.$$
rm -rf "$tmp"
mkdir -p "$tmp/lib/pkgconfig" "$tmp/bin"
trap 'rm -rf "$tmp"' EXIT
ln -s "$ucx/include" "$tmp/include"
ln -s "$ucx/lib/ucx" "$tmp/lib/ucx"
for f in "$ucx"/lib/*.so "$ucx"/lib/*.so.*; do
    [ -e "$f" ] && ln -s "$f" "$tmp/lib/$(basename "$f")"
done
for f in "$ucx"/lib/pkgconfig/*.pc; do
    sed "s|^prefix *=.*|prefix = $view|" "$f" >"$tmp/lib/pkgconfig/$(basename "$f")"
done
for b in "$ucx"/bin/*; do
    n=$(basename "$b")
    cat >"$tmp/bin/$n" <<EOF
#!/bin/sh
# UCX $installed's $n from $ucx, with its own libraries
LD_LIBRARY_PATH=$view/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH} exec "$b" "\$@"
EOF
    chmod +x "$tmp/bin/$n"
done
rm -rf "$view.old"
[ -e "$view" ] && mv "$view" "$view.old"
mv "$tmp" "$view"
rm -rf "$view.old"
trap - EXIT

# The libraries of the view are 1.22, and so are the headers.
got=$("$view/bin/ucx_info" -v | sed -n 's/^# Library version: //p')
case "$got" in
"$want".*) ;;
*) say "ucx_info of $view reports library version '$got', not $want"; exit 1 ;;
esac
grep -q "UCP_API_MINOR *${want#*.}\b" "$view/include/ucp/api/ucp_version.h" || {
    say "the headers in $view/include are not UCX $want"; exit 1; }
say "UCX $got: $view (ucx_info: $view/bin/ucx_info)"
echo "$view"
