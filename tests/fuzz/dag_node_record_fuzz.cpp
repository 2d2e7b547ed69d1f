// libFuzzer target: arbitrary bytes as a DAG node's stored record (table dag_nodes; the JSON form
// and the older text form). Must never crash or hang; a record that parses encodes to JSON that
// parses back to the same record.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dag/node_machine.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto record = kite::dag::ParseNodeRecord(text);
  if (!record) {
    if (record.error().message().empty()) std::abort();
    return 0;
  }
  auto again = kite::dag::ParseNodeRecord(kite::dag::EncodeNodeRecord(*record));
  if (!again || !(*again == *record)) std::abort();
  return 0;
}
