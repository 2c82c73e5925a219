#include "lib/remote/ssh.h"

#include <algorithm>

#include "lib/base/strings.h"

namespace zipnn::remote {

namespace {

// git's rule for "host:path": a colon before any slash.
bool ScpLike(const std::string& url) {
  const size_t colon = url.find(':');
  return colon != std::string::npos && colon > 0 && url.find('/') > colon;
}

}  // namespace

Result<std::optional<SshTarget>> ParseSshUrl(const std::string& url) {
  SshTarget t;
  std::string authority;
  for (const char* scheme : {"ssh://", "git+ssh://", "ssh+git://"}) {
    if (!StartsWith(url, scheme)) continue;
    const std::string rest = url.substr(std::string(scheme).size());
    const size_t slash = std::min(rest.find('/'), rest.size());
    authority = rest.substr(0, slash);
    t.path = rest.substr(slash);
    if (StartsWith(t.path, "/~")) t.path = t.path.substr(1);
    const size_t at = authority.rfind('@');
    const std::string user = at == std::string::npos ? "" : authority.substr(0, at + 1);
    std::string host_port = authority.substr(at == std::string::npos ? 0 : at + 1);
    size_t port_colon = host_port.rfind(':');
    if (StartsWith(host_port, "[")) {  // [ipv6]:port
      const size_t close = host_port.find(']');
      port_colon = close == std::string::npos || close + 1 >= host_port.size() ? std::string::npos : close + 1;
    }
    if (port_colon != std::string::npos) {
      t.port = host_port.substr(port_colon + 1);
      host_port = host_port.substr(0, port_colon);
    }
    t.host = user + host_port;
    break;
  }
  if (authority.empty()) {
    if (url.find("://") != std::string::npos || !ScpLike(url)) return std::optional<SshTarget>();
    const size_t colon = StartsWith(url, "[") ? url.find("]:") + 1 : url.find(':');
    t.host = url.substr(0, colon);
    t.path = url.substr(colon + 1);
  }
  if (t.host.size() > 1 && t.host.front() == '[' && t.host.back() == ']') t.host = t.host.substr(1, t.host.size() - 2);
  const std::string bare_host = t.host.substr(t.host.find('@') + 1);
  if (bare_host.empty() || t.host[0] == '-' || bare_host[0] == '-') {
    return InvalidArgument(url + ": not a host name ssh can be given");
  }
  if (!t.port.empty() && t.port.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgument(url + ": the port is not a number");
  }
  if (t.path.empty() || t.path == "/") return InvalidArgument(url + ": names no folder on the host");
  return std::optional<SshTarget>(t);
}

// `s` quoted for a POSIX shell: the remote command is a string that the
// far side's shell splits, so every argument in it is single-quoted.
std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else if (c == '!') {  // csh would expand it even inside quotes
      q += "'\\!'";
    } else {
      q += c;
    }
  }
  return q + "'";
}

std::vector<std::string> SshArgv(const SshTarget& target, const std::string& remote_command,
                                 const std::optional<std::string>& command_line, const std::string& program) {
  std::vector<std::string> argv;
  if (command_line && !command_line->empty()) {
    // The user's line is a shell command; ours follow it as "$@", never
    // pasted into it.
    argv = {"/bin/sh", "-c", *command_line + " \"$@\"", *command_line};
  } else {
    argv = {program.empty() ? "ssh" : program};
  }
  if (!target.port.empty()) argv.insert(argv.end(), {"-p", target.port});
  argv.insert(argv.end(), {target.host, remote_command});
  return argv;
}

}  // namespace zipnn::remote
