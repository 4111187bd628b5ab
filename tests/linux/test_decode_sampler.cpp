// The decode sampler on this machine: every sample it delivers must be a real access — its address inside the
// buffer a loop reads, its value what memory holds there — on one thread and on eight, on every trigger the
// machine offers. And it must spread samples over the accesses well enough for the estimator.
#include "child_process.hpp"
#include "hardware_test_support.hpp"

#include <catch2/catch.hpp>

#include "ojx/hardware/perf_events.hpp"
#include "ojx/random.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace ojx;
using namespace ojx::hardware;
using namespace ojx::hardware::testing;

namespace {

constexpr std::size_t buffer_words = 8192; // 64 KiB: fits L2, so the loop is fast and steady

std::unique_ptr<std::uint64_t[]> random_buffer(std::uint64_t seed) {
    auto words = std::make_unique<std::uint64_t[]>(buffer_words);
    fast_random rng(seed);
    for (std::size_t i = 0; i < buffer_words; ++i) words[i] = rng();
    return words;
}

struct check {
    std::size_t samples = 0;
    std::size_t inside = 0;
    std::size_t value_matches = 0;
};

check classify(const std::vector<access_sample>& samples, const std::uint64_t* words, std::uint32_t thread) {
    check result;
    const auto begin = reinterpret_cast<std::uint64_t>(words);
    const auto end = begin + buffer_words * sizeof(std::uint64_t);
    for (const access_sample& s : samples) {
        if (thread != 0 && s.thread != thread) continue;
        ++result.samples;
        // Outside: almost always a stack read right after a system call (an interrupt that strikes during a
        // call is delivered when it returns) — real accesses, just not to the buffer.
        if (s.effective_address < begin || s.effective_address + s.width > end) continue;
        ++result.inside;
        std::uint64_t expected = 0;
        std::memcpy(&expected, reinterpret_cast<const void*>(s.effective_address), s.width);
        if (s.value == expected && s.kind == access_kind::load) ++result.value_matches;
    }
    return result;
}

// Statistical tolerance of the "inside the buffer" checks. A few samples legitimately land off the buffer (an
// interrupt that strikes during the loop's clock read samples the stack access after it): a rate of at most p0,
// 1 % for perf triggers and 2 % for the timer (3 of 226 = 1.3 % seen under load). The check fails when the misses
// of n samples exceed what that rate explains: the smallest k with P(Binomial(n, p0) > k) < 1e-4. So it holds
// for as many samples as the kernel delivered (23 or 250 per CPU second, machines differ), and a sampler that
// confuses threads or decodes wrong addresses (tens of per cent off) still fails.
std::size_t allowed_misses(std::size_t n, double p0) {
    double term = std::pow(1 - p0, static_cast<double>(n)); // P(X = 0)
    double below = term;                                     // P(X <= k)
    std::size_t k = 0;
    while (1 - below >= 1e-4 && k < n) {
        term *= static_cast<double>(n - k) / static_cast<double>(k + 1) * p0 / (1 - p0);
        below += term;
        ++k;
    }
    return k;
}

// Fewer samples than this cannot tell a 2 % miss rate from a broken sampler (10 misses of 10 fail, 1 of 10 passes).
constexpr std::size_t min_samples_to_judge = 10;

// Runs the read loop until `wanted` samples were delivered or `cpu_seconds` of CPU were spent: the kernel's timer
// delivers between 23 and 250 interrupts per CPU second depending on the machine and on whether the thread has its
// core, so the evidence is collected by count, with a bound on time.
std::uint64_t read_until(const recorder& rec, const std::uint64_t* words, std::size_t wanted, double cpu_seconds) {
    std::uint64_t sum = 0;
    const double until = thread_cpu_seconds() + cpu_seconds;
    while (rec.sample_count.load() < wanted && thread_cpu_seconds() < until) sum += read_loop(words, buffer_words, 0.25);
    return sum;
}

backend_options options_for(sampler_kind kind) {
    backend_options options;
    options.sampler = kind;
    options.samples_per_second = 1000;
    options.watchpoint_slots = 0;
    return options;
}

} // namespace

TEST_CASE("decode sampler: samples from one thread are real accesses to the buffer it reads") {
    for (sampler_kind kind : {sampler_kind::decode, sampler_kind::decode_timer}) {
        in_child_process([kind] {
            auto rec = std::make_unique<recorder>();
            hardware_backend backend;
            if (auto error = backend.start(options_for(kind), rec->delivery())) {
                std::printf("start failed: %s\n", error->c_str());
                return 1;
            }
            std::printf("%s\n", backend.sampler_description().c_str());
            if (auto error = backend.attach_current_thread()) {
                std::printf("attach failed: %s\n", error->c_str());
                return 1;
            }
            const auto words = random_buffer(7);
            // 1000/s asked; the timer expires on the kernel's tick, so it delivers what the tick allows.
            const std::uint64_t sum = read_until(*rec, words.get(), 300, 4.0);
            backend.detach_current_thread();
            backend.stop();
            const check c = classify(rec->recorded_samples(), words.get(), 0);
            const std::uint64_t triggers = backend.counters().triggers.load();
            const std::uint64_t unfinished = backend.counters().gave_up.load() + backend.counters().steps_refused.load();
            std::printf("%s: %llu triggers, %zu samples, %.2f %% inside the buffer, %.2f %% with the right value "
                        "(sum %llu); %llu steps, %llu gave up or refused, %llu found by decoding ahead\n",
                        std::string(sampler_kind_name(kind)).c_str(), static_cast<unsigned long long>(triggers),
                        c.samples, 100.0 * c.inside / std::max<std::size_t>(c.samples, 1),
                        100.0 * c.value_matches / std::max<std::size_t>(c.samples, 1), static_cast<unsigned long long>(sum),
                        static_cast<unsigned long long>(backend.counters().steps.load()),
                        static_cast<unsigned long long>(unfinished),
                        static_cast<unsigned long long>(backend.counters().found_ahead.load()));
            if (c.samples < min_samples_to_judge) {
                std::printf("SKIPPED: the kernel delivered %llu sampling interrupts in 4 CPU seconds: too few to "
                            "judge\n", static_cast<unsigned long long>(triggers));
                return child_skipped;
            }
            int failures = 0;
            // What the kernel delivered, the sampler turns into samples: at least 90 % of the triggers that started
            // a walk (not those that arrived while one was under way) end in a sample; the rest gave up, met a
            // system call, or could not read the code. Relative to what was delivered, whatever the timer's rate.
            const std::uint64_t started = triggers - backend.counters().triggers_while_stepping.load();
            failures += static_cast<double>(c.samples) < 0.9 * static_cast<double>(started);
            // The loop's straight-line runs hold its loads: most samples need no single step at all.
            failures += backend.counters().found_ahead.load() * 2 < c.samples;
            const double p0 = kind == sampler_kind::decode_timer ? 0.02 : 0.01;
            const std::size_t allowed = allowed_misses(c.samples, p0);
            std::printf("at most %zu of %zu samples may miss (miss rate %.0f %%)\n", allowed, c.samples, 100 * p0);
            failures += c.samples - c.inside > allowed;
            failures += c.samples - c.value_matches > allowed;
            return failures;
        });
    }
}

// [may_skip]: test cases that check nothing on some machines or under load have a ctest entry of their own
// (tests/linux/CMakeLists.txt), so that their skip hides no other case's result.
TEST_CASE("decode sampler on the CPU-time timer: the requested rate, although timers fire on the tick", "[may_skip]") {
    // CPU-time timers expire on the kernel's tick (HZ 250 here: every 4 ms), so a timer set for 5 ms fires at 8.
    // Re-arming from the late firing loses that lateness at every sample: 138 samples per CPU second of the 200
    // asked for, 77-82 of 100, measured. Expiries are set from the previous expiry, so the rate holds well
    // below the tick rate: 150 samples expected at 50/s over 3 CPU seconds, with a standard deviation of about
    // 3.5 (intervals uniform in [0.5, 1.5] of the mean): 93 % is three deviations below. That needs the ticks:
    // a thread that shares its core runs in slices the tick often misses, and its timer then fires whole
    // intervals late (41-46/s measured with two test programs and two compilers on the two cores, old schedule
    // or new). So the rate is checked only when the thread had its core (≥ 90 % of the wall time on the CPU).
    in_child_process([] {
        auto rec = std::make_unique<recorder>();
        hardware_backend backend;
        backend_options options = options_for(sampler_kind::decode_timer);
        options.samples_per_second = 50;
        if (auto error = backend.start(options, rec->delivery())) {
            std::printf("start failed: %s\n", error->c_str());
            return 1;
        }
        const auto words = random_buffer(11);
        if (backend.attach_current_thread()) return 1;
        const auto wall_start = std::chrono::steady_clock::now();
        const double start = thread_cpu_seconds();
        read_loop(words.get(), buffer_words, 3.0);
        const double seconds = thread_cpu_seconds() - start;
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
        backend.detach_current_thread();
        backend.stop();
        const double triggers = static_cast<double>(backend.counters().triggers.load());
        std::printf("timer: %.0f triggers in %.2f s of CPU (%.0f %% of the wall time): %.1f per second (50 "
                    "requested)\n", triggers, seconds, 100 * seconds / wall, triggers / seconds);
        if (seconds < 0.9 * wall) {
            if (triggers == 0) return 1;
            std::printf("SKIPPED: the thread shared its core (%.0f %% of the wall time on the CPU): the rate the "
                        "kernel's tick allows is not the backend's to keep\n", 100 * seconds / wall);
            return child_skipped;
        }
        return triggers / seconds >= 0.93 * 50 && triggers / seconds <= 1.07 * 50 ? 0 : 1;
    });
}

TEST_CASE("decode sampler: eight threads, each sample lands in the buffer of the thread it came from") {
    in_child_process([] {
        auto rec = std::make_unique<recorder>();
        hardware_backend backend;
        if (auto error = backend.start(options_for(sampler_kind::automatic), rec->delivery())) return 1;
        constexpr int thread_count = 8;
        std::vector<std::unique_ptr<std::uint64_t[]>> buffers;
        std::vector<std::uint32_t> tids(thread_count);
        for (int t = 0; t < thread_count; ++t) buffers.push_back(random_buffer(100 + t));
        std::vector<std::thread> workers;
        std::atomic<int> attach_failures{0};
        for (int t = 0; t < thread_count; ++t) {
            workers.emplace_back([&, t] {
                tids[t] = static_cast<std::uint32_t>(current_tid());
                // attach/detach are serialized by the caller (the agents use the profiler's lock).
                static std::mutex serialize;
                {
                    const std::lock_guard<std::mutex> hold(serialize);
                    if (backend.attach_current_thread()) ++attach_failures;
                }
                read_loop(buffers[t].get(), buffer_words, 0.4);
                const std::lock_guard<std::mutex> hold(serialize);
                backend.detach_current_thread();
            });
        }
        for (auto& w : workers) w.join();
        backend.stop();
        int failures = attach_failures.load();
        const auto samples = rec->recorded_samples();
        // Per thread and over all threads, the misses must be what a 1 % rate of samples landing on the loop's
        // other accesses explains (allowed_misses; 4 of 370 once under ASan), for as many samples as the kernel
        // delivered; every thread must have samples; and, what a mix-up of threads would break, no sample of one
        // thread may land in another thread's buffer.
        check all;
        std::size_t crossed = 0;
        for (int t = 0; t < thread_count; ++t) {
            const check c = classify(samples, buffers[t].get(), tids[t]);
            for (int u = 0; u < thread_count; ++u)
                if (u != t) crossed += classify(samples, buffers[u].get(), tids[t]).inside;
            std::printf("thread %d: %zu samples, %.2f %% inside its buffer, %.2f %% right value\n", t, c.samples,
                        100.0 * c.inside / (c.samples ? c.samples : 1),
                        100.0 * c.value_matches / (c.samples ? c.samples : 1));
            failures += c.samples == 0;
            failures += c.samples - c.inside > allowed_misses(c.samples, 0.01);
            failures += c.samples - c.value_matches > allowed_misses(c.samples, 0.01);
            all.samples += c.samples;
            all.inside += c.inside;
            all.value_matches += c.value_matches;
        }
        std::printf("all threads: %zu samples, %.2f %% inside their buffers, %.2f %% right value, %zu in another "
                    "thread's buffer\n", all.samples, 100.0 * all.inside / (all.samples ? all.samples : 1),
                    100.0 * all.value_matches / (all.samples ? all.samples : 1), crossed);
        if (all.samples < min_samples_to_judge) {
            std::printf("SKIPPED: %zu samples from eight threads: too few to judge\n", all.samples);
            return failures != 0 ? failures : child_skipped;
        }
        failures += all.samples - all.inside > allowed_misses(all.samples, 0.01);
        failures += all.samples - all.value_matches > allowed_misses(all.samples, 0.01);
        failures += crossed != 0;
        return failures;
    });
}

namespace {
// Four loads per iteration from four arrays: a sampler that serves the estimator must give each a fair share.
OJX_TEST_UNINSTRUMENTED std::uint64_t four_loads(const volatile std::uint64_t* a, const volatile std::uint64_t* b,
                                           const volatile std::uint64_t* c, const volatile std::uint64_t* d,
                                           std::size_t count, double cpu_seconds) {
    const double until = thread_cpu_seconds() + cpu_seconds;
    std::uint64_t sum = 0;
    while (thread_cpu_seconds() < until)
        for (int pass = 0; pass < 128; ++pass)
            for (std::size_t i = 0; i < count; ++i) sum += a[i] ^ b[i] ^ c[i] ^ d[i];
    return sum;
}
} // namespace

TEST_CASE("decode sampler: shares of four interleaved loads and of offsets within a buffer are even") {
    in_child_process([] {
        auto rec = std::make_unique<recorder>();
        hardware_backend backend;
        backend_options options = options_for(sampler_kind::automatic);
        options.samples_per_second = 2000;
        if (backend.start(options, rec->delivery()) || backend.attach_current_thread()) return 1;
        constexpr std::size_t count = 2048;
        std::array<std::unique_ptr<std::uint64_t[]>, 4> arrays;
        for (std::size_t k = 0; k < 4; ++k) arrays[k] = std::make_unique<std::uint64_t[]>(count);
        // Until 3000 samples or 8 CPU seconds: what the kernel delivers differs between machines.
        const double until = thread_cpu_seconds() + 8.0;
        while (rec->sample_count.load() < 3000 && thread_cpu_seconds() < until)
            four_loads(arrays[0].get(), arrays[1].get(), arrays[2].get(), arrays[3].get(), count, 0.25);
        backend.detach_current_thread();
        backend.stop();
        std::array<double, 4> per_array{};
        std::array<double, 8> per_eighth{};
        double total = 0;
        for (const access_sample& s : rec->recorded_samples()) {
            for (std::size_t k = 0; k < 4; ++k) {
                const auto begin = reinterpret_cast<std::uint64_t>(arrays[k].get());
                if (s.effective_address >= begin && s.effective_address < begin + count * 8) {
                    per_array[k] += 1;
                    per_eighth[(s.effective_address - begin) * 8 / (count * 8)] += 1;
                    total += 1;
                }
            }
        }
        std::printf("four loads: %.0f samples in the arrays; shares %.3f %.3f %.3f %.3f; offset eighths:", total,
                    per_array[0] / total, per_array[1] / total, per_array[2] / total, per_array[3] / total);
        for (double e : per_eighth) std::printf(" %.3f", e / total);
        std::printf("\n");
        // Tolerance. Which of the four loads a sample lands on depends on where the interrupt strikes, and that
        // follows the pipeline (the instruction after a slow load is hit more often), so the shares vary from
        // run to run far more than sampling error: 0.12-0.44 seen over eight runs of this binary (fair: 0.25).
        // The claim tested is that no load is starved or dominant: each gets 1/3 to 2x its fair share. Offsets
        // within the arrays must be even around 0.125 to +-0.04 (~4 standard errors at ~3000 samples; they were
        // 0.107-0.143 in every run), or to 4 standard errors of as many samples as the kernel delivered when that
        // is wider. Below 200 samples a 1/3-share bound is within sampling error: too few to judge.
        if (total < 200) {
            std::printf("SKIPPED: %.0f samples in the arrays: too few to judge shares\n", total);
            return child_skipped;
        }
        const double band = std::max(0.04, 4 * std::sqrt(0.125 * 0.875 / total));
        int failures = 0;
        for (double share : per_array) failures += share / total < 0.08 || share / total > 0.5;
        for (double share : per_eighth) failures += std::abs(share / total - 0.125) > band;
        return failures;
    });
}

TEST_CASE("a forced sampler the machine lacks is a clear error", "[may_skip]") {
    in_child_process([] {
        recorder* rec = new recorder();
        hardware_backend backend;
        backend_options options = options_for(sampler_kind::precise);
        const auto error = backend.start(options, rec->delivery());
        int failures = 0;
        if (backend.machine().precise) {
            std::printf("SKIPPED: this machine has precise sampling (%s): no sampler it lacks to force\n",
                        backend.machine().precise->name.c_str());
            delete rec;
            return child_skipped;
        } else {
            std::printf("sampler=precise: %s\n", error ? error->c_str() : "(no error!)");
            failures += !error || error->find("precise") == std::string::npos;
        }
        delete rec;
        return failures;
    });
}

TEST_CASE("auto without a hardware counter: the CPU-time timer when the tick can keep the rate, else the task clock",
          "[may_skip]") {
    const capabilities caps = probe_capabilities(0);
    CHECK(caps.scheduler_tick_ns >= 1000000);   // HZ is 100..1000
    CHECK(caps.scheduler_tick_ns <= 10000000);
    // The rule itself, at HZ 250 (4 ms) and HZ 100 (10 ms).
    CHECK(timer_keeps_rate(200, 4000000));
    CHECK_FALSE(timer_keeps_rate(201, 4000000));
    CHECK_FALSE(timer_keeps_rate(200, 10000000));
    CHECK(timer_keeps_rate(80, 10000000));
    CHECK_FALSE(timer_keeps_rate(1, 0)); // tick unknown: never assume the timer keeps up
    if (!caps.perf_events || caps.hardware_counters || caps.precise) {
        OJX_SKIP(std::string("the choice without a hardware counter cannot be seen on a machine with ") +
                 (!caps.perf_events ? "no perf_event" : "a hardware counter or precise sampling"));
    }
    for (const double rate : {200.0, 1000.0}) {
        const bool timer_expected = timer_keeps_rate(rate, caps.scheduler_tick_ns);
        in_child_process([rate, timer_expected] {
            auto rec = std::make_unique<recorder>();
            hardware_backend backend;
            backend_options options = options_for(sampler_kind::automatic);
            options.samples_per_second = rate;
            if (auto error = backend.start(options, rec->delivery())) {
                std::printf("start failed: %s\n", error->c_str());
                return 1;
            }
            const std::string& why = backend.sampler_description();
            std::printf("rate %.0f: %s\n", rate, why.c_str());
            int failures = 0;
            if (timer_expected) {
                failures += backend.chosen_sampler() != sampler_kind::decode_timer;
                failures += why.find("CPU-time POSIX timer") == std::string::npos;
                failures += why.find("no hardware instruction counter") == std::string::npos;
            } else {
                failures += backend.chosen_sampler() != sampler_kind::decode;
                failures += why.find("task-clock overflow") == std::string::npos;
                failures += why.find("cannot keep " + std::to_string(static_cast<int>(rate)) + " samples/s") ==
                            std::string::npos;
            }
            backend.stop();
            return failures;
        });
    }
}

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

namespace {
// What a container's seccomp profile does: perf_event_open fails with EACCES.
bool forbid_perf_events() {
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, static_cast<std::uint32_t>(offsetof(seccomp_data, nr))),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_perf_event_open, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog program{static_cast<unsigned short>(std::size(filter)), filter};
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}
} // namespace

TEST_CASE("where perf_event is forbidden: the CPU-time timer samples, pairs are compared at the sample, and both say why") {
    in_child_process([] {
        if (!forbid_perf_events()) {
            std::printf("could not install the seccomp filter\n");
            return 1;
        }
        auto rec = std::make_unique<recorder>();
        hardware_backend backend;
        backend_options options = options_for(sampler_kind::automatic);
        options.watchpoint_slots = 4;
        if (auto error = backend.start(options, rec->delivery())) {
            std::printf("start failed: %s\n", error->c_str());
            return 1;
        }
        std::printf("sampler: %s\nwatchpoints: %s\n", backend.sampler_description().c_str(),
                    backend.watchpoint_description().c_str());
        int failures = 0;
        failures += backend.chosen_sampler() != sampler_kind::decode_timer;
        failures += backend.sampler_description().find("perf_event_open fails") == std::string::npos;
        // No debug registers: pairs are compared at the sample, with as many slots as asked for; a slot is
        // accepted while the backend runs.
        failures += backend.slot_count() != 4;
        failures += backend.watchpoint_description().find("compared at the sample") == std::string::npos;
        failures += backend.watchpoint_description().find("perf_event_open fails") == std::string::npos;
        failures += backend.compares_at_sample() ? 0 : 1;
        failures += backend.arm(0, 4096, 8) ? 0 : 1;
        failures += backend.arm(4, 4096, 8) ? 1 : 0; // beyond the slots asked for
        backend.disarm(0);
        if (backend.attach_current_thread()) return failures + 1;
        const auto words = random_buffer(11);
        read_until(*rec, words.get(), 250, 4.0);
        backend.detach_current_thread();
        backend.stop();
        const check c = classify(rec->recorded_samples(), words.get(), 0);
        std::printf("%zu samples, %zu inside\n", c.samples, c.inside);
        // The timer samples what the kernel's tick delivers (see allowed_misses): at least enough to judge, and
        // misses a 2 % rate explains (an interrupt that strikes during the loop's clock read samples the stack
        // access after it returns; 3 such of 250 were seen once under load).
        if (c.samples < min_samples_to_judge) {
            std::printf("SKIPPED: %zu samples in 4 CPU seconds: too few to judge\n", c.samples);
            return failures != 0 ? failures : child_skipped;
        }
        failures += c.samples - c.inside > allowed_misses(c.samples, 0.02);
        // A forced perf-based sampler is an error that says why and what works instead.
        hardware_backend forced;
        const auto error = forced.start(options_for(sampler_kind::decode), rec->delivery());
        std::printf("sampler=decode: %s\n", error ? error->c_str() : "(no error!)");
        failures += !error || error->find("sampler=timer") == std::string::npos;
        return failures;
    });
    // Watchpoints asked for explicitly: none to be had, so sampling only, and it says so. (A process can start
    // one backend: its signal handlers stay.)
    in_child_process([] {
        if (!forbid_perf_events()) return 1;
        auto rec = std::make_unique<recorder>();
        hardware_backend backend;
        backend_options options = options_for(sampler_kind::automatic);
        options.watchpoint_slots = 4;
        options.compare = comparison_kind::watchpoint;
        if (auto error = backend.start(options, rec->delivery())) {
            std::printf("compare=watchpoint: start failed: %s\n", error->c_str());
            return 1;
        }
        std::printf("compare=watchpoint: %s\n", backend.watchpoint_description().c_str());
        int failures = backend.slot_count() != 0;
        failures += backend.watchpoint_description().find("sampling only") == std::string::npos;
        failures += backend.watchpoint_description().find("perf_event_open fails") == std::string::npos;
        failures += backend.arm(0, 4096, 8) ? 1 : 0; // no slot to arm
        backend.stop();
        return failures;
    });
}
