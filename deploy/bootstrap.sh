#!/usr/bin/env bash
# The two README commands.
#
#   deploy/bootstrap.sh main   install, build, bring Lazaret up and run a
#                              command in a sandbox of the default profile on
#                              the current directory
#   deploy/bootstrap.sh test   install, build and run the whole test suite
#
# Installing needs root (apt-get, /etc/containers, device modes); when run as
# a normal user the install step goes through sudo and everything else runs
# as that user. LAZARET_BUILD_DIR (default ./build) selects the build tree.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${LAZARET_BUILD_DIR:-$here/build}
mode=${1:-}

usage() {
    echo "usage: deploy/bootstrap.sh main|test" >&2
    exit 2
}

as_root() {
    if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

install_and_build() {
    as_root "$here/deploy/setup-host.sh"
    cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
    ninja -C "$build"
}

case $mode in
    main)
        install_and_build
        "$here/deploy/main-job.sh" "$build"
        ;;
    test)
        install_and_build
        # Tests that build images or need a rootless user prepare it through
        # their own fixtures; the summary line is ctest's.
        cd "$build"
        ctest --output-on-failure --timeout 1500 "${@:2}"
        ;;
    *)
        usage
        ;;
esac
