#!/usr/bin/env bash
# The lazaret .deb end to end (ctest lazaret_deb_test; LABELS deploy):
#   1. lintian: any E: line fails (W: lines are printed); every Depends
#      has a candidate in this machine's apt sources;
#   2. dpkg -i on this machine; every file lands where the package says;
#      the man pages render without groff warnings; the INSTALLED lazaret
#      builds its images, passes doctor, runs `up`, a sandboxed
#      `run -- echo TOKEN` and `down` in a fresh HOME and runtime directory
#      (rootful, XDG_RUNTIME_DIR unset); dpkg -P leaves no file of the
#      package and no process of it.
# Purges the package (and puts the sidecar image tag back) however it ends.
# Run as root on a machine where no lazaret package is installed, under
# flock /tmp/e2e.lock when run by hand (it runs containers).
#
# usage: package_test.sh DEB_DIR GENERATED_HELP_DIR
set -uo pipefail

DEB_DIR=${1:?usage: package_test.sh DEB_DIR GENERATED_HELP_DIR}
HELP_DIR=${2:?usage: package_test.sh DEB_DIR GENERATED_HELP_DIR}
TOKEN="lazaret-deb-test-$$-$RANDOM"
SIDECAR_TAG=localhost/lazaret-sidecar:current

failures=0
say() { printf 'package_test: %s\n' "$*"; }
fail() { say "FAIL: $*"; failures=$((failures + 1)); }
die() { say "FAIL: $*"; exit 1; }

[[ $(id -u) -eq 0 ]] || die "must run as root (it installs and purges the lazaret package)"
status=$(dpkg-query -W -f='${db:Status-Abbrev}' lazaret 2>/dev/null || true)
if [[ -n ${status// /} && $status != "un "* && $status != "pn "* ]]; then
    die "a lazaret package is already installed (dpkg status '$status'); this test installs \
and purges its own and will not touch that one: dpkg -P lazaret first"
fi
shopt -s nullglob
debs=("$DEB_DIR"/lazaret_*.deb)
shopt -u nullglob
(( ${#debs[@]} == 1 )) || die "expected exactly one lazaret_*.deb in $DEB_DIR, found ${#debs[@]} \
(ninja lazaret-deb builds it)"
DEB=${debs[0]}
say "package: $DEB ($(du -h "$DEB" | cut -f1))"

WORK=$(mktemp -d /tmp/lazaret-deb-test.XXXXXX)
chmod 0755 "$WORK"
RUNTIME=$WORK/run
HOME_DIR=$WORK/home
WORKSPACE=$WORK/workspace
mkdir -p "$HOME_DIR" "$WORKSPACE"
installed=0
package_sidecar=
sidecar_before=$(podman image inspect --format '{{.Id}}' "$SIDECAR_TAG" 2>/dev/null || true)

# The installed lazaret as a user would run it: a clean environment, a
# fresh HOME and runtime directory, no XDG_RUNTIME_DIR.
lz() {
    (cd "$WORKSPACE" && env -i HOME="$HOME_DIR" LAZARET_RUNTIME_DIR="$RUNTIME" LANG=C.UTF-8 \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        timeout "${LZ_TIMEOUT:-120}" /usr/bin/lazaret "$@")
}

# Pids of processes running a program of the installed package (also
# after the purge deleted it).
package_pids() {
    local exe pid
    for pid in /proc/[0-9]*; do
        exe=$(readlink "$pid/exe" 2>/dev/null) || continue
        exe=${exe% (deleted)}
        if [[ $exe == /usr/bin/lazaret || $exe == /usr/libexec/lazaret/* ]]; then
            printf '%s\n' "${pid#/proc/}"
        fi
    done
}

cleanup() {
    local rc=$?
    if (( installed )); then
        LZ_TIMEOUT=100 lz down >/dev/null 2>&1 || true
        LZ_TIMEOUT=60 lz clean >/dev/null 2>&1 || true
        local pids
        pids=$(package_pids)
        if [[ -n $pids ]]; then
            say "killing what the package's programs left: $(echo $pids)"
            kill -KILL $pids 2>/dev/null || true
        fi
        dpkg -P lazaret >/dev/null 2>&1 || say "dpkg -P lazaret failed in cleanup"
    fi
    # `lazaret image build` re-tagged the sidecar for the package's
    # (stripped) lazaret-netrouter; the build tree's tag is put back.
    if [[ -n $sidecar_before ]]; then
        podman tag "$sidecar_before" "$SIDECAR_TAG" >/dev/null 2>&1 || true
    fi
    if [[ -n $package_sidecar && $package_sidecar == localhost/lazaret-sidecar:* ]] &&
       [[ $(podman image inspect --format '{{.Id}}' "$package_sidecar" 2>/dev/null) != \
          "$sidecar_before" ]]; then
        podman rmi "$package_sidecar" >/dev/null 2>&1 || true
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start=$(date +%s)

# ------------------------------------------------------------------ lintian
lintian_out=$(lintian --tag-display-limit 0 "$DEB" 2>&1)
lintian_rc=$?
grep -E '^W: ' <<<"$lintian_out" | sed 's/^/lintian /'
if grep -qE '^E: ' <<<"$lintian_out"; then
    grep -E '^E: ' <<<"$lintian_out" | sed 's/^/lintian /'
    fail "lintian reports errors"
elif (( lintian_rc != 0 )) && ! grep -qE '^[EW]: ' <<<"$lintian_out"; then
    printf '%s\n' "$lintian_out"
    fail "lintian did not run (exit $lintian_rc)"
else
    say "lintian: no errors"
fi

# ------------------------------------------------------------------ Depends
# Every dependency has a candidate satisfying it in this machine's apt
# sources (Debian 12 and what setup-host.sh adds): what `apt-get install
# ./lazaret_*.deb` needs to resolve it.
IFS=',' read -ra depends <<<"$(dpkg-deb -f "$DEB" Depends)"
(( ${#depends[@]} > 5 )) || fail "the package has too few Depends: ${depends[*]}"
for item in "${depends[@]}"; do
    resolved=0
    IFS='|' read -ra alternatives <<<"$item"
    for alt in "${alternatives[@]}"; do
        read -r name op version <<<"${alt//[()]/ }"
        candidate=$(apt-cache policy "$name" 2>/dev/null | awk '/Candidate:/ {print $2}')
        [[ -n $candidate && $candidate != "(none)" ]] || continue
        if [[ -n ${op:-} ]] && ! dpkg --compare-versions "$candidate" "$op" "$version"; then
            continue
        fi
        resolved=1
        break
    done
    (( resolved )) || fail "Depends:${item}: no candidate in this machine's apt sources"
done
say "Depends: ${#depends[@]} resolve"

# ------------------------------------------------------------------ install
if ! dpkg -i "$DEB"; then
    installed=1
    die "dpkg -i failed"
fi
installed=1
mapfile -t files < <(dpkg -L lazaret)

expected=(
    /usr/bin/lazaret
    /usr/share/lazaret/images/sandbox/packages.txt
    /usr/share/doc/lazaret/copyright
    /usr/share/doc/lazaret/changelog.Debian.gz
    /usr/lib/systemd/user/lazaret.service
    /usr/share/bash-completion/completions/lazaret
    /usr/share/zsh/vendor-completions/_lazaret
    /usr/share/fish/vendor_completions.d/lazaret.fish
)
for p in lazaret-supervisord lazaret-sessiond lazaret-configd lazaret-netpolicyd \
         lazaret-egressd lazaret-brokerd lazaret-mount-helper lazaret-netrouter \
         lazaret-sandbox-init lazaret-escalate; do
    expected+=("/usr/libexec/lazaret/$p")
done
pages=0
for page in "$HELP_DIR"/man/*.1.gz; do
    expected+=("/usr/share/man/man1/$(basename "$page")")
    pages=$((pages + 1))
done
(( pages > 1 )) || fail "no generated man pages in $HELP_DIR/man"
for f in "${expected[@]}"; do
    if ! printf '%s\n' "${files[@]}" | grep -qxF "$f"; then
        fail "the package does not list $f"
    elif [[ ! -f $f ]]; then
        fail "$f is listed but not installed"
    fi
done
for f in "${files[@]}"; do
    [[ -e $f || -L $f ]] || fail "dpkg -L lists $f, which is not on disk"
    case $f in
        /usr/bin/* | /usr/libexec/lazaret/*)
            [[ -d $f || -x $f ]] || fail "$f is not executable" ;;
    esac
done
# Every subcommand of the installed CLI has its page.
for c in $(/usr/bin/lazaret --help | awk '/^commands:/{on=1; next} /^$/{on=0} on{print $1}' | sort -u); do
    [[ -f /usr/share/man/man1/lazaret-$c.1.gz ]] || fail "no man page for lazaret $c"
done
for page in /usr/share/man/man1/lazaret*.1.gz; do
    warnings=$(zcat "$page" | groff -man -Tutf8 -ww -z 2>&1)
    [[ -z $warnings ]] || fail "$page: groff warns: $warnings"
done
MANPAGER=cat man -l /usr/share/man/man1/lazaret-run.1.gz 2>/dev/null | grep -q -- '--worktree' ||
    fail "man -l lazaret-run.1.gz does not show --worktree"
# The user unit as systemd reads it (its binaries and man pages exist now).
if ! unit_out=$(systemd-analyze verify /usr/lib/systemd/user/lazaret.service 2>&1) ||
   [[ -n $unit_out ]]; then
    fail "systemd-analyze verify lazaret.service: ${unit_out:-exit status}"
fi
say "files: ${#files[@]} listed, ${#expected[@]} checked"

# ------------------------------------------------------------------ run it
if ! LZ_TIMEOUT=900 lz image build; then
    fail "the installed lazaret image build failed"
fi
# The package's own sidecar image goes at the end (see cleanup).
package_sidecar=$(lz image tag sidecar 2>/dev/null || true)
doctor=$(lz doctor 2>&1)
doctor_rc=$?
printf '%s\n' "$doctor" | sed 's/^/doctor: /'
(( doctor_rc == 0 )) || fail "the installed lazaret doctor exits $doctor_rc"
if ! lz up; then
    fail "the installed lazaret up failed"
else
    out=$(LZ_TIMEOUT=180 lz run -- echo "$TOKEN" </dev/null 2>&1)
    run_rc=$?
    if (( run_rc != 0 )) || ! grep -qF "$TOKEN" <<<"$out"; then
        printf '%s\n' "$out" | tail -20 | sed 's/^/run: /'
        fail "lazaret run -- echo TOKEN exits $run_rc without printing the token"
    else
        say "run: the sandbox printed the token"
    fi
    lz down || fail "the installed lazaret down failed"
fi
if [[ -n $(package_pids) ]]; then
    fail "processes of the package still run after lazaret down: $(echo $(package_pids))"
fi

# ------------------------------------------------------------------ purge
if dpkg -P lazaret; then
    installed=0
else
    fail "dpkg -P lazaret failed"
fi
for f in "${files[@]}"; do
    [[ -d $f && ! -L $f ]] && continue
    [[ -e $f || -L $f ]] && fail "$f is left after dpkg -P"
done
for d in /usr/libexec/lazaret /usr/share/lazaret /usr/share/doc/lazaret; do
    [[ -e $d ]] && fail "$d is left after dpkg -P"
done
if [[ -n $(package_pids) ]]; then
    fail "processes of the package still run after dpkg -P: $(echo $(package_pids))"
fi

say "took $(( $(date +%s) - start )) s"
if (( failures > 0 )); then
    say "$failures failure(s)"
    exit 1
fi
say "ok"
