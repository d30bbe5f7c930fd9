// The librados client's probe table: Objecter submit, send and reply in a client process.
// No collector attaches it yet (the client collector will); `cephscope profile generate`
// resolves it so profiles of the client libraries can be made and shipped ahead of it.
#pragma once

#include <array>

#include "profile/probe_set.h"

namespace cephscope::rados {

// librados.so.2 carries its own hidden copy of Objecter (local symbols, seen through
// librados2-dbg); libceph-common.so.2 has another that librados clients of Pacific and Reef
// do not use. Message layouts come from the OSD table: librados's DWARF declares Message only.
inline constexpr std::array<const char*, 4> kFunctions = {
    "Objecter::_send_op", "Objecter::handle_osd_op_reply", "Objecter::op_submit",
    "Objecter::_finish_op"};

inline constexpr std::array<const char*, 4> kOpMembers = {"tid", "target.base_oid.name",
                                                          "target.osd", "stamp"};

// The spec the resolver is given for the client libraries, derived from the table.
profile::ProbeSet probe_set();

}  // namespace cephscope::rados
