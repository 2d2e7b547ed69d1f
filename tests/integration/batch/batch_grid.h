// What every test of the batch suites starts with: a private single-node batch system
// (tests/fixtures/batch_cluster.h), logged wrappers of its tools first in the gatekeeper's PATH
// (tests/fixtures/tool_calls.h), a site whose job managers use that system, and a client.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/fixtures/batch_cluster.h"
#include "tests/fixtures/tool_calls.h"
#include "tests/integration/gram/site.h"

namespace kite::gram::testing {

class BatchGridTest : public ::testing::Test {
 protected:
  // Starts `batch` ("slurm", "sge") with `slots` job slots (CPUs) on its node, and the site in
  // front of it; `extra_env` ("NAME=value") goes into the gatekeeper's environment too.
  void StartAll(const std::string& batch, const std::string& tag, int slots = 8,
                const std::vector<std::string>& extra_env = {});
  // After a failure: the job manager's log and the last tool calls; the directory is kept.
  void TearDown() override;

  const kite::testing::BatchCluster& cluster() const { return *cluster_; }
  const kite::testing::BatchTraits& traits() const { return cluster_->traits(); }
  const kite::testing::ToolCalls& tools() const { return *tools_; }
  int Calls(const std::string& tool) const { return tools_->Count(tool); }

  // Submits and commits; returns the job id.
  std::string Run(const std::string& tag, const JobDescription& job);
  // The batch system's id of Kite job `id` (by the name the adapter gives it); "" when it has
  // none.
  std::string BatchId(const std::string& id) const;
  std::string JobFile(const std::string& id, const std::string& name) const;
  // The job manager's status of `id`, asked again once: the first request after the job manager
  // died may see the lost connection (and restarts it).
  Result<JobStatus> StatusAfterRestart(const std::string& id);

  // Submits `job` and expects the batch system to refuse it at submission: failed for good
  // (bad-request: another try cannot work), with `words` of the system's in the message.
  void ExpectRefused(const std::string& tag, const JobDescription& job, const std::string& words);

  // cluster().HoldQueues() / ReleaseQueues(), asserting success.
  void HoldQueues() const;
  void ReleaseQueues() const;

  std::string dir_;
  std::unique_ptr<kite::testing::BatchCluster> cluster_;
  std::unique_ptr<kite::testing::ToolCalls> tools_;
  std::unique_ptr<Site> site_;
  std::unique_ptr<Client> client_;
};

// Lines in the file at `path` (0 when there is none).
int Lines(const std::string& path);

// Whether process `pid` is gone (or a zombie nobody reaped: this machine's init does not reap
// orphans).
bool ProcessGone(const std::string& pid);

}  // namespace kite::gram::testing
