// Reading profiles. A profile is read as a stream (RapidJSON's SAX reader): each context is handed over as soon
// as it is complete, so a 100 MB profile is never held whole and a report keeps only what it prints. Errors are
// values: one line that names the file and the problem (missing, empty, truncated, not JSON, not a profile, a
// newer version, a field of the wrong type).
#pragma once

#include "ojx/profile.hpp"

#include <cstdio>
#include <functional>
#include <optional>
#include <string>

namespace ojx::tool {

// The newest profile version this ojx reads (and the one it writes).
inline constexpr std::uint64_t newest_profile_version = 1;

using context_consumer = std::function<void(context_profile&&)>;

// Reads the profile at `path`, calling `on_context` for each context as soon as it has been read and checked,
// in file order; fills `run` once the whole file has been read, `copies` (where given) with its copy section and
// `exact` with its exact counts section, none where it has none. Returns the error, if any ("PATH: problem");
// `on_context` may have been called for earlier contexts before an error is found. Every section is checked
// whether or not it is asked for.
std::optional<std::string> read_profile(const std::string& path, run_profile& run,
                                        const context_consumer& on_context,
                                        std::optional<copy_profile>* copies = nullptr,
                                        std::optional<exact_counts>* exact = nullptr);

// The same from a stream already open for reading (its errors name it `path`); the stream is read to its end or
// to the first problem, and left open.
std::optional<std::string> read_profile(std::FILE* file, const std::string& path, run_profile& run,
                                        const context_consumer& on_context,
                                        std::optional<copy_profile>* copies = nullptr,
                                        std::optional<exact_counts>* exact = nullptr);

} // namespace ojx::tool
