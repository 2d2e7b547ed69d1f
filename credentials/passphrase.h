// Asking the user for a passphrase: from the terminal without echo, or one line from stdin.
#pragma once

#include <string>

#include "common/error.h"

namespace kite::credentials {

// With `from_stdin`, reads one line from standard input (grid-proxy-init -pwstdin). Otherwise
// prompts on /dev/tty with echo off; kPermission when there is no terminal to ask on.
Result<std::string> ReadPassphrase(const std::string& prompt, bool from_stdin);

}  // namespace kite::credentials
