// git zipnn migrate import / export: history written again with
// checkpoints stored by git-zipnn (from plain git blobs or Git LFS
// pointers), or back to Git LFS. The work is lib/ops/migrate.h's; this
// file parses, and prints the dry run's list, the map of old commits to
// new ones, and what is left to do.
#include <cstdio>
#include <functional>
#include <memory>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/strings.h"
#include "lib/ops/migrate.h"

namespace zipnn::cmd {

namespace {

struct MigrateArgs {
  std::vector<std::string> include, exclude, refs;
  bool everything = false;
  bool dry_run = false;
};

// "5 distinct checkpoints (8 versions at 2 paths)".
std::string Counts(size_t distinct, size_t versions, size_t paths) {
  return Counted(distinct, "distinct checkpoint") + " (" + Counted(versions, "version") + " at " +
         Counted(paths, "path") + ")";
}

// "a, b, c".
std::string Listed(const std::vector<std::string>& words) {
  std::string list;
  for (const std::string& w : words) list += (list.empty() ? "" : ", ") + w;
  return list;
}

// What a dry run prints: each chosen path with its versions and bytes.
void PrintChosen(const ops::Chosen& chosen, size_t commits, const char* to) {
  size_t versions = 0;
  for (const ops::ChosenPath& p : chosen.paths) {
    std::printf("%s: %s, %s\n", p.path.c_str(), Counted(p.versions, "version").c_str(), HumanBytes(p.bytes).c_str());
    versions += p.versions;
  }
  std::printf("would store %s in %s and write %s of %s again\n",
              Counts(chosen.distinct, versions, chosen.paths.size()).c_str(), to, Counted(commits, "commit").c_str(),
              chosen.refs.c_str());
}

// After the rewrite: the map, what moved, and what is left to do.
void Report(const ops::Migrated& m, const char* to) {
  const git::Rewritten& done = m.done;
  for (const auto& [old_id, new_id] : done.commits) std::printf("%s %s\n", old_id.c_str(), new_id.c_str());
  if (m.Unchanged()) {
    std::fprintf(stderr, "git-zipnn: nothing changed: every commit is as it was (every file chosen is in %s already)\n",
                 to);
    return;
  }
  std::fprintf(stderr,
               "git-zipnn: stored %s in %s and wrote %s again (old and new ids above, one commit a line); refs "
               "moved: %s\n"
               "git-zipnn: the old commits stay in git's reflog until it expires; `git reflog expire --expire=now "
               "--all && git gc --prune=now` drops them now%s. %s\n",
               Counts(m.stored, m.versions, m.paths).c_str(), to, Counted(done.commits.size(), "commit").c_str(),
               Listed(done.refs).c_str(),
               m.from_lfs ? " (and `git lfs prune` the Git LFS copies, once no remote-tracking branch names them)" : "",
               m.as_on_remote.empty()
                   ? "The history is new: push it with --force, and teammates clone again"
                   : ("The history is again the one the remote has (the commits " + Listed(m.as_on_remote) +
                      " names): nothing needs --force, and teammates' clones stay as they are")
                         .c_str());
  if (done.notes > 0) {
    std::fprintf(stderr, "git-zipnn: copied %s of %s to the new commits and tags (the old ones keep theirs)\n",
                 Counted(done.notes, "git note").c_str(), Listed(done.notes_refs).c_str());
  }
  // Branches that only a remote-tracking ref names were not rewritten: a
  // push --force --all would leave them as they were on the remote.
  if (!m.remote_only.empty()) {
    const char* them = m.remote_only.size() == 1 ? "it" : "them";
    std::fprintf(stderr,
                 "git-zipnn: not rewritten: %s, which only a remote-tracking branch names (check %s out and migrate "
                 "again to include %s)\n",
                 Listed(m.remote_only).c_str(), them, them);
  }
}

// Both directions: read and check, list for a dry run, else rewrite
// through `write` and check the branch here out again.
Status Run(const MigrateArgs& a, git::Driver to,
           const std::function<Result<ops::Migrated>(ops::Context&, ops::Migration&)>& write) {
  const ops::MigrateRequest request{PatternList(a.include), PatternList(a.exclude), a.refs, a.everything, a.dry_run};
  const char* name = to == git::Driver::kZipnn ? "git-zipnn" : "Git LFS";
  ops::Context context;
  ZIPNN_ASSIGN_OR_RETURN(git::Repository * found, context.Git());
  git::Repository& git_repo = *found;
  ZIPNN_ASSIGN_OR_RETURN(ops::Migration migration,
                         ops::ReadMigration(git_repo, request, to, [](const std::string& sentence) {
                           std::fprintf(stderr, "git-zipnn: %s\n", sentence.c_str());
                         }));
  if (a.dry_run) {
    ZIPNN_ASSIGN_OR_RETURN(ops::Chosen chosen, ops::ListChosen(git_repo, migration));
    PrintChosen(chosen, migration.rewrite.commits(), name);
    return OkStatus();
  }
  ZIPNN_ASSIGN_OR_RETURN(ops::Migrated done, write(context, migration));
  Report(done, name);
  return ops::CheckOutAgain(git_repo);
}

Status RunImport(const MigrateArgs& a) {
  return Run(a, git::Driver::kZipnn, [](ops::Context& context, ops::Migration& m) -> Result<ops::Migrated> {
    ZIPNN_ASSIGN_OR_RETURN(store::Store * store, context.Store());
    ZIPNN_ASSIGN_OR_RETURN(git::Repository * git_repo, context.Git());
    return ops::Import(*git_repo, m, *store);
  });
}

Status RunExport(const MigrateArgs& a) {
  return Run(a, git::Driver::kLfs, [](ops::Context& context, ops::Migration& m) -> Result<ops::Migrated> {
    ZIPNN_ASSIGN_OR_RETURN(store::Store * store, context.Store());
    ZIPNN_ASSIGN_OR_RETURN(git::Repository * git_repo, context.Git());
    return ops::Export(*git_repo, m, *store);
  });
}

void AddMigrateOptions(CLI::App& sub, MigrateArgs& a) {
  sub.add_option("-I,--include", a.include,
                 "Files to migrate: a .gitattributes pattern, or several comma-separated (default: the patterns "
                 ".gitattributes gives to the other side)")
      ->allow_extra_args(false);
  sub.add_option("-X,--exclude", a.exclude, "Files to leave as they are, among those --include names")
      ->allow_extra_args(false);
  sub.add_flag("--everything", a.everything, "Rewrite every local branch and tag (default: the current branch)");
  sub.add_flag("-n,--dry-run", a.dry_run, "List the files and versions that would be migrated; change nothing");
  sub.add_option("revisions", a.refs, "Branches to rewrite, or ranges (main, v1..main, ^origin/main)");
}

}  // namespace

Action SetupMigrate(CLI::App& sub) {
  auto a = std::make_shared<MigrateArgs>();
  CLI::App* import = sub.add_subcommand(
      "import", "Rewrite history so that checkpoints in plain git blobs or Git LFS are stored by git-zipnn");
  CLI::App* export_ =
      sub.add_subcommand("export", "Rewrite history so that checkpoints git-zipnn stores are in Git LFS");
  AddMigrateOptions(*import, *a);
  AddMigrateOptions(*export_, *a);
  sub.require_subcommand(1);
  return [a, import]() -> Status { return import->parsed() ? RunImport(*a) : RunExport(*a); };
}

}  // namespace zipnn::cmd
