// --config.check for the usdt: rules: whether each rule's markers exist in its binary as this
// host has it (a library named by file name is looked for in the host's library directories;
// each target's own copy, in a container too, is read at attach time).
#pragma once

#include <ostream>

#include "config/config.h"

namespace cephscope {

void check_usdt(const Config& config, std::ostream& out);

}  // namespace cephscope
