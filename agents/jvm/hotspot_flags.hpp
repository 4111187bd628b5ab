// HotSpot's -XX flags, read from the tables that libjvm.so exports for its serviceability agent
// (gHotSpotVMStructs, gHotSpotVMTypes). The agent needs two facts at start-up, which collector runs and (G1)
// how large its regions are; asking java.lang.management instead costs ~80 ms and ~350 class loads in every
// profiled JVM.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ojx::jvm {

// The value of a boolean -XX flag of this process's JVM; nullopt when the JVM exports no flag table (not
// HotSpot, or a layout this reader does not know) or has no flag of that name.
std::optional<bool> hotspot_bool_flag(std::string_view name);
// The value of an unsigned (uintx, size_t) -XX flag, as hotspot_bool_flag. Ergonomic values are there once the
// JVM has set them (G1HeapRegionSize: when the heap is made, before VMInit).
std::optional<std::uint64_t> hotspot_size_flag(std::string_view name);

// The collector selected by the Use…GC flags ("Serial", "Parallel", "G1", "ZGC", "Shenandoah", "Epsilon");
// nullopt when the flags cannot be read or none is set.
std::optional<std::string> hotspot_collector();

} // namespace ojx::jvm
