// JobManager: GASS staging. Stage-in fetches the executable (made 0755), stdin and the listed
// files into the job directory; output is sent at byte offsets while the job runs (when streamed)
// and whole at the end; offsets acknowledged by GASS are stored so a restart resumes exactly.
// The job's output files (stage_out) follow stdout and stderr at the end, each whole; a folder
// goes as the regular files it holds.
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "common/files.h"
#include "gram/job_manager.h"
#include "gram/stager.h"

#if KITE_GRAM_HAVE_GASS
#include <algorithm>
#include <boost/asio/post.hpp>
#include <filesystem>
#include <map>

#include "common/clock.h"
#include "credentials/certificate.h"
#include "credentials/proxy.h"
#include "gass/client.h"
#include "gass/output_streamer.h"
#include "gass/protocol.h"
#include "gram/https_connection.h"
#endif

namespace kite::gram {

bool JobManager::NeedsStageIn(const JobRecord& j) const {
  return !j.desc.executable.gass.empty() || !j.desc.stdin_file.gass.empty() ||
         !j.desc.stage_in.empty();
}

bool JobManager::NeedsStageOut(const JobRecord& j) const {
  return !j.desc.stdout_file.gass.empty() || !j.desc.stderr_file.gass.empty() ||
         !j.desc.stage_out.empty();
}

bool JobManager::Streams(const JobRecord& j) const {
  return (j.desc.stream_output && !j.desc.stdout_file.gass.empty()) ||
         (j.desc.stream_error && !j.desc.stderr_file.gass.empty());
}

#if KITE_GRAM_HAVE_GASS

namespace {

// Where a job's files are on GASS: the server's base URL and the job's path prefix.
struct GassPlace {
  std::string base;    // https://HOST:PORT
  std::string prefix;  // /jobs/<client's job id>
};

Result<GassPlace> PlaceOf(const std::string& gass_url) {
  auto u = ParseHttpsUrl(gass_url);
  if (!u) return Fail(u.error());
  std::string prefix = u->target;
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  return GassPlace{"https://" + u->host + ":" + std::to_string(u->port), prefix};
}

// One GASS client per (server, credential) per helper thread, so connections stay open between
// transfers; GassClient is not thread-safe, hence thread_local. A refreshed credential (the file
// changed) gets a new client, so transfers present the new proxy from then on.
Result<gass::GassClient*> ClientFor(const std::string& base, const std::string& cred_path,
                                    const std::shared_ptr<const credentials::Verifier>& verifier) {
  struct Entry {
    int64_t mtime_ns = -1;
    std::unique_ptr<credentials::CurlTls> tls;
    std::unique_ptr<gass::GassClient> client;
  };
  thread_local std::map<std::string, Entry> cache;
  struct stat st {};
  if (::stat(cred_path.c_str(), &st) != 0) return FailErrno("stat " + cred_path);
  int64_t mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  Entry& e = cache[base + " " + cred_path];
  if (e.client && e.mtime_ns == mtime) return e.client.get();
  auto cred = credentials::LoadProxyFile(cred_path);
  if (!cred) return Fail(cred.error());
  e.client.reset();  // before the CurlTls it points at
  // The GASS server runs on the user's desktop with the user's own proxy: it must speak for the
  // same identity as the delegated proxy (as Globus checks a GASS server), whatever host it is on.
  std::string owner = credentials::EndEntity(cred->chain).Subject();
  e.tls = std::make_unique<credentials::CurlTls>(
      credentials::CurlTls{*cred, verifier, std::move(owner)});
  e.client = std::make_unique<gass::GassClient>(gass::GassClientOptions{base, *e.tls});
  e.mtime_ns = mtime;
  return e.client.get();
}

}  // namespace

void JobManager::StartStageIn(JobRecord& j) {
  auto d = delegations_.find(j.delegation_id);
  if (d == delegations_.end() || d->second.not_after <= WallNow()) {
    Apply(j, JobEvent::kFailed, FailureCode::kCredentialExpired,
          "the delegated proxy " + j.delegation_id + " has expired or is gone: delegate again");
    return;
  }
  auto steady = std::chrono::steady_clock::now();
  if (steady < next_stream_[j.id]) return;  // backing off after an unreachable GASS server
  std::vector<std::pair<std::string, std::string>> files;  // gass name -> local path
  if (!j.desc.executable.gass.empty()) {
    files.emplace_back(j.desc.executable.gass, ControlDir(j.id) + "/executable");
  }
  if (!j.desc.stdin_file.gass.empty()) {
    files.emplace_back(j.desc.stdin_file.gass, ControlDir(j.id) + "/stdin");
  }
  for (const auto& f : j.desc.stage_in) files.emplace_back(f.gass, JobDir(j.id) + "/" + f.as);
  busy_.insert(j.id);
  std::string id = j.id, url = j.gass_url, cred = DelegationPath(j.delegation_id);
  bool exe = !j.desc.executable.gass.empty();
  stager_->Run([this, id, url, cred, files, exe] {
    Status st = [&]() -> Status {
      auto place = PlaceOf(url);
      if (!place) return Fail(place.error());
      auto client = ClientFor(place->base, cred, stager_->verifier());
      if (!client) return Fail(client.error());
      for (const auto& [name, local] : files) {
        auto got = (*client)->Get(place->prefix + "/" + name, local);
        if (!got) return Fail(got.error().Wrap("fetching " + name));
      }
      if (exe && ::chmod(files.front().second.c_str(), 0755) != 0) {
        return FailErrno("chmod " + files.front().second);
      }
      return {};
    }();
    boost::asio::post(io_, [this, id, st] {
      busy_.erase(id);
      auto it = jobs_.find(id);
      if (it == jobs_.end() || stopped_) return;
      if (st) {
        Apply(it->second, JobEvent::kStagedIn);
      } else if (st.error().code() == ErrorCode::kUnavailable ||
                 st.error().code() == ErrorCode::kTimeout) {
        spdlog::info("job {}: stage-in will retry: {}", id, st.error().ToString());
        next_stream_[id] = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      } else {
        bool missing = st.error().code() == ErrorCode::kNotFound;
        Apply(it->second, JobEvent::kFailed,
              missing ? FailureCode::kBadRequest : FailureCode::kStageInFailed,
              st.error().message());
      }
      ScheduleDrive(std::chrono::milliseconds(0));
    });
  });
}

namespace {

struct OutputFile {
  std::string gass;   // its name on the GASS server
  std::string path;   // here
  std::string shown;  // as the job description names it
  bool folder;        // must be a folder
};

// The files one transfer_output_files entry sends: the file itself, or each regular file in the
// folder and each empty folder (no local path) (sorted, so a resend goes in the same order).
// Refused, with the reason the user reads: a name the job did not make; a "d/" that is no folder; a
// link, FIFO or device (a folder's too: what comes back is files and folders only); a name GASS
// cannot carry.
Result<std::vector<std::pair<std::string, std::string>>> FilesToSend(const OutputFile& f) {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::string, std::string>> out;
  std::error_code ec;
  auto status = fs::symlink_status(f.path, ec);
  if (ec || !fs::exists(status)) {
    return Fail(ErrorCode::kNotFound, "the job made no " +
                                          std::string(f.folder ? "folder" : "file or folder") +
                                          " '" + f.shown + "'");
  }
  if (fs::is_regular_file(status) && !f.folder) {
    out.emplace_back(f.gass, f.path);
    return out;
  }
  if (!fs::is_directory(status)) {
    return Fail(ErrorCode::kNotFound,
                "'" + f.shown + "' is not a " + (f.folder ? "folder" : "regular file or a folder"));
  }
  // An empty folder goes as itself (no local path): the folder named "d" even when empty; one
  // within either.
  auto empty = [](const fs::path& dir) {
    std::error_code e;
    return fs::directory_iterator(dir, e) == fs::directory_iterator();
  };
  if (!f.folder && empty(f.path)) out.emplace_back(f.gass, "");
  for (fs::recursive_directory_iterator it(f.path, ec), end; !ec && it != end; it.increment(ec)) {
    auto kind = it->symlink_status(ec);
    if (ec) break;
    std::string rel = it->path().lexically_relative(f.path).string();
    std::string shown = f.shown + (f.shown.ends_with('/') ? "" : "/") + rel;
    bool folder = fs::is_directory(kind);
    if (folder && !empty(it->path())) continue;  // it goes as what it holds
    if (!folder && !fs::is_regular_file(kind)) {
      return Fail(ErrorCode::kNotFound,
                  "'" + shown + "' is " +
                      (fs::is_symlink(kind) ? "a symbolic link" : "not a file") +
                      " (only regular files and folders come back)");
    }
    std::string name = f.gass + "/" + rel;
    if (!gass::IsValidName(name)) {
      return Fail(ErrorCode::kNotFound,
                  "cannot send '" + shown + "': names of letters, digits and ._~+- only");
    }
    out.emplace_back(std::move(name), folder ? "" : it->path().string());
  }
  if (ec)
    return Fail(ErrorCode::kNotFound, "cannot read the folder '" + f.shown + "': " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

void JobManager::StartOutput(JobRecord& j, bool final) {
  auto steady = std::chrono::steady_clock::now();
  if (final && steady < next_stream_[j.id]) return;
  busy_.insert(j.id);
  batch::JobSpec spec = SpecFor(j);
  struct Stream {
    std::string local, remote;
    int64_t offset;
    bool on;
  };
  std::vector<Stream> streams = {
      {spec.stdout_path, j.desc.stdout_file.gass, j.stdout_offset,
       !j.desc.stdout_file.gass.empty() && (final || j.desc.stream_output)},
      {spec.stderr_path, j.desc.stderr_file.gass, j.stderr_offset,
       !j.desc.stderr_file.gass.empty() && (final || j.desc.stream_error)}};
  // transfer_output_files: whole, once the job has ended.
  std::vector<OutputFile> results;
  if (final) {
    for (const auto& f : j.desc.stage_out) {
      results.push_back({f.gass, JobDir(j.id) + "/" + f.as, f.as, f.folder});
    }
  }
  std::string id = j.id, url = j.gass_url, cred = DelegationPath(j.delegation_id);
  stager_->Run([this, id, url, cred, streams, results, final] {
    std::vector<int64_t> offsets;
    std::string refused;  // why an output file cannot be sent (the job did not make it ...)
    Status st = [&]() -> Status {
      auto place = PlaceOf(url);
      if (!place) return Fail(place.error());
      auto client = ClientFor(place->base, cred, stager_->verifier());
      if (!client) return Fail(client.error());
      for (const auto& s : streams) {
        offsets.push_back(s.offset);
        if (!s.on) continue;
        gass::OutputStreamer streamer(**client, s.local, place->prefix + "/" + s.remote,
                                      static_cast<uint64_t>(s.offset));
        auto r = final ? streamer.Finish() : streamer.Pump();
        offsets.back() = static_cast<int64_t>(streamer.acknowledged());
        if (!r) return Fail(r.error().Wrap("sending " + s.remote));
        offsets.back() = static_cast<int64_t>(*r);
      }
      std::vector<std::pair<std::string, std::string>> sends;  // (gass name, path here)
      for (const auto& f : results) {
        auto files = FilesToSend(f);
        if (!files) {
          refused = files.error().message();
          return Fail(files.error());
        }
        sends.insert(sends.end(), files->begin(), files->end());
      }
      for (const auto& [remote, local] : sends) {
        if (local.empty()) {  // an empty folder
          if (auto r = (*client)->MakeFolder(place->prefix + "/" + remote); !r) {
            return Fail(r.error().Wrap("making the folder " + remote));
          }
          continue;
        }
        gass::OutputStreamer streamer(**client, local, place->prefix + "/" + remote, 0);
        if (auto r = streamer.Finish(); !r) return Fail(r.error().Wrap("sending " + remote));
      }
      return {};
    }();
    boost::asio::post(io_, [this, id, st, offsets, refused, final] {
      busy_.erase(id);
      auto it = jobs_.find(id);
      if (it == jobs_.end() || stopped_) return;
      JobRecord& job = it->second;
      if (offsets.size() == 2 &&
          (offsets[0] != job.stdout_offset || offsets[1] != job.stderr_offset)) {
        job.stdout_offset = offsets[0];
        job.stderr_offset = offsets[1];
        changed_.insert(id);  // the offsets are stored so that a restart resumes exactly
      }
      auto now = std::chrono::steady_clock::now();
      if (st && final) {
        delivery_.erase(id);
        Apply(job, JobEvent::kStagedOut);
      } else if (!refused.empty()) {
        // As HTCondor holds a job whose transfer_output_files it cannot find: it ran, and
        // running it again would not make the file.
        delivery_.erase(id);
        Apply(job, JobEvent::kFailed, FailureCode::kStageOutFailed,
              "transfer_output_files: " + refused);
      } else if (!st && final && st.error().code() != ErrorCode::kUnavailable &&
                 st.error().code() != ErrorCode::kTimeout) {
        // The job ended and the client's GASS server answers, but refuses or fails the delivery:
        // it is tried again with back-off rather than the job failed -- a failed job would be run
        // again. Only after kDeliveryPatience is it failed, for good (stage-out-failed is not
        // retryable: the user decides). A server that does not answer is waited for without a
        // bound, below: its gridmanager comes back, and a signal brings its new address.
        auto d = delivery_.try_emplace(id, Delivery{.first_failure = now}).first;
        ++d->second.failures;
        if (now - d->second.first_failure >= kDeliveryPatience) {
          delivery_.erase(d);
          Apply(job, JobEvent::kFailed, FailureCode::kStageOutFailed,
                "its output could not be delivered for " +
                    std::to_string(kDeliveryPatience.count()) +
                    " minutes: " + st.error().message());
        } else {
          spdlog::warn("job {}: delivering its output failed (try {}), again in {} s: {}", id,
                       d->second.failures, d->second.backoff.count(), st.error().message());
          next_stream_[id] = now + d->second.backoff;
          d->second.backoff = std::min(d->second.backoff * 2, kDeliveryBackoffMax);
        }
      } else if (!st) {
        next_stream_[id] = now + std::chrono::seconds(1);
      }
      ScheduleDrive(std::chrono::milliseconds(0));
    });
  });
}

#else

void JobManager::StartStageIn(JobRecord& j) {
  Apply(j, JobEvent::kFailed, FailureCode::kBadRequest,
        "this job manager was built without GASS support: no staging");
}

void JobManager::StartOutput(JobRecord& j, bool final) {
  if (final) {
    Apply(j, JobEvent::kFailed, FailureCode::kBadRequest,
          "this job manager was built without GASS support: no output staging");
  }
}

#endif

}  // namespace kite::gram
