#!/usr/bin/env bash
# ctest fixtures of the `lazaret run` end-to-end tests (tests/e2e/CMakeLists.txt).
#
#   run_fixture.sh user-setup        create the rootless test user (useradd,
#                                    subuid/subgid, /run/user/<uid> 0700)
#   run_fixture.sh user-cleanup      remove that user and everything it owns
#                                    (LAZARET_E2E_KEEP_USER=1 keeps it)
#   run_fixture.sh images MODE       lazaret image build all (MODE rootful|rootless)
#   run_fixture.sh up MODE           lazaret up with the test environment
#   run_fixture.sh down MODE         lazaret clean; lazaret down
#
# Environment (set by CMake): LAZARET_BIN_DIR, LAZARET_E2E_ROOT (rootful
# HOME and runtime dir live under it), LAZARET_E2E_USER. Must run as root.
set -euo pipefail

bin=${LAZARET_BIN_DIR:?}
root=${LAZARET_E2E_ROOT:-/tmp/laz-e2e}
user=${LAZARET_E2E_USER:-lazaret-e2e}
action=${1:?usage: run_fixture.sh ACTION [MODE]}
mode=${2:-rootful}

die() { echo "run_fixture.sh: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || die "must run as root (CI runs the e2e tests as root)"

# The command prefix that runs a program in MODE with the tests' environment.
as_mode() {
    if [[ $mode == rootful ]]; then
        mkdir -p "$root/root/home" "$root/root/run"
        chmod 0755 "$root" "$root/root"
        chmod 0700 "$root/root/run"
        env HOME="$root/root/home" LAZARET_RUNTIME_DIR="$root/root/run" \
            XDG_RUNTIME_DIR= XDG_CONFIG_HOME= XDG_DATA_HOME= XDG_STATE_HOME= "$@"
    else
        local uid gid
        uid=$(id -u "$user") gid=$(id -g "$user")
        setpriv --reuid="$uid" --regid="$gid" --init-groups -- \
            env -i HOME="/home/$user" USER="$user" LOGNAME="$user" \
            XDG_RUNTIME_DIR="/run/user/$uid" \
            PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin \
            LANG=C.UTF-8 "$@"
    fi
}

case $action in
user-setup)
    for dev in /dev/fuse /dev/net/tun; do
        [[ $(stat -c %a "$dev") == 666 ]] ||
            die "$dev is not mode 0666; run deploy/setup-host.sh first"
    done
    if ! id "$user" >/dev/null 2>&1; then
        useradd --create-home --shell /bin/bash "$user"
    fi
    uid=$(id -u "$user")
    for f in /etc/subuid /etc/subgid; do
        if ! grep -q "^$user:" "$f"; then
            # A free range above every existing one.
            start=$(awk -F: 'BEGIN{m=100000} {e=$2+$3; if (e>m) m=e} END{print m}' "$f")
            if [[ $f == /etc/subuid ]]; then
                usermod --add-subuids "$start-$((start + 65535))" "$user"
            else
                usermod --add-subgids "$start-$((start + 65535))" "$user"
            fi
        fi
    done
    install -d -m 0700 -o "$user" -g "$(id -g "$user")" "/run/user/$uid"
    mkdir -p "$root"
    chmod 0755 "$root"
    # The user runs the build's binaries.
    setpriv --reuid="$uid" --regid="$(id -g "$user")" --init-groups -- test -x "$bin/lazaret" ||
        die "$user cannot run $bin/lazaret (every directory above it must be searchable)"
    echo "rootless test user $user (uid $uid) ready"
    ;;
user-cleanup)
    if ! id "$user" >/dev/null 2>&1; then exit 0; fi
    uid=$(id -u "$user")
    mode=rootless
    as_mode "$bin/lazaret" down >/dev/null 2>&1 || true
    if [[ ${LAZARET_E2E_KEEP_USER:-0} == 1 ]]; then
        echo "keeping $user (LAZARET_E2E_KEEP_USER=1)"
        exit 0
    fi
    as_mode podman rm --all --force --time=0 >/dev/null 2>&1 || true
    as_mode podman system reset --force >/dev/null 2>&1 || true
    # Whatever the user still runs (podman's pause process, conmon, a
    # fuse2fs or fuse-overlayfs still exiting, an image build a timed-out
    # test left running as one of its subordinate uids): only this test
    # user's processes and those of its subuid range, one pid at a time,
    # until userdel no longer finds one.
    read -r sub_start sub_count < <(awk -F: -v u="$user" '$1 == u {print $2, $3; exit}' \
        /etc/subuid) || true
    sub_start=${sub_start:-0} sub_count=${sub_count:-0}
    for attempt in 1 2 3 4 5 6 7 8 9 10; do
        # A process may end between the stat and the kill: not an error
        # (under set -e an unguarded failing kill ended the cleanup).
        for p in /proc/[0-9]*; do
            owner=$(stat -c %u "$p" 2>/dev/null) || continue
            if [[ $owner == "$uid" ]] ||
                ((sub_count > 0 && owner >= sub_start && owner < sub_start + sub_count)); then
                kill -KILL "${p#/proc/}" 2>/dev/null || true
            fi
        done
        sleep 0.5
        if userdel --remove "$user" 2>/dev/null || ! id "$user" >/dev/null 2>&1; then break; fi
        if [[ $attempt == 10 ]]; then userdel --remove "$user"; fi
    done
    rm -rf "/run/user/$uid"
    echo "removed rootless test user $user"
    ;;
images)
    as_mode "$bin/lazaret" image build all
    ;;
up)
    as_mode "$bin/lazaret" up
    ;;
down)
    as_mode "$bin/lazaret" clean || true
    as_mode "$bin/lazaret" down
    ;;
*)
    die "unknown action $action"
    ;;
esac
