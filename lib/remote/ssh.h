// Reaching a remote store over ssh, as git reaches a remote repository:
// the URL forms git accepts for ssh (ssh://[user@]host[:port]/path and the
// scp-like [user@]host:path), the quoting of the command line the far
// side's shell splits, and the argument vector that runs ssh the way git
// runs it (GIT_SSH_COMMAND or core.sshCommand through sh, else GIT_SSH,
// else ssh). All of it is security-relevant: a URL must never become an
// ssh option or a shell command of its own. Pure functions; no process is
// started here and nothing is read from git or the environment.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"

namespace zipnn::remote {

// Where an ssh URL points. `host` keeps a user@ when one is given; `port`
// is empty for ssh's default; `path` is as the server should take it
// ("~/x" from the home folder).
struct SshTarget {
  std::string host;
  std::string port;
  std::string path;
};

// The target of an ssh URL; nullopt for a URL that is not one (a local
// path, file://, s3://, https://). InvalidArgument, naming the URL, for
// an ssh URL whose host could be read as an option (starts with '-'), is
// empty, whose port is not a number, or that names no folder.
Result<std::optional<SshTarget>> ParseSshUrl(const std::string& url);

// `s` single-quoted for a POSIX shell (and safe from csh's '!').
std::string ShellQuote(const std::string& s);

// The argv that runs `remote_command` on `target`'s host. `command_line`:
// the user's GIT_SSH_COMMAND or core.sshCommand when set (run by /bin/sh,
// with our arguments after it); else `program`: GIT_SSH when set, else
// "ssh".
std::vector<std::string> SshArgv(const SshTarget& target, const std::string& remote_command,
                                 const std::optional<std::string>& command_line, const std::string& program);

}  // namespace zipnn::remote
