// The static markers of one binary, from its .note.stapsdt notes (profile/markers.h).
#pragma once

#include <vector>

#include "core/result.h"
#include "profile/elf_file.h"
#include "profile/markers.h"

namespace cephscope::profile {

// Every marker of BINARY, addresses adjusted by .stapsdt.base (a prelinked or relinked
// binary moved the section the notes were written against) and turned into file offsets.
// No .note.stapsdt: an empty list. A marker whose arguments cannot be decoded keeps the
// reason in args_error; a malformed note is an error (the file is not what its notes say).
Result<std::vector<Marker>> read_markers(const ElfFile& binary);

}  // namespace cephscope::profile
