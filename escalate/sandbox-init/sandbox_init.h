// lazaret-sandbox-init: the first program in every sandbox. Runs inside the
// gVisor sandbox as the container's root, before the agent command, with
// nothing of the agent running yet. It builds the Git Shadow's git directory
// in the tmpfs the runner mounted (HEAD, symlinks into the read-only shadow,
// an empty hooks/, a copy of the host index), with trust_host_ca the CA
// bundle (the image's own plus the host's certificates) in a tmpfs of its
// own, and then becomes the command.
// Host escalation needs nothing from it: the client reaches the broker over
// the loopback the sandbox shares with its sidecar, and no host socket is
// mounted into the sandbox to link to.
//
// What it trusts: its argv (written by the `lazaret` CLI on the host and
// fixed in the podman command line; the image cannot change it) and the
// mounts the runner made. What it checks anyway: that the git directory it
// writes into really is a tmpfs (so a missing mount can never make it write
// into the host's .git through the /workspace bind), that the bind mount
// points it expects exist, and that every name it creates is one of a fixed
// set. It is linked statically (libc, the C++ standard library, Abseil's
// status types and lazaret_fs) so it runs in any image.
#ifndef LAZARET_ESCALATE_SANDBOX_INIT_SANDBOX_INIT_H_
#define LAZARET_ESCALATE_SANDBOX_INIT_SANDBOX_INIT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace lazaret::sandbox_init {

// Exit code when setting up fails; the command never starts then (the same
// code podman uses for its own failures).
inline constexpr int kSetupFailedExitCode = 125;

struct Options {
  // Git Shadow; all empty when the workspace has no repository.
  std::string git_dir;                 // --git-dir: the tmpfs to fill (/workspace/.git)
  std::string git_shadow;              // --git-shadow: the read-only host common dir
  std::string git_head;                // --git-head: "refs/heads/lazaret/..."
  std::string git_index;               // --git-index: host index to copy (optional)
  std::string git_packed_refs;         // --git-packed-refs: what packed-refs links to
  std::vector<std::string> git_links;  // --git-link: names to symlink into the shadow
  // The host's CAs (trust_host_ca); both empty, or both set.
  std::string ca_host;    // --ca-host: the host's certificates, bound read-only
  std::string ca_bundle;  // --ca-bundle: the file to write, in a tmpfs
  // After "--". Empty: the user's shell.
  std::vector<std::string> command;
};

// Parses `--flag=value` options up to "--"; everything after it is the
// command.
absl::Status ParseArgs(const std::vector<std::string>& args, Options* options);

// Fills options.git_dir. Precondition: options.git_dir is non-empty.
absl::Status BuildGitDir(const Options& options);

// The image's own CA bundle: the first readable of these (Debian and
// Ubuntu, Fedora and RHEL, Alpine and others).
inline constexpr const char* kImageCaBundles[] = {
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
};

// Writes options.ca_bundle: the image's bundle (the first of
// `image_bundles` that is a readable regular file, none is fine) followed
// by options.ca_host, concatenated as they are - the union, so every root
// the image trusts stays trusted. Refuses a target whose directory is not
// a tmpfs (a missing mount must never make it write into the image or a
// bind), a missing host file, and either file over kMaxCaBundleBytes.
// Precondition: options.ca_bundle is non-empty.
inline constexpr uint64_t kMaxCaBundleBytes = 16ull << 20;
absl::Status BuildCaBundle(const Options& options, const std::vector<std::string>& image_bundles);

// The program to run when no command is given: $SHELL if it is an absolute
// path to an executable, else /bin/bash, else /bin/sh.
std::string DefaultShell();

// Replaces this process with the command (or the default shell). Returns
// only on failure, with the exit code to use (126 or 127, as shells do).
int ExecCommand(const Options& options, std::string* error);

}  // namespace lazaret::sandbox_init

#endif  // LAZARET_ESCALATE_SANDBOX_INIT_SANDBOX_INIT_H_
