#!/bin/sh
# The shared objects a binary names (ELF DT_NEEDED), against the ones it
# may: a binary linked with LAZARET_ARCHIVE_LINK takes every library from
# its archive except glibc's, the C++ runtime's and those Debian has every
# package share (zlib, OpenSSL, ncurses: CMakeLists.txt,
# LAZARET_SHARED_ARCHIVES), so each of its starts maps only those. Fails,
# listing the rest, when a library slipped back to its shared object (a
# dependency not named through lazaret_link_deps).
#
#   shared_objects.sh BINARY...
set -eu
allowed='^(libc\.so\.6|libm\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1|ld-linux-x86-64\.so\.2'
allowed="$allowed"'|libz\.so\.1|libssl\.so\.3|libcrypto\.so\.3|libncursesw\.so\.6|libtinfo\.so\.6)$'
status=0
for bin in "$@"; do
    needed=$(readelf --dynamic --wide "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
    if [ -z "$needed" ]; then
        echo "FAIL: $bin names no shared object at all: not a dynamically linked binary" >&2
        status=1
        continue
    fi
    extra=$(printf '%s\n' "$needed" | grep -Ev "$allowed" || true)
    if [ -n "$extra" ]; then
        echo "FAIL: $bin needs shared objects beside glibc, the C++ runtime, zlib, OpenSSL and ncurses:" >&2
        printf '  %s\n' $extra >&2
        status=1
    else
        echo "ok: $bin needs only: $(printf '%s ' $needed)"
    fi
done
exit $status
