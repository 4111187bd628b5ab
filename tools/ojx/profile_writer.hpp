// Writing a profile back as the documented JSON (docs/profile-format.md), e.g. the result of a merge. A merged
// profile also says, under run.merged, how many profiles it came from and every value of each descriptive field.
#pragma once

#include "profile.hpp"

#include <ostream>

namespace ojx::tool {

void write_profile_json(std::ostream& out, const profile& p);

} // namespace ojx::tool
