#!/usr/bin/env bash
# The main job: bring Lazaret up and run a command in a sandbox of the
# embedded default profile on the current directory. Runs as whoever runs
# it: root gets rootful podman, anyone else rootless (their own images).
set -euo pipefail
build=${1:?usage: main-job.sh BUILD_DIR}
lazaret=$build/bin/lazaret

# Lazaret's two local images; a content-hash tag that already exists is
# reused, so this is quick after the first time (no registry needed).
"$lazaret" image build all
"$lazaret" up
"$lazaret" doctor

echo
echo "== In a gVisor sandbox of the default profile on $(pwd):"
"$lazaret" run -- sh -c '
    echo "kernel:  $(uname -sr) - $(dmesg | head -n 1)"
    echo "whoami:  $(id -un) in $(pwd), image $(. /etc/os-release && echo "$PRETTY_NAME")"
    if git rev-parse --git-dir >/dev/null 2>&1; then
        echo "git:     $(git log -1 --format="%h %s") (on $(git branch --show-current))"
    else
        echo "git:     (this directory is not a git repository)"
    fi'
echo
echo "That output came from inside gVisor (its kernel prints \"Starting gVisor...\")."
echo "For an interactive shell in the same kind of sandbox, from any project directory:"
echo "    $lazaret run"
echo "Sessions: $lazaret ps | stop SESSION | clean; host checks: $lazaret doctor;"
echo "stop the services: $lazaret down. Manual: docs/operations.md"
