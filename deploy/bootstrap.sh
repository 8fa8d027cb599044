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

# Seconds since the step began, as minutes and seconds.
elapsed() {
    printf '%dm%02ds' $(((SECONDS - $1) / 60)) $(((SECONDS - $1) % 60))
}

# A new build tree is configured for a fast build: Release (no debug info,
# about a fifth less compile time) and unity batches (the gRPC, protobuf and
# gtest headers parsed once per batch, not once per file). An existing tree
# keeps the settings it has.
configure() {
    local fresh=()
    if [[ ! -f $build/CMakeCache.txt ]]; then
        fresh=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON)
    fi
    cmake -S "$here" -B "$build" -G Ninja "${fresh[@]}"
}

# install_and_build TARGET...: the host setup, then the named targets.
install_and_build() {
    local start=$SECONDS
    as_root "$here/deploy/setup-host.sh"
    echo "bootstrap: host setup took $(elapsed "$start")"
    start=$SECONDS
    configure
    ninja -C "$build" "$@"
    echo "bootstrap: build took $(elapsed "$start")"
}

case $mode in
    main)
        # Only what the main job runs: no tests, no fuzzers.
        install_and_build lazaret-runtime
        "$here/deploy/main-job.sh" "$build"
        ;;
    test)
        install_and_build all
        # Tests that build images or need a rootless user prepare it through
        # their own fixtures; the end-to-end tests are RUN_SERIAL, the rest
        # run side by side. The summary line is ctest's.
        cd "$build"
        start=$SECONDS
        status=0
        ctest --output-on-failure --timeout 1500 -j "$(nproc)" "${@:2}" || status=$?
        echo "bootstrap: tests took $(elapsed "$start")"
        exit "$status"
        ;;
    *)
        usage
        ;;
esac
