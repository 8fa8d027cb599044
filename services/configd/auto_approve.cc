#include "services/configd/auto_approve.h"

#include <algorithm>
#include <array>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "services/configd/shell_words.h"

namespace lazaret::config {
namespace {

// One class of program that rule 3 refuses, with the reason shown to the user.
struct CodeRunnerClass {
  const char* why;
  std::vector<absl::string_view> names;
};

// Rule 3, applied. A name belongs here when some arguments make it run a
// program or load code the agent can choose (a file in the workspace, a
// string in an argument, a config file named by an argument).
const std::vector<CodeRunnerClass>& CodeRunners() {
  static const auto* const kCodeRunners = new std::vector<CodeRunnerClass>{
      {"is a shell or terminal multiplexer: it runs any command given as an argument",
       {"sh",      "bash",   "dash",  "zsh",    "ksh",        "mksh",    "pdksh",  "oksh",
        "yash",    "ash",    "csh",   "tcsh",   "fish",       "rc",      "es",     "nu",
        "nushell", "elvish", "xonsh", "pwsh",   "powershell", "busybox", "toybox", "rbash",
        "screen",  "tmux",   "byobu", "script", "expect",     "login"}},
      {"is an interpreter or language runtime: it runs code from its arguments or from files "
       "the agent can write",
       {"python", "pypy",    "ipython",    "jupyter", "perl",    "ruby",   "irb",       "node",
        "nodejs", "deno",    "bun",        "php",     "lua",     "luajit", "tclsh",     "wish",
        "awk",    "gawk",    "mawk",       "nawk",    "sed",     "java",   "jshell",    "kotlin",
        "scala",  "groovy",  "clojure",    "r",       "rscript", "julia",  "guile",     "racket",
        "sbcl",   "clisp",   "ecl",        "gforth",  "ocaml",   "swipl",  "erl",       "elixir",
        "iex",    "escript", "osascript",  "mono",    "dotnet",  "gdb",    "lldb",      "dc",
        "m4",     "sqlite",  "psql",       "mysql",   "mariadb", "duckdb", "gnuplot",   "octave",
        "tsx",    "ts-node", "babel-node", "coffee",  "jq-repl", "runghc", "runhaskell"}},
      {"is a command wrapper: the rest of its arguments are a command it runs",
       {"env",         "sudo",           "doas",          "su",
        "pkexec",      "runuser",        "setpriv",       "sg",
        "newgrp",      "xargs",          "find",          "timeout",
        "nice",        "ionice",         "nohup",         "stdbuf",
        "chroot",      "unshare",        "nsenter",       "setsid",
        "taskset",     "chrt",           "flock",         "time",
        "watch",       "strace",         "ltrace",        "valgrind",
        "perf",        "catchsegv",      "parallel",      "sem",
        "exec",        "command",        "builtin",       "eval",
        "systemd-run", "systemd-nspawn", "dbus-launch",   "dbus-run-session",
        "firejail",    "bwrap",          "proot",         "fakeroot",
        "fakechroot",  "unbuffer",       "rlwrap",        "entr",
        "watchexec",   "nodemon",        "hyperfine",     "chpst",
        "prlimit",     "numactl",        "cgexec",        "cpulimit",
        "ssh-agent",   "xvfb-run",       "ldd",           "faketime",
        "torsocks",    "proxychains",    "tsocks",        "machinectl",
        "direnv",      "with-contenv",   "flatpak-spawn", "distrobox",
        "toolbox",     "schroot",        "run-parts"}},
      {"has options that run a program or load code chosen in its arguments",
       {"git",
        "hg",
        "svn",
        "bzr",
        "fossil",
        "rg",
        "ag",
        "tar",
        "rsync",
        "scp",
        "sftp",
        "ssh",
        "mosh",
        "zip",
        "sort",
        "split",
        "install",
        "wget",
        "openssl",
        "gpg",
        "gpg2",
        "gpgv",
        "nc",
        "ncat",
        "netcat",
        "socat",
        "telnet",
        "apt",
        "apt-get",
        "aptitude",
        "dpkg",
        "rpm",
        "dnf",
        "yum",
        "zypper",
        "pacman",
        "apk",
        "brew",
        "snap",
        "flatpak",
        "nix",
        "nix-shell",
        "nix-env",
        "guix",
        "conda",
        "mamba",
        "micromamba",
        "asdf",
        "mise",
        "rtx",
        "systemctl",
        "launchctl",
        "lesspipe",
        "ssh-keygen",
        "ssh-add",
        "ssh-copy-id",
        "xdg-open",
        "open",
        "gio",
        "kde-open",
        "gnome-open",
        "sensible-browser",
        "x-www-browser",
        "www-browser",
        "run-mailcap",
        "see",
        "mailcap",
        "busctl",
        "dbus-send",
        "gdbus"}},
      {"is an editor, pager or viewer that can run shell commands",
       {"vi",     "vim",  "nvim",   "view",           "vimdiff",
        "ex",     "ed",   "emacs",  "emacsclient",    "nano",
        "pico",   "joe",  "mcedit", "micro",          "kak",
        "helix",  "hx",   "less",   "more",           "most",
        "man",    "info", "pager",  "sensible-pager", "sensible-editor",
        "editor", "vipe", "code",   "codium",         "subl"}},
      {"is a build tool, test runner, compiler or package manager: it runs code from the "
       "agent-writable workspace",
       {"make",       "gmake",      "bmake",
        "cmake",      "ctest",      "ninja",
        "meson",      "scons",      "bazel",
        "bazelisk",   "buck",       "buck2",
        "pants",      "gradle",     "gradlew",
        "mvn",        "mvnw",       "ant",
        "sbt",        "lein",       "npm",
        "npx",        "pnpm",       "pnpx",
        "yarn",       "corepack",   "cargo",
        "rustup",     "rustc",      "go",
        "pip",        "pipx",       "pipenv",
        "poetry",     "pdm",        "uv",
        "uvx",        "hatch",      "tox",
        "nox",        "pytest",     "py.test",
        "nosetests",  "rake",       "bundle",
        "bundler",    "gem",        "composer",
        "msbuild",    "nuget",      "mix",
        "rebar3",     "stack",      "cabal",
        "ghc",        "ghci",       "swift",
        "swiftc",     "xcodebuild", "just",
        "task",       "invoke",     "fab",
        "pre-commit", "husky",      "lefthook",
        "jest",       "vitest",     "mocha",
        "karma",      "playwright", "cypress",
        "phpunit",    "rspec",      "cucumber",
        "behave",     "gcc",        "cc",
        "c++",        "g++",        "cpp",
        "clang",      "clang++",    "tcc",
        "ld",         "javac",      "kotlinc",
        "scalac",     "nvcc",       "emcc",
        "zig",        "nim",        "crystal",
        "dart",       "flutter",    "webpack",
        "vite",       "rollup",     "esbuild",
        "parcel",     "turbo",      "nx",
        "lerna",      "grunt",      "gulp",
        "terraform",  "tofu",       "pulumi",
        "packer",     "ansible",    "ansible-playbook",
        "vagrant",    "earthly",    "dagger"}},
      {"runs containers, virtual machines or remote commands",
       {"docker", "podman", "buildah", "nerdctl", "kubectl", "helm", "minikube", "kind", "k3d",
        "virsh", "lxc", "incus", "runc", "crun", "runsc", "ctr", "qemu", "skopeo"}},
      {"schedules commands to run later", {"crontab", "at", "batch", "anacron"}},
      {"is Lazaret itself: an auto-approved lazaret could change its own policy", {"lazaret"}},
  };
  return *kCodeRunners;
}

// Name prefixes refused with the class of their base program.
constexpr std::array<std::pair<const char*, const char*>, 9> kRefusedPrefixes = {{
    {"git-", "is a git helper (git and every git subcommand run hooks, aliases and pagers)"},
    {"ssh-", "is an ssh tool (loads PKCS#11 modules or runs remote commands)"},
    {"qemu-", "runs virtual machines"},
    {"ld-", "is the dynamic loader: it runs any program"},
    {"ld.so", "is the dynamic loader: it runs any program"},
    {"lazaret-", "is part of Lazaret itself"},
    {"docker-", "runs containers"},
    {"podman-", "runs containers"},
    {"x86_64-", "is a cross toolchain driver (compilers run plugins and wrappers)"},
}};

// Rule 4: CLIs accepted only with a named subcommand, and never with these.
struct SubcommandTool {
  absl::string_view name;
  std::vector<absl::string_view> refused_subcommands;
};
const std::vector<SubcommandTool>& SubcommandTools() {
  static const auto* const kTools = new std::vector<SubcommandTool>{
      {"gh", {"alias", "extension", "ext", "codespace", "cs", "config", "auth"}},
      {"glab", {"alias", "config", "auth"}},
      {"aws", {"configure", "ssm", "ecs"}},
      {"gcloud", {"config", "components", "compute", "cloud-shell", "auth", "alpha", "beta"}},
      {"az", {"extension", "config", "ssh", "login"}},
  };
  return *kTools;
}

// Accepted with a warning: write, move or delete files named by arguments.
constexpr std::array<absl::string_view, 18> kFileWriters = {
    "curl",  "cp",    "mv",       "rm",    "rmdir", "tee",   "dd",    "ln",     "chmod",
    "chown", "touch", "truncate", "mkdir", "patch", "unzip", "shred", "rename", "sponge"};

bool AllowedEntryChar(char c) {
  if (absl::ascii_isalnum(static_cast<unsigned char>(c))) return true;
  return absl::string_view(" '\"_-.,:/=+@%^").find(c) != absl::string_view::npos;
}

bool BareNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '+' ||
         c == '-';
}

std::string Printable(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string(1, c);
  return absl::StrFormat("\\x%02x", u);
}

}  // namespace

std::string NormalizeCommandName(absl::string_view name) {
  std::string s = absl::AsciiStrToLower(name);
  size_t i = s.size();
  bool saw_digit = false;
  while (i > 0 && (absl::ascii_isdigit(static_cast<unsigned char>(s[i - 1])) || s[i - 1] == '.')) {
    saw_digit = saw_digit || absl::ascii_isdigit(static_cast<unsigned char>(s[i - 1]));
    --i;
  }
  if (!saw_digit) return s;
  if (i > 0 && (s[i - 1] == '-' || s[i - 1] == '_')) --i;
  if (i == 0) return s;
  return s.substr(0, i);
}

bool IsArgvPrefix(const std::vector<std::string>& prefix, const std::vector<std::string>& argv) {
  return prefix.size() <= argv.size() && std::equal(prefix.begin(), prefix.end(), argv.begin());
}

absl::StatusOr<CommandPrefix> CheckAutoApproveEntry(absl::string_view entry,
                                                    std::vector<std::string>* warnings) {
  // Rule 1.
  for (char c : entry) {
    if (!AllowedEntryChar(c)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "contains '", Printable(c),
          "': auto_approve entries are plain words (letters, digits, space, quotes and "
          "_-.,:/=+@%^); shell metacharacters, backslashes and control characters are never "
          "auto-approved"));
    }
  }
  absl::StatusOr<std::vector<std::string>> words = SplitShellWords(entry);
  if (!words.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot be split into words: ", words.status().message()));
  }
  if (words->empty() || (*words)[0].empty()) {
    return absl::InvalidArgumentError("is empty: name a command");
  }
  const std::string& argv0 = (*words)[0];
  // Rule 2.
  const bool bare =
      std::all_of(argv0.begin(), argv0.end(), BareNameChar) && argv0[0] != '-' && argv0[0] != '.';
  if (!bare) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", argv0,
        "' is not a bare command name: argv[0] must be a name found on the host's "
        "PATH, never a path or assignment (an agent can write files under any path it names)"));
  }
  // Rule 3.
  const std::string lower = absl::AsciiStrToLower(argv0);
  const std::string base = NormalizeCommandName(argv0);
  for (const CodeRunnerClass& cls : CodeRunners()) {
    for (absl::string_view name : cls.names) {
      if (name == lower || name == base) {
        return absl::InvalidArgumentError(
            absl::StrCat("'", argv0, "' ", cls.why,
                         "; auto-approving it would let the agent run "
                         "arbitrary code on the host"));
      }
    }
  }
  for (const auto& [prefix, why] : kRefusedPrefixes) {
    if (absl::StartsWith(lower, prefix)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", argv0, "' ", why,
                       "; auto-approving it would let the agent run arbitrary code on "
                       "the host"));
    }
  }
  // Rule 4.
  for (const SubcommandTool& tool : SubcommandTools()) {
    if (tool.name != lower) continue;
    if (words->size() < 2 || (*words)[1].empty() || (*words)[1][0] == '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("'", argv0,
                       "' alone is too broad: name a subcommand that runs no local code "
                       "(for example \"",
                       argv0, " <service> <read-only-action>\")"));
    }
    const std::string sub = absl::AsciiStrToLower((*words)[1]);
    for (absl::string_view refused : tool.refused_subcommands) {
      if (sub == refused) {
        return absl::InvalidArgumentError(absl::StrCat("'", argv0, " ", (*words)[1],
                                                       "' can install or configure code that ",
                                                       argv0, " later runs on the host"));
      }
    }
  }
  if (warnings != nullptr) {
    for (absl::string_view w : kFileWriters) {
      if (w == lower || w == base) {
        warnings->push_back(absl::StrCat(
            "'", argv0,
            "' writes or removes files named in its arguments; the agent can append "
            "any path you can write (e.g. ~/.bashrc); prefer a longer, more specific prefix"));
      }
    }
    if (words->size() == 1) {
      warnings->push_back(absl::StrCat("\"", std::string(entry), "\" approves '", argv0,
                                       "' with any arguments; a longer prefix is safer"));
    }
  }
  return CommandPrefix{std::string(entry), *std::move(words)};
}

}  // namespace lazaret::config
