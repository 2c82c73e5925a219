// The store protocol: an object store served over a two-way byte stream,
// as `git zipnn serve-store` does at the far end of an ssh connection.
// docs/remotes.md ("The store protocol") is the specification; in short:
//
//   server, once:  git-zipnn-store 1\n     (or: error <message>\n, and it ends)
//   has <n>\n<id>\n x n          ->  ok <n digits, 1 = held, 0 = not>\n
//   get <id>\n                   ->  ok <size>\n<size bytes> | missing\n | error <message>\n
//   put <id> <size>\n<size bytes> ->  ok\n | error <message>\n
//   get-from <id> <from> <copy>\n  ->  ok <size> <copy served> <start>\n<size - start bytes> | missing\n | error ...
//   put-from <id> <size> <copy>\n  ->  ok <have>\n, then <size - have bytes> -> ok\n | error <message>\n
//     (transfers that resume where one cut short stopped; <copy> names
//     the file the bytes are of, ReadFile::Identity, or is "-")
//   get-range <id> <from> <to> <copy>\n -> ok <size> <copy served> <from> <n>\n<n bytes> | missing\n | error ...
//     (bytes [from, to) of the copy named, or of any with "-", clipped to
//     the object; none when another copy is served: one object fetched in
//     ranges on several connections at once)
//   put-ranges <id> <size> <copy>\n -> ok <k>\n<from> <to>\n x k | error ...   (ranges held of that file)
//   put-range <id> <from> <to> <copy> <size>\n<to - from bytes> -> ok\n | error <message>\n
//   put-end <id> <size> <copy>\n   -> ok\n | error <message>\n   (proven and named, or all of it dropped)
//     (one object sent in ranges on several connections at once)
//   demote <id> <size>\n<size bytes> ->  ok <bytes replaced; 0: none>\n | error <message>\n
//   prune <n>\n<id>\n x n          ->  ok <k>\n<kept id> <id resting on it>\n x k | error <message>\n
//   put-side <kind> <id> <size>\n<size bytes> -> ok\n | error <message>\n
//   get-side <kind> <id>\n           ->  ok <size>\n<size bytes> | missing\n | error <message>\n
//   (and retention's list, stat, replace, remove; put-note, get-note,
//   put-record and get-record, the side-file requests from before
//   put-side, which a client still sends and a server answers)
// The server's requests are one table (kVerbs in served.cc).
//
// One request at a time, each answered before the next; the client ends
// a session by closing its end. A server receives an object under a
// temporary name and decodes it against its base (DecodeReceived) before
// it takes its name, so a broken session leaves no partial object and a
// forged one is refused; `has` counts only intact copies. A client gives
// every read and write a timeout (no byte moved for that long ends the
// session, and the remote is not asked again) and a minimum rate (a
// server that trickles is ended the same way; the time it takes to think
// before it answers is the timeout's), refuses an object larger than its
// checkpoint can take, and stops reading at its first write error.
//
// ServeStore runs one session on one thread. A ServedRemote is
// thread-safe: each call takes a session of its own, opening another
// connection when every open one is busy, so transfers run in parallel.
// With `connections` above 1, a push or a fetch moves an object of more
// than 4 MiB in ranges on that many connections at once, and no more
// sessions than that are in use at once.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/store/object_store.h"
#include "lib/remote/remote_store.h"

namespace zipnn::remote {

inline constexpr char kStoreProtocolGreeting[] = "git-zipnn-store 1";

// Serves `store` to the client at the other end of `client` until it
// closes its end (OK) or breaks the protocol (an error naming what it
// sent). Answers a request that fails (an object that will not store)
// with an error line and goes on.
Status ServeStore(const store::ObjectStore& store, Channel& client);

// Tells a client that this server cannot serve (in place of the greeting).
Status RefuseToServe(Channel& client, const std::string& why);

// Opens a new connection to a store server.
using StoreConnector = std::function<Result<std::unique_ptr<Channel>>()>;

// Where the user sets the timeout, for messages.
inline constexpr char kTimeoutSetting[] = "GIT_ZIPNN_TIMEOUT, or git config zipnn.timeout";
// The timeout when none is set: a minute with nothing moving.
inline constexpr double kDefaultTimeout = 60;

// A remote store reached through the store protocol. `where` names it in
// messages; `no_answer` is added to the error when a new connection closes
// before the server greets (what the user should check); `timeout` bounds
// each read and write, in seconds (0: none); `low_speed` is the slowest
// the server may send or take an object or a line; `partial_dir` is
// where downloads are kept as they come in, so that one cut short resumes
// (partial.h; empty: nowhere); `connections` bounds the sessions in use
// at once, and is how many ranges of one object move at once.
std::unique_ptr<RemoteStore> ServedRemote(std::string where, StoreConnector connect, std::string no_answer,
                                          double timeout = kDefaultTimeout, LowSpeed low_speed = kDefaultLowSpeed,
                                          std::string partial_dir = "", int connections = 1);

}  // namespace zipnn::remote
