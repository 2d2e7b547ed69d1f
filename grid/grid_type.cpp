// The grid-type registry and its first row, Kite's own gatekeeper protocol (docs/protocol.md).
#include "grid/grid_type.h"

#include <cctype>
#include <deque>
#include <mutex>
#include <shared_mutex>

#include "common/strings.h"

namespace kite::grid {
namespace {

// A batch system's name behind a Kite gatekeeper: letters, digits, '_' and '-'.
bool BatchNameChar(char ch) {
  return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '_' || ch == '-';
}

GridType KiteRow() {
  return {
      .name = "kite",
      .display = "Kite gatekeeper",
      .syntax = "HOST:PORT[/BATCH]",
      .example = "gk.example.org:9618/slurm",
      .parse = [](std::string_view c) { return ParseHostPortContact(c, BatchNameChar); },
      .label =
          [](const GridResource& r) { return "kite->" + (r.batch.empty() ? "fork" : r.batch); },
      .caps = {.two_phase_commit = true,
               .site_info = true,
               .output_files = true,
               .output_files_by_gass = true,
               .output_folders = true},
  };
}

// A path after an ARC CE's host and port: letters, digits and "._-/".
bool ArcPathChar(char ch) {
  return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '_' || ch == '-' || ch == '.' ||
         ch == '/';
}

// "[https://]HOST[:PORT][/PATH]", as HTCondor reads an ARC CE's contact: port 443 and path
// /arex when left out.
Result<GridResource> ParseArcContact(std::string_view c) {
  if (c.starts_with("https://")) c.remove_prefix(8);
  std::string text(c);
  std::string_view host = c.substr(0, c.find('/'));
  bool has_port = host.starts_with('[') ? host.find("]:") != std::string_view::npos
                                        : host.find(':') != std::string_view::npos;
  if (!has_port) text.insert(host.size(), ":443");
  auto r = ParseHostPortContact(text, ArcPathChar);
  if (!r) return r;
  while (!r->batch.empty() && r->batch.back() == '/') r->batch.pop_back();
  if (r->batch.empty()) r->batch = "arex";
  if (r->batch.front() == '/' || r->batch.find("..") != std::string::npos) {
    return Fail(ErrorCode::kInvalidInput, "a malformed path after the host");
  }
  return r;
}

GridType ArcRow() {
  return {
      .name = "arc",
      .display = "ARC CE",
      .syntax = "[https://]HOST[:PORT][/PATH]",
      .example = "https://ce.example.org:443/arex",
      .parse = ParseArcContact,
      .label = [](const GridResource&) { return std::string("arc"); },
      .caps = {.two_phase_commit = false,
               .site_info = false,
               .output_files = true,
               .output_folders = true},
  };
}

// "HOST[:PORT][/SERVICE]", as HTCondor read a GRAM5 contact: port 2119 and the service
// "jobmanager" (the gatekeeper's default) when left out.
Result<GridResource> ParseGt5Contact(std::string_view c) {
  std::string text(c);
  std::string_view host = c.substr(0, c.find('/'));
  bool has_port = host.starts_with('[') ? host.find("]:") != std::string_view::npos
                                        : host.find(':') != std::string_view::npos;
  if (!has_port) text.insert(host.size(), ":2119");
  auto r = ParseHostPortContact(text, BatchNameChar);
  if (!r) return r;
  if (r->batch.empty()) r->batch = "jobmanager";
  return r;
}

GridType Gt5Row() {
  return {
      .name = "gt5",
      .display = "Globus GRAM5 gatekeeper",
      .syntax = "HOST[:PORT][/SERVICE]",
      .example = "gk.example.org:2119/jobmanager-slurm",
      .parse = ParseGt5Contact,
      .label = [](const GridResource& r) { return "gt5->" + r.batch; },
      .caps = {.two_phase_commit = true, .site_info = false, .output_files = true},
      // GRAM's job contact is the job manager's URL of the job, and its id.
      .job_id = [](const std::string& contact) { return contact; },
  };
}

struct Registry {
  std::shared_mutex mu;
  std::deque<GridType> rows;  // a deque: rows never move, so pointers to them stay good
  Registry() {
    rows.push_back(KiteRow());
    rows.push_back(ArcRow());
    rows.push_back(Gt5Row());
  }
};

Registry& TheRegistry() {
  static Registry registry;
  return registry;
}

}  // namespace

std::string SiteJobId(std::string_view type, const std::string& contact) {
  const GridType* row = FindGridType(type);
  if (row != nullptr && row->job_id) return row->job_id(contact);
  auto slash = contact.rfind('/');
  return slash == std::string::npos ? contact : contact.substr(slash + 1);
}

const GridType* FindGridType(std::string_view name) {
  Registry& r = TheRegistry();
  std::shared_lock lock(r.mu);
  for (const auto& row : r.rows) {
    if (EqualsIgnoreCase(row.name, name)) return &row;
  }
  return nullptr;
}

std::string GridTypeNames() {
  Registry& r = TheRegistry();
  std::shared_lock lock(r.mu);
  std::string out;
  for (const auto& row : r.rows) out += (out.empty() ? "" : ", ") + row.name;
  return out;
}

std::string GridResourceExample() {
  Registry& r = TheRegistry();
  std::shared_lock lock(r.mu);
  return r.rows.front().name + " " + r.rows.front().example;
}

Status AddGridType(GridType type) {
  if (type.name.empty() || !type.parse || !type.label) {
    return Fail(ErrorCode::kInvalidInput, "a grid type needs a name, a parse and a label");
  }
  type.name = ToLower(type.name);
  Registry& r = TheRegistry();
  std::unique_lock lock(r.mu);
  for (const auto& row : r.rows) {
    if (row.name == type.name) {
      return Fail(ErrorCode::kConflict, "grid type '" + type.name + "' is registered already");
    }
  }
  r.rows.push_back(std::move(type));
  return {};
}

}  // namespace kite::grid
