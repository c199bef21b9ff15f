// Versions both programs agree on. The protocol version changes whenever a method, a parameter
// or a result changes incompatibly; the client refuses to talk to a daemon of another version.
#pragma once

#include "ralph_version.h"

namespace ralph::proto {

inline constexpr const char* daemon_version = RALPH_VERSION;
inline constexpr int protocol_version = 1;
// Carried by every `--json` output of ralphctl.
inline constexpr int json_schema_version = 1;
// HTTP response header carrying protocol_version, checked by the client on every reply.
inline constexpr const char* protocol_header = "Ralph-Protocol";

}  // namespace ralph::proto
