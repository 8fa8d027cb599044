#!/usr/bin/env bash
# The main job: bring Lazaret up and run a command in a sandbox of the
# embedded default profile on the current directory.
set -euo pipefail
build=${1:?usage: main-job.sh BUILD_DIR}
lazaret=$build/bin/lazaret

"$lazaret" up
"$lazaret" status
