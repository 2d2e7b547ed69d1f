// Where Kite keeps things on the submit side.
#pragma once

#include <string>

namespace kite {

// $KITE_HOME, or ~/.kite when unset.
std::string KiteHome();
// The user's proxy: $X509_USER_PROXY, or /tmp/x509up_u<uid>.
std::string DefaultProxyPath();
// The directory holding Kite's own programs (kite-agent, kite-exec, ...): the directory of the
// running executable, so a build tree and an install both work.
std::string ProgramDir();
std::string ProgramPath(const std::string& name);

}  // namespace kite
