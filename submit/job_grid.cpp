// The grid universe: grid_resource (Kite's own type, and HTCondor's, recorded with a warning),
// the cloud grid types' parameters as condor_submit writes them, and the batch system requests
// a Kite gatekeeper passes on.
#include <algorithm>
#include <charconv>

#include "classad/expr.h"
#include "common/strings.h"
#include "grid/brokered.h"
#include "grid/grid_type.h"
#include "grid/resource.h"
#include "submit/job_attrs.h"

namespace kite::submit {
namespace {

// Grid types condor_submit accepts; Kite runs those in the grid-type registry (grid/grid_type.h).
constexpr const char* kHtcondorGridTypes[] = {"condor", "batch",  "blah", "pbs", "sge", "lsf",
                                              "nqs",    "naregi", "arc",  "ec2", "gce", "azure"};

Result<std::string> GridType(JobContext& ctx) {
  auto v = ctx.Get("grid_resource");
  if (!v) return Fail(v.error());
  return *v ? ToLower((*v)->substr(0, (*v)->find_first_of(" \t"))) : std::string();
}

// One grid parameter: a string, or (`path`) a file name made absolute against Iwd.
Status Param(JobContext& ctx, const char* key, const char* attr, bool path = false) {
  auto v = ctx.Get(key);
  if (!v) return Fail(v.error());
  if (!*v) return {};
  if (!path) {
    ctx.Emit(attr, Quoted(**v));
    return {};
  }
  auto iwd = GetIwd(ctx);
  if (!iwd) return Fail(iwd.error());
  ctx.Emit(attr, Quoted((**v)[0] == '/' ? **v : *iwd + "/" + **v));
  return {};
}

Status Required(JobContext& ctx, const char* key, const char* type) {
  auto v = ctx.Get(key);
  if (!v) return Fail(v.error());
  if (*v) return {};
  return Fail(ctx.ErrorAt("grid_resource", std::string(type) + " grid jobs need " + key));
}

// <prefix><name> commands -> <attr_prefix><name> attributes, and the list of names in `names_attr`.
Status NamedParams(JobContext& ctx, const char* names_key, const char* names_attr,
                   const char* prefix, const char* attr_prefix, std::string* names_out) {
  auto listed = ctx.Get(names_key);
  if (!listed) return Fail(listed.error());
  std::vector<std::string> names = *listed ? Split(**listed, ',') : std::vector<std::string>{};
  for (const auto& [key, line] : ctx.DefinedWithPrefix(prefix)) {
    if (key == names_key) continue;
    const auto* def = ctx.env().table->Find(key);
    std::string name = def->name.substr(std::string_view(prefix).size());
    auto v = ctx.Get(key);
    if (!v) return Fail(v.error());
    if (!*v) continue;
    ctx.Emit(attr_prefix + name, Quoted(**v));
    bool known = std::any_of(names.begin(), names.end(),
                             [&](const std::string& n) { return EqualsIgnoreCase(n, name); });
    if (!known) names.push_back(name);
  }
  std::string joined;
  for (const auto& n : names) joined += (joined.empty() ? "" : ",") + n;
  if (!joined.empty()) ctx.Emit(names_attr, Quoted(joined));
  if (names_out != nullptr) *names_out = joined;
  return {};
}

Status Ec2Params(JobContext& ctx, const std::string& type) {
  bool ec2 = type == "ec2";
  if (auto st = Param(ctx, "ec2_access_key_id", "EC2AccessKeyId", true); !st) return st;
  if (auto st = Param(ctx, "ec2_secret_access_key", "EC2SecretAccessKey", true); !st) return st;
  if (ec2) {
    for (const char* k : {"ec2_access_key_id", "ec2_secret_access_key", "ec2_ami_id"}) {
      if (auto st = Required(ctx, k, "EC2"); !st) return st;
    }
  }
  struct P {
    const char* key;
    const char* attr;
    bool path;
  };
  for (P p :
       {P{"ec2_keypair", "EC2KeyPair", false}, P{"ec2_keypair_file", "EC2KeyPairFile", true},
        P{"ec2_security_groups", "EC2SecurityGroups", false},
        P{"ec2_security_ids", "EC2SecurityIDs", false}, P{"ec2_ami_id", "EC2AmiID", false},
        P{"ec2_instance_type", "EC2InstanceType", false},
        P{"ec2_vpc_subnet", "EC2VpcSubnet", false}, P{"ec2_vpc_ip", "EC2VpcIp", false},
        P{"ec2_elastic_ip", "EC2ElasticIp", false},
        P{"ec2_availability_zone", "EC2AvailabilityZone", false},
        P{"ec2_ebs_volumes", "EC2ElasticBlockStorageVolumes", false},
        P{"ec2_spot_price", "EC2SpotPrice", false},
        P{"ec2_block_device_mapping", "EC2BlockDeviceMapping", false},
        P{"ec2_user_data", "EC2UserData", false}, P{"ec2_user_data_file", "EC2UserDataFile", true},
        P{"ec2_iam_profile_arn", "EC2IamProfileArn", false},
        P{"ec2_iam_profile_name", "EC2IamProfileName", false}}) {
    if (auto st = Param(ctx, p.key, p.attr, p.path); !st) return st;
  }
  if (auto st = NamedParams(ctx, "ec2_parameter_names", "EC2ParamNames", "ec2_parameter_",
                            "EC2Param_", nullptr);
      !st) {
    return st;
  }
  std::string tags;
  if (auto st = NamedParams(ctx, "ec2_tag_names", "EC2TagNames", "ec2_tag_", "EC2Tag", &tags);
      !st) {
    return st;
  }
  // For the AWS console, an EC2 instance is named after the executable unless a Name tag is set.
  auto tag_list = Split(tags, ',');
  bool named = std::any_of(tag_list.begin(), tag_list.end(),
                           [](const std::string& n) { return EqualsIgnoreCase(n, "Name"); });
  auto want = GetBool(ctx, "wantnametag", true);
  if (!want) return Fail(want.error());
  if (ec2 && !named && *want) {
    if (const std::string* cmd = ctx.Emitted("Cmd")) ctx.Emit("EC2TagName", *cmd);
  }
  return {};
}

Status GceAzureParams(JobContext& ctx, const std::string& type) {
  if (type == "gce") {
    for (const char* k : {"gce_image", "gce_machine_type"}) {
      if (auto st = Required(ctx, k, "GCE"); !st) return st;
    }
  }
  if (type == "azure") {
    for (const char* k : {"azure_image", "azure_location", "azure_size", "azure_admin_username",
                          "azure_admin_key"}) {
      if (auto st = Required(ctx, k, "Azure"); !st) return st;
    }
  }
  struct P {
    const char* key;
    const char* attr;
    bool path;
  };
  for (P p :
       {P{"gce_auth_file", "GceAuthFile", true}, P{"gce_account", "GceAccount", false},
        P{"gce_image", "GceImage", false}, P{"gce_machine_type", "GceMachineType", false},
        P{"gce_metadata", "GceMetadata", false}, P{"gce_metadata_file", "GceMetadataFile", true},
        P{"gce_json_file", "GceJsonFile", true}, P{"azure_auth_file", "AzureAuthFile", true},
        P{"azure_image", "AzureImage", false}, P{"azure_location", "AzureLocation", false},
        P{"azure_size", "AzureSize", false}, P{"azure_admin_username", "AzureAdminUsername", false},
        P{"azure_admin_key", "AzureAdminKey", false}}) {
    if (auto st = Param(ctx, p.key, p.attr, p.path); !st) return st;
  }
  if (ctx.IsSet("gce_preemptible")) {
    auto b = GetBool(ctx, "gce_preemptible", false);
    if (!b) return Fail(b.error());
    ctx.Emit("GcePreemptible", *b ? "true" : "false");
  }
  return NamedParams(ctx, "cloud_label_names", "CloudLabelNames", "cloud_label_", "CloudLabel",
                     nullptr);
}

}  // namespace

// universe = grid needs grid_resource. A type in the grid-type registry is read by its row;
// HTCondor's other grid types are recorded as condor_submit writes them, with a warning (Kite's
// gridmanager holds such a job, saying why); anything else is refused.
Status EmitGridResource(JobContext& ctx) {
  auto u = GetUniverse(ctx);
  if (!u) return Fail(u.error());
  auto v = ctx.Get("grid_resource");
  if (!v) return Fail(v.error());
  if (*u != kGridUniverse) {
    if (*v) ctx.WarnAt("grid_resource", "grid_resource is ignored unless universe = grid");
    return {};
  }
  if (!*v) {
    return Fail(
        ctx.ErrorAt("universe", "universe = grid needs grid_resource (e.g. grid_resource = " +
                                    grid::GridResourceExample() + ")"));
  }
  std::string_view text = **v;
  if (grid::IsBrokered(text)) {
    // The site is chosen by the agent's broker (docs/broker.md); checked once the values are in.
    auto names = grid::BrokeredNames(text);
    if (auto e = grid::ExpandBrokered(text, [](const std::string&) { return std::string("x"); });
        !e || names.empty()) {
      return Fail(ctx.ErrorAt(
          "grid_resource",
          "grid_resource: " + (e ? std::string("no attribute name") : e.error().message())));
    }
    ctx.Emit("GridResource", Quoted(text));
    return {};
  }
  auto space = text.find_first_of(" \t");
  std::string type(text.substr(0, space));
  std::string_view contact = space == std::string_view::npos ? "" : Trim(text.substr(space));
  if (const grid::GridType* row = grid::FindGridType(type)) {
    auto r = grid::ParseGridResource(text);
    if (!r) {
      return Fail(ctx.ErrorAt("grid_resource", "grid_resource = " + row->name + " needs " +
                                                   row->syntax + ", not '" + std::string(contact) +
                                                   "'"));
    }
    ctx.Emit("GridResource", Quoted(r->Text()));
    return {};
  }
  std::string lower = ToLower(type);
  bool htcondor = std::find(std::begin(kHtcondorGridTypes), std::end(kHtcondorGridTypes), lower) !=
                  std::end(kHtcondorGridTypes);
  if (!htcondor) {
    return Fail(ctx.ErrorAt("grid_resource",
                            "unsupported grid type '" + type +
                                "' in grid_resource (Kite runs: " + grid::GridTypeNames() + ")"));
  }
  if (lower == "ec2" && contact.empty()) {
    return Fail(ctx.ErrorAt("grid_resource", "EC2 grid jobs need a service URL in grid_resource"));
  }
  ctx.WarnAt("grid_resource", "grid type '" + type +
                                  "' is HTCondor's: the job is recorded as "
                                  "condor_submit writes it, but Kite's gridmanager runs only " +
                                  grid::GridTypeNames() + " resources and will hold it");
  ctx.Emit("GridResource", Quoted(text));
  return {};
}

Status EmitGridParams(JobContext& ctx) {
  auto u = GetUniverse(ctx);
  if (!u) return Fail(u.error());
  if (*u != kGridUniverse) return {};
  auto type = GridType(ctx);
  if (!type) return Fail(type.error());
  if (auto st = Ec2Params(ctx, *type); !st) return st;
  return GceAzureParams(ctx, *type);
}

// batch_queue, batch_project, batch_runtime. For grid jobs what names the site's batch system
// reaches its commands as one argument: only the characters every batch system takes in a queue
// or account name (the site checks the same).
Status CheckBatchNames(JobContext& ctx) {
  auto u = GetUniverse(ctx);
  if (!u) return Fail(u.error());
  for (const std::string key : {"batch_queue", "batch_project"}) {
    auto v = ctx.Get(key);
    if (!v) return Fail(v.error());
    if (!*v) continue;
    bool ok = (*v)->size() <= 64;
    for (char ch : **v) {
      ok = ok && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' ||
                  ch == '+' || ch == '-');
    }
    if (!ok && *u == kGridUniverse) {
      return Fail(ctx.ErrorAt(key, key +
                                       " must be 1 to 64 of A-Z a-z 0-9 _ . + - (a name the "
                                       "site's batch system knows), not '" +
                                       **v + "'"));
    }
    ctx.Emit(key == "batch_queue" ? "BatchQueue" : "BatchProject", Quoted(**v));
  }
  auto rt = ctx.Get("batch_runtime");
  if (!rt) return Fail(rt.error());
  if (*rt) {
    auto secs = ParseDuration(**rt);
    if (!secs) {
      return Fail(ctx.ErrorAt("batch_runtime",
                              "batch_runtime must be a duration like 3600, 90m, "
                              "12h or 2d, not '" +
                                  **rt + "'"));
    }
    ctx.Emit("BatchRuntime", std::to_string(*secs));
  }
  return {};
}

}  // namespace kite::submit
