// The `fork` batch adapter: runs each job at once under kite-exec, detached in its own session.
// Batch id: "<control_dir>#<pid>". The outcome comes from kite-exec's lock and status files, so a
// restarted job manager (not the wrappers' parent) still learns it.
#pragma once

#include <memory>

#include "gram/batch/batch_adapter.h"

namespace kite::gram::batch {

std::unique_ptr<BatchAdapter> MakeForkAdapter(const AdapterOptions& options);

}  // namespace kite::gram::batch
