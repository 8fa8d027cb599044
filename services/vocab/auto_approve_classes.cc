#include "services/vocab/auto_approve_classes.h"

namespace lazaret::vocab {
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
        "curl",      "wc",         "getfattr",  "identify",  "ffprobe",   "mediainfo", "glow",
        "mdcat",     "xsv",        "qsv",       "csvcut",    "csvlook",   "csvstat",   "catdoc",
        "antiword"}},
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

const std::vector<RiskyOptions>& RiskyOptionTables() {
  static const auto* const kTables = new std::vector<RiskyOptions>{
      {{"date"},
       OptionRisk::kFile,
       "reads the file its value names and prints what it parsed (or that file's time)",
       {"-f", "--file", "-r", "--reference"}},
      {{"dmesg"},
       OptionRisk::kFile,
       "reads the log file its value names and prints it",
       {"-F", "--file", "-K", "--kmsg-file"}},
      {{"tree"},
       OptionRisk::kFile,
       "writes its output to the file its value names, or reads its operands as files",
       {"-o", "--fromfile", "-R"}},
      {{"gh", "glab"},
       OptionRisk::kFile,
       "reads the file its value names (a field '@FILE', a request body or an issue body) and "
       "sends it",
       {"-F", "--field", "--input", "--body-file"}},
      {{"gh", "glab"},
       OptionRisk::kRedirect,
       "turns a read into a write request, or sends your token to another host",
       {"-f", "--raw-field", "-X", "--method", "--hostname"}},
      {{"aws"},
       OptionRisk::kFile,
       "reads the file its value names (file:// input, a CA bundle)",
       {"--cli-input-json", "--cli-input-yaml", "--ca-bundle"}},
      {{"aws", "az", "gcloud"},
       OptionRisk::kSecrets,
       "prints the signed request, tokens and credentials it handles",
       {"--debug", "--log-http"}},
      {{"aws"},
       OptionRisk::kRedirect,
       "sends your signed request to an endpoint the value names, skips its TLS checks, or uses "
       "other credentials",
       {"--endpoint-url", "--profile", "--no-verify-ssl"}},
      {{"gcloud"},
       OptionRisk::kFile,
       "reads the file its value names (flags, an access token)",
       {"--flags-file", "--access-token-file"}},
      {{"gcloud"},
       OptionRisk::kRedirect,
       "uses other credentials or another configuration",
       {"--account", "--configuration", "--impersonate-service-account"}},
      {{"curl"},
       OptionRisk::kFile,
       "reads or writes the file its value names (output, config, upload, form or data '@FILE', "
       "cookies, headers, traces, certificates, netrc)",
       {"-o",         "--output",      "-O",        "--remote-name", "-K",
        "--config",   "-T",            "--upload-file", "-d",       "--data",
        "--data-binary", "--data-urlencode", "-F",  "--form",        "-b",
        "--cookie",   "-c",            "--cookie-jar", "-D",         "--dump-header",
        "--trace",    "--trace-ascii", "--stderr",  "-E",            "--cert",
        "--key",      "--cacert",      "--netrc-file", "-n",         "--netrc",
        "--libcurl",  "--output-dir"}},
      {{"wc", "du"},
       OptionRisk::kFile,
       "reads the names of the files to measure from the file its value names",
       {"--files0-from", "-X", "--exclude-from"}},
      {{"journalctl"},
       OptionRisk::kFile,
       "reads or writes the journal files or cursor file its value names",
       {"--file", "-D", "--directory", "--root", "--image", "--cursor-file"}},
      {{"last", "lastb"},
       OptionRisk::kFile,
       "reads the login record file its value names",
       {"-f", "--file"}},
      {{"hostname"}, OptionRisk::kFile, "reads the file its value names", {"-F", "--file"}},
      {{"ss"},
       OptionRisk::kFile,
       "reads a filter from, or dumps raw data to, the file its value names",
       {"-F", "--filter", "-D", "--diag"}},
      {{"dig"},
       OptionRisk::kFile,
       "reads queries or a TSIG key from the file its value names",
       {"-f", "-k"}},
      {{"sensors"},
       OptionRisk::kFile,
       "reads the configuration file its value names",
       {"-c", "--config-file"}},
  };
  return *kTables;
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

}  // namespace lazaret::vocab
