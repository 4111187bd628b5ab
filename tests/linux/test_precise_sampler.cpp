// The precise sampler (Intel PEBS loads, AMD IBS ops): where the CPU offers it, its samples must be real loads
// from the buffer a loop reads, with the value memory holds there. Where it does not (this project's VMs), the
// test says why and is reported as skipped (skip.hpp).
#include "hardware_test_support.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <memory>

using namespace ojx;
using namespace ojx::hardware;
using namespace ojx::hardware::testing;

TEST_CASE("precise sampler: samples are loads from the buffer, with the value there") {
    const capabilities caps = probe_capabilities(0);
    if (!caps.precise) OJX_SKIP("no precise sampling on this machine: " + caps.precise_reason);
    auto rec = std::make_unique<recorder>();
    hardware_backend backend;
    backend_options options;
    options.sampler = sampler_kind::precise;
    options.samples_per_second = 1000;
    options.watchpoint_slots = 0;
    REQUIRE(!backend.start(options, rec->delivery()));
    REQUIRE(!backend.attach_current_thread());
    constexpr std::size_t count = 8192;
    auto words = std::make_unique<std::uint64_t[]>(count);
    for (std::size_t i = 0; i < count; ++i) words[i] = i * 0x9E3779B97F4A7C15ULL;
    read_loop(words.get(), count, 1.0);
    backend.detach_current_thread();
    backend.stop();
    const auto begin = reinterpret_cast<std::uint64_t>(words.get());
    std::size_t inside = 0, right = 0;
    const auto samples = rec->recorded_samples();
    for (const access_sample& s : samples) {
        if (s.effective_address < begin || s.effective_address >= begin + count * 8) continue;
        ++inside;
        std::uint64_t expected = 0;
        std::memcpy(&expected, reinterpret_cast<const void*>(s.effective_address), s.width);
        right += s.value == expected;
    }
    INFO(backend.sampler_description() << ": " << samples.size() << " samples, " << inside << " inside");
    CHECK(samples.size() >= 100);
    CHECK(inside * 100 >= samples.size() * 99);
    CHECK(right == inside);
}
