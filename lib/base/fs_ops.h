// The file operations that decide what survives on disk: writing a file's
// bytes, fsyncing a file or a folder, renaming and hard-linking, and the
// locks (flock) that tell a live process's files from a dead one's. Every
// write path of the store goes through these instead of the system calls,
// so that a test can make any single one of them fail inside the process
// (leveldb's Env and RocksDB's fault-injection file system serve the same
// purpose): each then behaves as the system call does, returning -1 with
// errno set; a lock instead succeeds and holds nothing, as on a file
// system whose locks do not work.
//
// A fault is asked for through the environment, read once per process:
//   GIT_ZIPNN_TEST_FAULT=<op>:<n>    the n-th <op> of the process fails
//   GIT_ZIPNN_TEST_FAULT=<op>:<n>+   it and every later <op> fail (a disk
//                                    that filled up and stays full)
// where <op> is write (ENOSPC), fsync (EIO), dirsync (EIO), rename (EIO),
// link (EIO) or flock (succeeds, locking nothing); and GIT_ZIPNN_TEST_FAULT_LOG=<file> appends a line
// "<pid> <op> <n> <name>" to <file> for each operation (the name a rename
// or link makes, the folder synced, the file written or fsynced as /proc
// names it, spaces made "_"; and " failed" after one made to fail), so
// that a test can count the points it has to try and check their order. Both are for tests: with neither set, each
// call costs one relaxed atomic increment beside its system call.
//
// Thread-safe.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>

namespace zipnn {

enum class FsOp { kWrite, kSync, kSyncFolder, kRename, kLink, kLock };
inline constexpr int kFsOpCount = 6;
// "write", "fsync", "dirsync", "rename", "link", "flock".
const char* FsOpName(FsOp op);
std::optional<FsOp> FsOpNamed(const std::string& name);

ssize_t FsWrite(int fd, const void* data, size_t n);
ssize_t FsPwrite(int fd, const void* data, size_t n, off_t offset);
int FsSync(int fd);                                   // a file's bytes
int FsSyncFolder(int fd, const std::string& folder);  // the names in `folder`, open as `fd`
int FsRename(const char* from, const char* to);
int FsLink(const char* from, const char* to);
int FsLinkAt(int from_dir, const char* from, int to_dir, const char* to, int flags);
int FsLock(int fd, int how);  // flock(2)

}  // namespace zipnn
