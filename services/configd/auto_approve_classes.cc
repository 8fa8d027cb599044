#include "services/configd/auto_approve_classes.h"

namespace lazaret::config {
namespace {

// The classes after the runners.
const std::vector<RefusedTable>& OtherTables() {
  static const auto* const kTables = new std::vector<RefusedTable>{
      {EntryClass::kProcessControl,
       "it sends signals to, stops or otherwise controls other processes of the user or the "
       "machine",
       {"kill", "pkill", "killall", "skill", "snice", "renice", "xkill", "fuser", "reptyr",
        "loginctl", "wmctrl", "shutdown", "reboot", "poweroff", "halt", "telinit"}},
      {EntryClass::kBuiltin,
       "the broker never runs a shell (it would run a program of that name from PATH, if any)",
       {"source",   ".",       "eval",     "exec",    "export",   "alias",     "unalias",
        "cd",       "set",     "unset",    "trap",    "ulimit",   "umask",     "read",
        "builtin",  "command", "type",     "hash",    "declare",  "typeset",   "local",
        "readonly", "shopt",   "enable",   "fc",      "history",  "jobs",      "fg",
        "bg",       "wait",    "disown",   "suspend", "logout",   "exit",      "return",
        "shift",    "getopts", "let",      "pushd",   "popd",     "dirs",      "bind",
        "complete", "compgen", "compopt",  "caller",  "mapfile",  "readarray", "times",
        "coproc",   "select",  "function", "setopt",  "unsetopt", "autoload",  "zmodload",
        "emulate",  "whence",  "noglob",   "bindkey", "zle",      "sched"}},
      {EntryClass::kReader,
       "it returns the content of the files named in its arguments (or data derived from it)",
       {"cat",       "tac",        "head",      "tail",      "nl",        "od",        "xxd",
        "hexdump",   "hd",         "hexyl",     "strings",   "base64",    "base32",    "basenc",
        "md5sum",    "sha1sum",    "sha224sum", "sha256sum", "sha384sum", "sha512sum", "shasum",
        "b2sum",     "b3sum",      "cksum",     "sum",       "grep",      "egrep",     "fgrep",
        "rgrep",     "ggrep",      "zgrep",     "zegrep",    "zfgrep",    "bzgrep",    "xzgrep",
        "zstdgrep",  "lzgrep",     "zcat",      "bzcat",     "xzcat",     "zstdcat",   "lz4cat",
        "lzcat",     "zipinfo",    "diff",      "diff3",     "cmp",       "comm",      "join",
        "paste",     "cut",        "fold",      "fmt",       "pr",        "expand",    "unexpand",
        "column",    "rev",        "look",      "shuf",      "tsort",     "ptx",       "jq",
        "gojq",      "jaq",        "yq",        "xq",        "tomlq",     "dasel",     "gron",
        "xmllint",   "xmlstarlet", "readelf",   "objdump",   "nm",        "file",      "exiftool",
        "pdftotext", "pdfinfo",    "highlight", "lolcat",    "iconv",     "uniq",      "dd",
        "curl"}},
      {EntryClass::kWriter,
       "it writes, moves or removes the files named in its arguments",
       {"cp",       "mv",          "rm",       "rmdir",     "tee",        "dd",       "ln",
        "link",     "unlink",      "chmod",    "chown",     "chgrp",      "chattr",   "setfacl",
        "setfattr", "touch",       "truncate", "fallocate", "mkdir",      "mktemp",   "mkfifo",
        "mknod",    "patch",       "unzip",    "shred",     "wipe",       "srm",      "rename",
        "prename",  "file-rename", "sponge",   "trash",     "trash-put",  "gzip",     "gunzip",
        "bzip2",    "bunzip2",     "xz",       "unxz",      "lzma",       "unlzma",   "lzip",
        "lz4",      "zstd",        "unzstd",   "compress",  "uncompress", "7z",       "7za",
        "7zr",      "rar",         "unrar",    "unar",      "pax",        "ar",       "csplit",
        "uniq",     "iconv",       "xxd",      "tic",       "dos2unix",   "unix2dos", "ffmpeg",
        "avconv",   "sox",         "convert",  "magick",    "mogrify",    "gm",       "qpdf",
        "pdftk",    "curl"}},
  };
  return *kTables;
}

}  // namespace

const std::vector<RefusedTable>& RefusedTables() {
  static const auto* const kAll = [] {
    auto* all = new std::vector<RefusedTable>(RunnerTables());
    all->insert(all->end(), OtherTables().begin(), OtherTables().end());
    return all;
  }();
  return *kAll;
}

const std::vector<RefusedNamePrefix>& RefusedNamePrefixes() {
  static const auto* const kPrefixes = new std::vector<RefusedNamePrefix>{
      {"git-", "it is a git helper (git and every git subcommand run hooks, aliases and pagers)"},
      {"ssh-", "it is an ssh tool (loads PKCS#11 modules or runs remote commands)"},
      {"qemu-", "it runs virtual machines"},
      {"ld-", "it is the dynamic loader, and runs any program"},
      {"ld.so", "it is the dynamic loader, and runs any program"},
      {"lazaret-", "it is part of Lazaret itself"},
      {"docker-", "it runs containers"},
      {"podman-", "it runs containers"},
      {"x86_64-", "it is a cross toolchain driver (compilers run plugins and wrappers)"},
  };
  return *kPrefixes;
}

absl::string_view ClassLabel(EntryClass cls) {
  switch (cls) {
    case EntryClass::kRunner:
      return "runner of code or shells";
    case EntryClass::kProcessControl:
      return "program that signals or controls other processes of the user";
    case EntryClass::kBuiltin:
      return "shell builtin";
    case EntryClass::kWriter:
      return "writer of arbitrary paths";
    case EntryClass::kReader:
      return "reader of arbitrary paths";
  }
  return "refused program";
}

absl::string_view ClassConsequence(EntryClass cls) {
  switch (cls) {
    case EntryClass::kRunner:
      return "; auto-approving it would let the agent run arbitrary code on the host";
    case EntryClass::kProcessControl:
      return "; auto-approving it would let the agent stop or disturb your other programs, the "
             "broker and your editor included";
    case EntryClass::kBuiltin:
      return "";
    case EntryClass::kWriter:
      return "; as a prefix the agent appends the paths, so it could overwrite any file you can "
             "(~/.bashrc, ~/.ssh/authorized_keys); list exact commands with absolute paths "
             "instead, e.g. { exact = \"touch /tmp/build-done\" }";
    case EntryClass::kReader:
      return "; as a prefix the agent appends the paths, so it could read any file you can "
             "(~/.ssh, ~/.aws/credentials) and get it back; list exact commands with absolute "
             "paths instead, e.g. { exact = \"cat /etc/os-release\" }";
  }
  return "";
}

bool ExactEntryLifts(EntryClass cls) {
  return cls == EntryClass::kReader || cls == EntryClass::kWriter;
}

}  // namespace lazaret::config
