// HotSpot's -XX flags, read from the tables that libjvm.so exports for its serviceability agent
// (gHotSpotVMStructs, gHotSpotVMTypes). The agent needs one fact at start-up, which collector runs; asking
// java.lang.management instead costs ~80 ms and ~350 class loads in every profiled JVM.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ojx::jvm {

// The value of a boolean -XX flag of this process's JVM; nullopt when the JVM exports no flag table (not
// HotSpot, or a layout this reader does not know) or has no flag of that name.
std::optional<bool> hotspot_bool_flag(std::string_view name);

// The collector selected by the Use…GC flags ("Serial", "Parallel", "G1", "ZGC", "Shenandoah", "Epsilon");
// nullopt when the flags cannot be read or none is set.
std::optional<std::string> hotspot_collector();

} // namespace ojx::jvm
