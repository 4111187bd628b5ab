// libFuzzer target: any bytes read as a profile must end in contexts and run facts or in one line naming the
// input and the problem, never a crash, an out-of-bounds access or undefined behaviour (AddressSanitizer and
// UndefinedBehaviorSanitizer watch). What the reader accepts must be what every output relies on: fractions and
// interval ends within [0, 1] (or not a number), intervals in order, comparison counts that do not wrap. And it
// must survive a round trip: written by the profile writer and read back, it writes the same text again (its
// copy section too).
#include "profile_reader.hpp"

#include "ojx/profile_writer.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <sstream>
#include <string>

namespace {

struct file_closer {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};

std::optional<std::string> read_bytes(const void* data, std::size_t size, ojx::profile& out) {
    // fmemopen refuses an empty buffer; an empty input reads as an empty file.
    static char nothing = 0;
    const std::unique_ptr<std::FILE, file_closer> file(
        size == 0 ? fmemopen(&nothing, 1, "r") : fmemopen(const_cast<void*>(data), size, "r"));
    if (!file) std::abort();
    if (size == 0) std::fgetc(file.get());
    return ojx::tool::read_profile(
        file.get(), "fuzz.json", out.run, [&](ojx::context_profile&& c) { out.contexts.push_back(std::move(c)); },
        &out.copies);
}

bool fraction(double x) { return std::isnan(x) || (x >= 0 && x <= 1); }
bool in_order(const ojx::interval& i) { return fraction(i.low) && fraction(i.high) && !(i.low > i.high); }

void check_ranges(const ojx::context_profile& c) {
    const ojx::replica_estimate& e = c.estimate;
    if (!fraction(e.theta) || !fraction(e.alpha) || !fraction(e.omega) || !fraction(e.gamma)) std::abort();
    if (!in_order(e.theta_ci) || !in_order(e.alpha_ci)) std::abort();
    if (e.equal > std::numeric_limits<std::uint64_t>::max() - e.different) std::abort();
}

std::string written(const ojx::profile& p) {
    std::ostringstream out;
    ojx::write_profile_json(out, p);
    return out.str();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    ojx::profile read;
    if (const auto error = read_bytes(data, size, read)) {
        if (!error->starts_with("fuzz.json: ") || error->find('\n') != std::string::npos) std::abort();
        return 0;
    }
    for (const ojx::context_profile& c : read.contexts) check_ranges(c);
    const std::string first = written(read);
    ojx::profile again;
    if (read_bytes(first.data(), first.size(), again)) std::abort();
    if (again.contexts.size() != read.contexts.size() || again.copies != read.copies || written(again) != first)
        std::abort();
    return 0;
}
