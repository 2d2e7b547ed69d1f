// Grid jobs whose site is chosen by matchmaking (docs/broker.md): a GridResource that refers to
// `$$(Name)` attributes of the site ad it is matched with, as HTCondor's `$$()` does. At match
// time the agent stores each value as the job's MATCH_Name (HTCondor's name); the gridmanager
// reads the resource with those values put in.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "classad/classad.h"
#include "common/error.h"

namespace kite::grid {

// True when `text` refers to a `$$(...)` attribute.
bool IsBrokered(std::string_view text);

// The attribute names `text` refers to with `$$(Name)` or `$$(Name:default)`, in order.
std::vector<std::string> BrokeredNames(std::string_view text);

// `text` with each `$$(Name)` replaced by `value(Name)` (a `$$(Name:default)` by the default when
// there is no value). kNotFound names the first attribute without a value; kInvalidInput a `$$(`
// without its `)`.
Result<std::string> ExpandBrokered(
    std::string_view text,
    const std::function<std::optional<std::string>(const std::string&)>& value);

// The grid resource a job goes to: its GridResource, with a brokered one's references filled in
// from the job's MATCH_ attributes. kNotFound while a brokered job has no site yet (or it has no
// GridResource at all).
Result<std::string> JobGridResource(const classad::ClassAd& job);

}  // namespace kite::grid
