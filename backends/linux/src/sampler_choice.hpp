// Which sample source a run gets, and the one line that says why: the best the machine offers unless one is
// forced (backend_options::sampler), in the order of sampler_kind.
#pragma once

#include "ojx/hardware/hardware_backend.hpp"
#include "ojx/hardware/perf_events.hpp"

#include <optional>
#include <string>

namespace ojx::hardware {

struct sampler_choice {
    std::optional<std::string> error; // a forced choice the machine cannot give
    sampler_kind kind = sampler_kind::none;
    perf_event_attr attr{}; // the trigger, for precise and decode
    std::string description;
};

sampler_choice choose_sampler(const backend_options& options, const capabilities& caps);

} // namespace ojx::hardware
