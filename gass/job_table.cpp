// The GASS server's per-job access table.
#include "gass/job_table.h"

namespace kite::gass {
namespace {

template <typename File>
Result<std::map<std::string, std::string, std::less<>>> BuildMap(std::vector<File> files,
                                                                 const char* kind) {
  std::map<std::string, std::string, std::less<>> out;
  for (auto& f : files) {
    if (!IsValidName(f.name)) {
      return Fail(ErrorCode::kInvalidInput, std::string("invalid ") + kind + " name '" + f.name +
                                                "' (letters, digits, ._~+- and '/')");
    }
    if (!IsCleanAbsolutePath(f.path)) {
      return Fail(ErrorCode::kInvalidInput, std::string(kind) + " '" + f.name +
                                                "' needs a clean absolute path, not '" + f.path +
                                                "'");
    }
    if (!out.emplace(std::move(f.name), std::move(f.path)).second) {
      return Fail(ErrorCode::kInvalidInput, std::string(kind) + " name listed twice");
    }
  }
  return out;
}

}  // namespace

bool IsCleanAbsolutePath(std::string_view path) {
  if (path.size() < 2 || path.front() != '/' || path.back() == '/') return false;
  if (path.find('\0') != std::string_view::npos) return false;
  size_t start = 1;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view seg = path.substr(start, slash - start);
    if (seg.empty() || seg == "." || seg == "..") return false;
    start = slash + 1;
  }
  return true;
}

Status JobTable::Add(std::string job_id, std::string allowed_identity,
                     std::vector<ReadableFile> readable, std::vector<WritableFile> writable) {
  if (!IsValidJobId(job_id)) {
    return Fail(ErrorCode::kInvalidInput, "invalid job id '" + job_id + "'");
  }
  if (allowed_identity.empty()) {
    return Fail(ErrorCode::kInvalidInput, "job " + job_id + " needs an allowed identity");
  }
  auto r = BuildMap(std::move(readable), "readable file");
  if (!r) return Fail(r.error().Wrap("job " + job_id));
  std::map<std::string, std::string, std::less<>> trees;
  for (const auto& f : writable) {
    if (f.tree) trees.emplace(f.name, f.path);
  }
  auto w = BuildMap(std::move(writable), "writable file");
  if (!w) return Fail(w.error().Wrap("job " + job_id));
  Job job{std::move(allowed_identity), std::move(*r), std::move(*w), std::move(trees)};
  std::lock_guard lock(mu_);
  jobs_.insert_or_assign(std::move(job_id), std::move(job));
  return {};
}

bool JobTable::Remove(const std::string& job_id) {
  std::lock_guard lock(mu_);
  return jobs_.erase(job_id) > 0;
}

size_t JobTable::size() const {
  std::lock_guard lock(mu_);
  return jobs_.size();
}

Result<ResolvedFile> JobTable::Resolve(const std::string& identity, const Target& target,
                                       Access access) const {
  std::lock_guard lock(mu_);
  auto job = jobs_.find(target.job_id);
  if (job == jobs_.end()) return Fail(ErrorCode::kNotFound, "no such job");
  if (job->second.identity != identity) {
    return Fail(ErrorCode::kAuthFailed, "job belongs to another identity");
  }
  const auto& files = access == Access::kRead ? job->second.readable : job->second.writable;
  if (auto f = files.find(target.name); f != files.end()) {
    bool tree = access == Access::kWrite && job->second.trees.contains(target.name);
    return ResolvedFile{.path = f->second, .tree = tree};
  }
  if (access == Access::kWrite) {
    // Beneath a tree: the longest tree name that is a folder of the target's name. Names are
    // valid (no empty, "." or ".." segment), so the rest stays beneath the tree's folder.
    for (size_t slash = target.name.rfind('/'); slash != std::string::npos && slash > 0;
         slash = target.name.rfind('/', slash - 1)) {
      auto t = job->second.trees.find(std::string_view(target.name).substr(0, slash));
      if (t == job->second.trees.end()) continue;
      std::string rel = target.name.substr(slash + 1);
      return ResolvedFile{
          .path = t->second + "/" + rel, .root = t->second, .rel = rel, .tree = true};
    }
  }
  return Fail(ErrorCode::kNotFound,
              access == Access::kRead ? "no such readable file" : "no such writable file");
}

}  // namespace kite::gass
