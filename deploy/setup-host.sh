#!/usr/bin/env bash
# Lazaret host setup: installs the Debian packages needed to build and test
# Lazaret and applies the host settings described in PLATFORM.md.
#
# Run as root. Idempotent: a second run changes nothing and is fast (no
# apt-get at all when every package is already installed).
#
# Environment:
#   LAZARET_FORCE_APT=1   run apt-get update + install even if all packages
#                         are already installed.
set -euo pipefail

CONTAINERS_CONF=${LAZARET_CONTAINERS_CONF:-/etc/containers/containers.conf}
UDEV_RULE=/etc/udev/rules.d/70-lazaret-devices.rules

PACKAGES=(
    # build
    build-essential cmake ninja-build pkg-config git ccache
    clang libclang-rt-14-dev
    # libraries
    libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
    grpc-proto libtomlplusplus-dev libssl-dev libcap-dev libnl-3-dev
    libnl-route-3-dev libncurses-dev libabsl-dev
    # the egress proxy: HTTP/2 (nghttp2) and the HTTP/1.1 parser
    libnghttp2-dev libhttp-parser-dev
    # tests / benchmarks
    libgtest-dev libgmock-dev libbenchmark-dev
    tmux ncurses-term
    # xterm-kitty's terminfo (ncurses-term has alacritty, not kitty): the
    # run e2e tests drive a sandbox shell under tmux with TERM=xterm-kitty
    kitty-terminfo
    # the terminal e2e tests run the host's vim inside a sandbox
    # (tests/e2e/terminal_e2e_test.cc): the image has no editor
    vim
    # containers
    # containers-storage ships /usr/share/containers/storage.conf with
    # driver = "overlay"; without it rootless podman falls back to vfs, which
    # copies the whole image per container (~6 s instead of ~0.25 s per start).
    podman runc fuse-overlayfs slirp4netns uidmap
    # persistent_cap: the profile's ext4 image (mkfs.ext4, e2fsck,
    # resize2fs), served by fuse2fs when rootless
    e2fsprogs fuse2fs
    containers-storage mmdebstrap debian-archive-keyring
    # tools used by the orchestrator and the tests
    iproute2 procps util-linux ca-certificates
    # HTTP/2 peers of the egress proxy's tests (nghttp, h2load)
    nghttp2-client
    # the agent-CLI e2e probes the npm registry and the Debian mirror first
    curl
    # the Debian package (deploy/package): dpkg-shlibdeps computes its
    # Depends, lintian checks it, groff and man render its pages; zsh and
    # fish check the completions (clients/lazaret/help)
    dpkg-dev lintian groff-base man-db zsh fish
)

changed=0
log() { printf 'setup-host: %s\n' "$*"; }
change() { changed=1; log "CHANGED: $*"; }

if [[ $(id -u) -ne 0 ]]; then
    echo "setup-host: must be run as root" >&2
    exit 1
fi

# ---------------------------------------------------------------- runsc
# bookworm's runsc (2022-12-19) rejects AT_NO_AUTOMOUNT, which coreutils
# passes to statx, so `ls -l` and `stat` fail inside every Debian image. The
# bookworm-backports build (2024-07-29) fixes it; it is taken from there.
BACKPORTS=/etc/apt/sources.list.d/lazaret-bookworm-backports.sources
RUNSC_MIN=0.0~20240729
if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    cat >"$BACKPORTS" <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    change "added bookworm-backports apt source ($BACKPORTS)"
fi
runsc_ver=$(dpkg-query -W -f='${Version}' runsc 2>/dev/null || true)
if [[ -z $runsc_ver ]] || dpkg --compare-versions "$runsc_ver" lt "$RUNSC_MIN"; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends -t bookworm-backports runsc
    change "installed runsc $(dpkg-query -W -f='${Version}' runsc) from bookworm-backports"
else
    log "runsc $runsc_ver already installed"
fi

# ---------------------------------------------------------------- packages
missing=()
for p in "${PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
    [[ $status == ii* ]] || missing+=("$p")
done
if (( ${#missing[@]} > 0 )) || [[ ${LAZARET_FORCE_APT:-0} == 1 ]]; then
    log "installing: ${missing[*]:-(forced)}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${PACKAGES[@]}"
    (( ${#missing[@]} > 0 )) && change "installed packages: ${missing[*]}"
else
    log "all ${#PACKAGES[@]} packages already installed"
fi

# ---------------------------------------------------------------- containers.conf
# The VM's root lacks CAP_SYS_RESOURCE; podman's default rlimits (nofile/nproc
# at the hard maximum) make runc fail with "setrlimit ... Operation not
# permitted". Set [containers] default_ulimits, keeping everything else.
ULIMITS_LINE='default_ulimits = ["nofile=16384:16384", "nproc=16384:16384"]'
mkdir -p "$(dirname "$CONTAINERS_CONF")"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
if [[ -f $CONTAINERS_CONF ]]; then
    # Put the key right after the [containers] header and drop any other
    # (uncommented) default_ulimits in that table, including a multi-line
    # array value; if there is no [containers] table, append one.
    awk -v line="$ULIMITS_LINE" '
        skipping {
            if ($0 ~ /\]/) skipping = 0
            next
        }
        /^[[:space:]]*\[+[^]]*\]+[[:space:]]*(#.*)?$/ {
            in_ct = ($0 ~ /^[[:space:]]*\[containers\][[:space:]]*(#.*)?$/)
            print
            if (in_ct && !done) { print line; done = 1 }
            next
        }
        in_ct && /^[[:space:]]*default_ulimits[[:space:]]*=/ {
            v = $0
            sub(/^[^=]*=/, "", v)
            if (v ~ /\[/ && v !~ /\]/) skipping = 1
            next
        }
        { print }
        END {
            if (!done) { print ""; print "[containers]"; print line }
        }
    ' "$CONTAINERS_CONF" >"$tmp"
else
    printf '# Written by lazaret deploy/setup-host.sh\n[containers]\n%s\n' \
        "$ULIMITS_LINE" >"$tmp"
fi
if [[ -f $CONTAINERS_CONF ]] && cmp -s "$tmp" "$CONTAINERS_CONF"; then
    log "$CONTAINERS_CONF already has default_ulimits"
else
    [[ -f $CONTAINERS_CONF ]] && cp -p "$CONTAINERS_CONF" "$CONTAINERS_CONF.lazaret-bak"
    install -m 0644 "$tmp" "$CONTAINERS_CONF"
    change "$CONTAINERS_CONF: [containers] $ULIMITS_LINE"
fi

# ---------------------------------------------------------------- devices
# Rootless podman needs /dev/net/tun (slirp4netns/pasta) and /dev/fuse
# (fuse-overlayfs) usable by ordinary users; they are 0600 on this VM.
ensure_dev() { # path major minor
    local path=$1 major=$2 minor=$3
    if [[ ! -e $path ]]; then
        mkdir -p "$(dirname "$path")"
        mknod -m 0666 "$path" c "$major" "$minor"
        change "created $path"
    fi
    if [[ $(stat -c %a "$path") != 666 ]]; then
        chmod 0666 "$path"
        change "chmod 0666 $path"
    else
        log "$path already mode 0666"
    fi
}
ensure_dev /dev/fuse 10 229
ensure_dev /dev/net/tun 10 200

# Rootful, the mount helper mounts each profile's capped persistent data
# through a loop device (/dev/loop-control, LOOP_CTL_GET_FREE).
if [[ ! -e /dev/loop-control ]]; then
    modprobe loop 2>/dev/null || true
    if [[ -e /dev/loop-control ]]; then
        change "loaded the loop module (/dev/loop-control)"
    else
        log "WARNING: no /dev/loop-control after modprobe loop; rootful persistence needs loop devices"
    fi
else
    log "/dev/loop-control present"
fi

if [[ -d /etc/udev ]] || command -v udevadm >/dev/null 2>&1; then
    rule='# Written by lazaret deploy/setup-host.sh (rootless podman needs these)
KERNEL=="fuse", MODE="0666"
KERNEL=="tun", MODE="0666"'
    if [[ -f $UDEV_RULE ]] && [[ $(cat "$UDEV_RULE") == "$rule" ]]; then
        log "$UDEV_RULE up to date"
    else
        mkdir -p "$(dirname "$UDEV_RULE")"
        printf '%s\n' "$rule" >"$UDEV_RULE"
        change "wrote $UDEV_RULE"
    fi
else
    log "no udev on this host; device modes are not persistent across reboots (re-run this script)"
fi

# ---------------------------------------------------------------- mount propagation
# Rootless podman warns '"/" is not a shared mount' on every call (stderr
# noise the orchestrator would have to filter) and mounts made in its
# namespace do not propagate. systemd makes / rshared at boot; this VM's init
# does not. Not persistent across reboots (re-run this script).
if [[ $(findmnt -no PROPAGATION / 2>/dev/null) != shared ]]; then
    mount --make-rshared /
    change "mount --make-rshared /"
else
    log "/ is already a shared mount"
fi

# ---------------------------------------------------------------- subuid/subgid
for f in /etc/subuid /etc/subgid; do
    if [[ ! -e $f ]]; then
        install -m 0644 /dev/null "$f"
        change "created empty $f (useradd adds ranges for new users)"
    fi
done

if (( changed )); then
    log "done (changes made)"
else
    log "done (nothing to change)"
fi
