// libojxpreload.so: finds replica objects in an unmodified native program.
//
//   OJX_OPTIONS=file=replicas.json,rate=200 LD_PRELOAD=/path/to/libojxpreload.so ./program
//
// It interposes the allocator (malloc, calloc, realloc, free, the aligned variants, operator new and delete) to
// track objects at or above the size threshold with their allocation context (the call stack, unwound from the
// DWARF call-frame information), attaches the hardware backend to every thread (pthread_create is interposed so that threads
// started later are profiled too), and writes the JSON profile and a summary at exit, or when SIGTERM, SIGINT or
// SIGHUP at its default action ends the program (exit_signals.hpp).
//
// A profiler must never take the program down: bad options print a message and the program runs unprofiled;
// hooks re-entered from inside the agent (the profiler allocating, the unwinder, the symbolizer) go straight to
// the C library.
#include "allocation_sampling.hpp"
#include "exit_signals.hpp"
#include "unwinder_descriptors.hpp"

#include "ojx/agents/agent_options.hpp"
#include "ojx/agents/agent_report.hpp"
#include "ojx/agents/agent_singleton.hpp"
#include "ojx/allocation_rate_target.hpp"
#include "ojx/context_path_cache.hpp"
#include "ojx/hardware/profiling_session.hpp"
#include "ojx/hardware/symbolizer.hpp"
#include "ojx/report.hpp"

#include <fmt/format.h>

#include <dlfcn.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <unistd.h>
#include <unwind.h>

#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <new>
#include <optional>

extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* old, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
void __libc_free(void* pointer);
}

namespace {

using namespace ojx;
using namespace ojx::agents;
using namespace ojx::hardware;

// The allocation "type" of a native object is the allocator that made it.
enum allocator : type_id { by_malloc, by_calloc, by_realloc, by_aligned_alloc, by_new, by_new_array };
constexpr const char* allocator_names[] = {"malloc", "calloc", "realloc", "aligned alloc", "new", "new[]"};

// With sampling, answers nearly every free without a lock (address_filter.hpp). Constant-initialized, so its
// 1 MiB of zeros is in .bss and a page is backed only once a free's hash lands in it.
constinit preload::address_filter sampled_filter;

struct agent {
    profiling_session session;
    agent_settings settings;
    agent_files files; // absolute, fixed at start
    pthread_key_t thread_key{};
    std::uint64_t own_code_begin = 0; // this library's code: its frames are left out of allocation contexts
    std::uint64_t own_code_end = 0;
    // Unwinds allocation stacks: libunwind's unw_backtrace where it can be loaded (see find_fast_unwinder), else
    // libgcc_backtrace.
    int (*backtrace)(void** frames, int capacity) = nullptr;
    // interval=: a fixed mean of bytes between tracked allocations (allocation_sampling.hpp); 0: every allocation.
    std::uint64_t sampling_interval = 0;
    // track_rate= (the default): the interval moves to track about this many allocations a second; null with
    // interval=.
    std::optional<allocation_rate_target> rate_target;
    preload::tracked_addresses sampled_objects{sampled_filter}; // with sampling: the objects the profiler took
    std::chrono::steady_clock::time_point started{};
};

// Whole-object evidence (docs/design.md): tracked objects are digested whole at their free, reading at most
// this many bytes a second (each second's objects subsampled alike beyond it), and those alive at exit within
// the exit budget. Chosen by measurement (README.md, "Costs"): reading runs at several GiB/s, so each budget
// costs well under a tenth of a core-second where a program frees or keeps that much.
constexpr std::uint64_t death_digest_bytes_per_second = 64ULL << 20;
constexpr std::uint64_t exit_digest_bytes = 64ULL << 20; // at most about 25 ms at exit (2.7 GB/s)
// The heap view's censuses during the run (docs/design.md, "Heap and churn"): one each time the tracked heap grew
// to half again the most seen, reading at most this many bytes (about 1.5 ms of the allocating thread's time).
constexpr std::uint64_t census_digest_bytes = 4ULL << 20;

// Tracked allocations per second above which the exit summary of an interval=0 run points at track_rate=: each
// costs ≈ 0.3 µs (bench/RESULTS.md), so this many cost ≈ 1.5 % of a core.
constexpr double heavy_tracking_per_second = 50000;
// The default target of tracked allocations per second (track_rate=): the cost of tracking is bounded to
// ≈ 0.15 % of a core, and programs allocating less than this many objects at or above the threshold a second
// have every one tracked (bench/RESULTS.md, 2026-11-26).
constexpr allocation_tracking_words tracking_option_words{
    .default_track_rate = "5000",
    .track_rate_help = "adaptive allocation tracking: about this many allocations (at or above threshold) a second "
                       "are tracked, the sampling interval moving every 200 ms to meet it; a program that allocates "
                       "fewer has every one tracked; counts are weighted so that they stay unbiased",
    .default_interval = "0",
    .interval_help = "when given, a fixed sampling interval instead of track_rate: on average one allocation (at or "
                     "above threshold) is tracked per this many bytes allocated; 0: every allocation (exact counts)"};

constinit agent_singleton<agent> the_agent;
std::atomic<bool> active{false};
// Adaptive tracking or a fixed interval above 0: some allocations go untracked. Set before `active` is, read after
// it; outside the agent, so that a free reads it and sampled_filter without first loading the agent.
bool sampling = false;

// The profile is written once, by whichever comes first: the destructor at exit, or the agent's thread when a
// caught signal ends the process. The other waits for it, at most profile_wait.
enum profile_state : int { not_written, being_written, written };
std::atomic<int> profile{written}; // not_written once profiling started
constexpr long profile_wait_ms = 15000;
void finish_profile();
void write_profile();

// Set while this thread runs agent code that may allocate; its allocations go straight to the C library.
[[gnu::tls_model("initial-exec")]] thread_local bool in_agent = false;

struct agent_scope {
    agent_scope() noexcept { in_agent = true; }
    ~agent_scope() { in_agent = false; }
};

constexpr std::size_t max_frames = profiling_session::max_frames;

// This library's frames above the program's (the hook, track, unwind_callers), which unwinding also returns.
constexpr std::size_t own_frames_allowance = 8;

// libgcc's unwinder, in the shape of unw_backtrace: up to `capacity` return addresses, innermost first.
int libgcc_backtrace(void** frames, int capacity) {
    struct collected {
        void** frames;
        int capacity;
        int count;
    } state{frames, capacity, 0};
    _Unwind_Backtrace(
        [](_Unwind_Context* context, void* raw) {
            auto& into = *static_cast<collected*>(raw);
            into.frames[into.count++] = reinterpret_cast<void*>(_Unwind_GetIP(context));
            return into.count == into.capacity ? _URC_END_OF_STACK : _URC_NO_REASON;
        },
        &state);
    return state.count;
}

// The return addresses of the calling thread's stack outside this library, innermost first, into `frames`.
std::size_t unwind_callers(std::uint64_t (&frames)[max_frames]) {
    void* raw[max_frames + own_frames_allowance];
    int found = 0;
    {
        const preload::unwinder_scope descriptors_apart; // unwinder_descriptors.hpp
        found = the_agent->backtrace(raw, static_cast<int>(std::size(raw)));
    }
    std::size_t count = 0;
    for (int i = 0; i < found && count < max_frames; ++i) {
        const auto ip = reinterpret_cast<std::uint64_t>(raw[i]);
        if (ip == 0) break;
        if (ip >= the_agent->own_code_begin && ip < the_agent->own_code_end) continue;
        frames[count++] = ip - 1; // a return address: step back into the call instruction
    }
    return count;
}

// This thread's recent allocation stacks and their context-tree nodes: a program allocates from a few stacks
// over and over, and a repeated stack then costs a comparison instead of a walk down the tree (a hash probe per
// frame, each a cache miss once the program has evicted the tree). The agent has one session and one tree.
// Initial-exec, as in_agent: the agent is preloaded, so its TLS is in the static block, reached without a call.
[[gnu::tls_model("initial-exec")]] constinit thread_local context_path_cache<max_frames> recent_stacks;

[[gnu::tls_model("initial-exec")]] constinit thread_local preload::allocation_sampler byte_sampler;

std::uint64_t monotonic_ns() noexcept {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(now.tv_nsec);
}

// Adaptive tracking's allocation path: one relaxed load of the interval and the thread's own subtraction; every
// report_every eligible allocations (and at a tracked one) the thread's counts go to the target and the clock is
// read, which closes the window when it is over. A tracked object carries the interval it was sampled at.
bool sampled_adaptively(std::uint64_t size, allocation_shape& shape) noexcept {
    allocation_rate_target& target = *the_agent->rate_target;
    const std::uint64_t interval = target.interval();
    const bool tracked = byte_sampler.sampled(size, interval, the_agent->settings.session.profiler.seed);
    if (byte_sampler.count(size, tracked)) {
        byte_sampler.report([&](std::uint64_t count, std::uint64_t bytes, std::uint64_t taken) {
            target.add(count, bytes, taken);
        });
        target.tick(monotonic_ns());
    }
    if (tracked) shape.sampling_interval = interval;
    return tracked;
}

void track(void* pointer, std::size_t size, allocator kind) {
    if (pointer == nullptr || in_agent || !active.load(std::memory_order_acquire)) return;
    if (size < the_agent->settings.session.profiler.min_object_size) return;
    allocation_shape shape;
    if (the_agent->rate_target) {
        if (!sampled_adaptively(size, shape)) return;
    } else if (const std::uint64_t interval = the_agent->sampling_interval;
               interval != 0 && !byte_sampler.sampled(size, interval, the_agent->settings.session.profiler.seed)) {
        return;
    }
    const agent_scope scope;
    std::uint64_t frames[max_frames];
    const std::span<const std::uint64_t> stack(frames, unwind_callers(frames));
    context_id context = recent_stacks.find(stack);
    if (context == no_context) {
        context = the_agent->session.allocation_context(stack);
        recent_stacks.remember(stack, context);
    }
    const bool tracked =
        the_agent->session.on_allocation(reinterpret_cast<address>(pointer), size, context, kind, shape).has_value();
    if (sampling && tracked) the_agent->sampled_objects.insert(reinterpret_cast<std::uintptr_t>(pointer));
}

void untrack(void* pointer) {
    if (pointer == nullptr || in_agent || !active.load(std::memory_order_acquire)) return;
    if (sampling) {
        // Only what the profiler took concerns it (erased before the C library can reuse the address). The filter
        // that sampled_objects counts into answers nearly every free with one load; the block's size is not asked,
        // as no tracked object is under the threshold: a filter hit goes to the set, which answers exactly.
        const auto at = reinterpret_cast<std::uintptr_t>(pointer);
        if (!sampled_filter.may_contain(at)) return;
        const agent_scope scope;
        if (the_agent->sampled_objects.erase(at)) {
            // Its contents at death are final (for realloc's old block too: what it held when the program gave it
            // up, whether the block then moves, shrinks or grows in place into an object the profiler counts anew).
            the_agent->session.digest_at_death(at);
            the_agent->session.on_free(at);
        }
        return;
    }
    // interval=0: every object at or above the threshold was offered to the profiler, which answers for it.
    if (malloc_usable_size(pointer) < the_agent->settings.session.profiler.min_object_size) return;
    const agent_scope scope;
    the_agent->session.digest_at_death(reinterpret_cast<address>(pointer)); // final contents, as above
    the_agent->session.on_free(reinterpret_cast<address>(pointer));
}

void attach_this_thread() {
    const agent_scope scope;
    if (auto error = the_agent->session.attach_current_thread()) {
        std::fprintf(stderr, "ojx: thread %d runs unprofiled: %s\n", static_cast<int>(current_tid()), error->c_str());
        return;
    }
    pthread_setspecific(the_agent->thread_key, the_agent); // its destructor detaches the thread at exit
}

void detach_thread(void*) {
    const agent_scope scope;
    if (active.load(std::memory_order_acquire)) the_agent->session.detach_current_thread();
}

struct thread_start {
    void* (*routine)(void*);
    void* argument;
};

void* start_profiled_thread(void* raw) {
    const thread_start start = *static_cast<thread_start*>(raw);
    __libc_free(raw);
    if (active.load(std::memory_order_acquire)) attach_this_thread();
    return start.routine(start.argument);
}

void find_own_code() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&find_own_code), &info) == 0) return;
    struct search {
        const void* base;
        std::uint64_t begin, end;
    } s{info.dli_fbase, 0, 0};
    dl_iterate_phdr(
        [](dl_phdr_info* module, std::size_t, void* raw) {
            auto& found = *static_cast<search*>(raw);
            for (int i = 0; i < module->dlpi_phnum; ++i) {
                const ElfW(Phdr)& header = module->dlpi_phdr[i];
                const std::uint64_t begin = module->dlpi_addr + header.p_vaddr;
                if (header.p_type != PT_LOAD || (header.p_flags & PF_X) == 0) continue;
                if (reinterpret_cast<std::uint64_t>(found.base) > begin + header.p_memsz) continue;
                if (begin <= reinterpret_cast<std::uint64_t>(&find_own_code) &&
                    reinterpret_cast<std::uint64_t>(&find_own_code) < begin + header.p_memsz) {
                    found.begin = begin;
                    found.end = begin + header.p_memsz;
                    return 1;
                }
            }
            return 0;
        },
        &s);
    the_agent->own_code_begin = s.begin;
    the_agent->own_code_end = s.end;
}

// Every tracked allocation unwinds its stack, so the unwinder's speed is most of what tracking costs. libgcc's
// _Unwind_Backtrace interprets the DWARF call-frame program of every frame on every call (≈ 250 ns a frame
// here); libunwind's unw_backtrace caches, per thread, how to step over each return address it has seen
// (≈ 15 ns a frame; bench/RESULTS.md). libunwind also defines _Unwind_* and backtrace, which must not replace
// libgcc's and glibc's in the profiled program, so it is opened RTLD_LOCAL, out of the global symbol scope,
// rather than linked. Without it (libunwind8 not installed), libgcc's unwinder does the work.
// An error message when libunwind cannot be used.
std::optional<std::string> find_fast_unwinder() {
    void* library = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) return std::string("libunwind.so.8 cannot be loaded (") + dlerror() + ")";
    auto* unw_backtrace = reinterpret_cast<int (*)(void**, int)>(dlsym(library, "unw_backtrace"));
    if (unw_backtrace == nullptr) return std::string("libunwind.so.8 has no unw_backtrace");
    the_agent->backtrace = unw_backtrace;
    return std::nullopt;
}

// Adaptive tracking at track_rate= unless interval= fixes the interval (0, or exact: every allocation).
void choose_allocation_tracking(agent& a) {
    const allocation_tracking& tracking = a.settings.tracking;
    profiler_config& profiler = a.settings.session.profiler;
    if (tracking.track_rate == 0) {
        a.sampling_interval = tracking.interval;
        sampling = tracking.interval != 0;
        profiler.allocation_sampling_interval = tracking.interval;
        return;
    }
    allocation_rate_target_config config;
    config.tracked_per_second = static_cast<double>(tracking.track_rate);
    a.rate_target.emplace(config);
    sampling = true;
    profiler.allocation_tracking_target = tracking.track_rate;
}

// For the start line.
std::string describe_allocation_tracking(const agent& a) {
    if (a.rate_target)
        return fmt::format(", of about {} allocations a second (adaptive: all of them while the program makes fewer)",
                           a.settings.tracking.track_rate);
    if (sampling) return fmt::format(", of a sample of allocations (one per {} bytes on average)", a.sampling_interval);
    return a.settings.exact ? ", of every allocation, each digested whole with no budget (exact mode)"
                            : ", of every allocation";
}

// The same at a glance, for the start line.
std::string brief_allocation_tracking(const agent& a) {
    if (a.settings.exact) return "every allocation tracked and digested whole (exact mode)";
    if (a.rate_target) return fmt::format("about {} allocations a second tracked and digested whole",
                                          a.settings.tracking.track_rate);
    if (sampling) return fmt::format("one allocation per {} bytes tracked and digested whole", a.sampling_interval);
    return "every allocation tracked and digested whole";
}

// This agent's own options, after the ones it shares with the JVM agent.
std::vector<option_spec> preload_agent_options() {
    std::vector<option_spec> specs = common_agent_options();
    for (option_spec& spec : allocation_tracking_options(tracking_option_words))
        specs.push_back(std::move(spec));
    specs.push_back({"exit_signals", option_kind::choice, "profile",
                     "SIGTERM, SIGINT and SIGHUP left at their default: profile (a thread of the agent's writes the "
                     "profile, then the process ends by the signal) or untouched (no such thread, as for programs "
                     "that must stay single-threaded, e.g. to unshare a user namespace; these signals then end the "
                     "program without a profile)",
                     {"profile", "untouched"}});
    specs.push_back({"unwinder", option_kind::choice, "auto",
                     "how allocation call stacks are unwound: libunwind (cached, fast), libgcc, or auto (libunwind "
                     "where libunwind8 is installed)",
                     {"auto", "libunwind", "libgcc"}});
    return specs;
}

[[gnu::constructor]] void start_agent() {
    const agent_scope scope;
    const char* text = std::getenv("OJX_OPTIONS");
    const std::vector<option_spec> specs = preload_agent_options();
    parsed_agent_options parsed;
    if (auto error = parse_agent_options(text ? text : "", specs, parsed)) {
        say(fmt::format("ojx: OJX_OPTIONS: {}\nojx: not profiling (OJX_OPTIONS=help lists the options)\n", *error));
        return;
    }
    if (parsed.settings.help) {
        say(agent_help("native agent", "OJX_OPTIONS=name=value,...", specs));
        return;
    }
    agent& a = the_agent.emplace();
    a.settings = parsed.settings;
    // Names fixed now, before the program can chdir; descendants of a profiled process get names of their own.
    if (auto error = prepare_agent_files(a.settings, true, a.files)) {
        say(fmt::format("ojx: {}\nojx: not profiling\n", *error));
        return;
    }
    a.settings.quiet = !speaks(a.settings, a.files);
    session_options& session = a.settings.session;
    session.runtime = "native (libojxpreload)";
    choose_allocation_tracking(a);
    session.record_file = a.files.trace;
    session.profiler.death_digest_bytes_per_second = digest_budget(the_agent->settings, death_digest_bytes_per_second);
    session.profiler.live_census_bytes = digest_budget(the_agent->settings, census_digest_bytes);
    find_own_code();
    the_agent->backtrace = libgcc_backtrace;
    if (const std::string& unwinder = parsed.values.choice("unwinder"); unwinder != "libgcc") {
        if (auto error = find_fast_unwinder(); error && unwinder == "libunwind") {
            std::fprintf(stderr, "ojx: OJX_OPTIONS: unwinder=libunwind: %s\nojx: not profiling (install libunwind8, or "
                                 "use unwinder=auto)\n", error->c_str());
            return;
        }
    }
    if (auto error = the_agent->session.start(the_agent->settings.session)) {
        std::fprintf(stderr, "ojx: cannot profile: %s\n", error->c_str());
        return;
    }
    pthread_key_create(&the_agent->thread_key, detach_thread);
    pthread_atfork(nullptr, nullptr, [] { // the child is not profiled
        active.store(false);
        profile.store(written);
    });
    if (!a.settings.quiet)
        say(start_line(a.session.backend(), "", brief_allocation_tracking(a),
                       fmt::format("allocation stacks: {}{}",
                                   a.backtrace != libgcc_backtrace ? "libunwind" : "libgcc unwinder",
                                   describe_allocation_tracking(a)),
                       a.files, a.settings.verbose));
    the_agent->started = std::chrono::steady_clock::now();
    profile.store(not_written, std::memory_order_release);
    active.store(true, std::memory_order_release);
    if (parsed.values.choice("exit_signals") == "profile") {
        if (auto error = preload::catch_exit_signals(finish_profile))
            std::fprintf(stderr, "ojx: SIGTERM, SIGINT and SIGHUP will end the program without a profile: %s\n",
                         error->c_str());
    }
    attach_this_thread();
}

[[gnu::destructor]] void stop_agent() {
    finish_profile();
    preload::await_exit_signal();
}

// Writes the profile, or waits (bounded) while another thread writes it.
void finish_profile() {
    int expected = not_written;
    if (profile.compare_exchange_strong(expected, being_written)) {
        write_profile();
        profile.store(written, std::memory_order_release);
        return;
    }
    const timespec millisecond{0, 1000000};
    for (long waited = 0; profile.load(std::memory_order_acquire) != written && waited < profile_wait_ms; ++waited)
        ::nanosleep(&millisecond, nullptr);
}

// The exit summary's own lines: whole-object evidence, and what allocation tracking did.
std::vector<std::string> summary_lines(const agent& a, const profiler_stats& s, std::uint64_t digested_at_exit) {
    std::vector<std::string> lines;
    lines.push_back(fmt::format(
        "{} objects digested whole ({:.1f} MiB; {} at their free, {} alive at exit); {} left out by the digest budgets "
        "({}), {} unreadable",
        s.objects_digested, static_cast<double>(s.bytes_digested) / (1 << 20), s.objects_digested - digested_at_exit,
        digested_at_exit, s.digests_skipped_budget,
        a.settings.exact ? std::string("none in the exact mode")
                         : fmt::format("{} MiB/s at free, {} MiB at exit", death_digest_bytes_per_second >> 20,
                                       exit_digest_bytes >> 20),
        s.digests_unreadable));
    const std::uint64_t tracked = s.allocations - s.allocations_ignored_small - s.allocations_ignored_contexts_full;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - a.started).count();
    const double per_second = seconds > 0 ? static_cast<double>(tracked) / seconds : 0;
    if (a.rate_target)
        lines.push_back(fmt::format("adaptive tracking: {} allocations tracked, {:.0f} per second (target {}); sampling "
                                    "interval {} to {} bytes over {} windows (0: every allocation)",
                                    tracked, per_second, a.settings.tracking.track_rate,
                                    a.rate_target->smallest_interval(), a.rate_target->largest_interval(),
                                    a.rate_target->windows()));
    else if (!sampling && !a.settings.exact && per_second > heavy_tracking_per_second)
        lines.push_back(fmt::format("{} allocations tracked, {:.0f} per second: each unwinds its stack; track_rate= (the "
                                    "default, without interval=) would track a bounded sample of them, with counts "
                                    "weighted to stay unbiased",
                                    tracked, per_second));
    return lines;
}

void write_profile() {
    active.store(false);
    const agent_scope scope;
    agent& a = *the_agent;
    a.session.stop();
    // The survivors' contents, before the profile is taken (and the trace ends).
    const auto survivors = a.session.digest_tracked_objects(digest_budget(a.settings, exit_digest_bytes));
    symbolizer symbols;
    report_naming naming;
    naming.frame = [&](std::uint64_t pc) { return symbols.frame_name(pc, false); };
    naming.type = [](type_id type) {
        return std::string(type < std::size(allocator_names) ? allocator_names[type] : "native");
    };
    run_facts facts = a.session.facts();
    add_session_counters(a.session, facts);
    a.session.with_final_analyses([&](profiling_session::profiler_type& profiler, const followed_copy_graph& copies) {
        profiler.note_tracking_stayed_exact(a.rate_target && a.rate_target->largest_interval() == 0);
        const replica_report report = profiler.report();
        const std::vector<std::string> lines = summary_lines(a, report.stats, survivors.digested);
        const std::optional<followed_copies> followed = followed_copies_of(copies);
        if (followed) facts.agent_counters.insert(facts.agent_counters.end(), followed->counters.begin(),
                                                  followed->counters.end());
        const auto copied = copy_section(followed, report, profiler.contexts(), naming, a.session.followed_copies_description());
        write_agent_profile(agent_profile{report, profiler.contexts(), naming, facts, copied ? &*copied : nullptr}, a.files.profile,
                            a.session, {a.settings.quiet, "at exit", lines});
    });
    if (const auto recorded = a.session.finish_recording(naming, std::size(allocator_names), facts.agent_counters))
        report_recording(*recorded, a.settings.quiet);
}

} // namespace

// ---- The interposed allocator. Each forwards to the C library, then tells the profiler. ----

extern "C" {

void* malloc(std::size_t size) {
    void* pointer = __libc_malloc(size);
    track(pointer, size, by_malloc);
    return pointer;
}

void* calloc(std::size_t count, std::size_t size) {
    void* pointer = __libc_calloc(count, size);
    if (pointer != nullptr) track(pointer, count * size, by_calloc); // no overflow: calloc succeeded
    return pointer;
}

void* realloc(void* old, std::size_t size) {
    untrack(old);
    void* pointer = __libc_realloc(old, size);
    if (size != 0) track(pointer, size, by_realloc);
    return pointer;
}

void free(void* pointer) {
    untrack(pointer);
    __libc_free(pointer);
}

void* memalign(std::size_t alignment, std::size_t size) {
    void* pointer = __libc_memalign(alignment, size);
    track(pointer, size, by_aligned_alloc);
    return pointer;
}

void* aligned_alloc(std::size_t alignment, std::size_t size) { return memalign(alignment, size); }

int posix_memalign(void** result, std::size_t alignment, std::size_t size) {
    if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
    void* pointer = __libc_memalign(alignment, size);
    if (pointer == nullptr) return ENOMEM;
    track(pointer, size, by_aligned_alloc);
    *result = pointer;
    return 0;
}

void* valloc(std::size_t size) { return memalign(static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), size); }

int pthread_create(pthread_t* thread, const pthread_attr_t* attributes, void* (*routine)(void*), void* argument) {
    using create_function = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
    static const auto real_create = reinterpret_cast<create_function>(dlsym(RTLD_NEXT, "pthread_create"));
    if (real_create == nullptr) return EAGAIN;
    if (!active.load(std::memory_order_acquire)) return real_create(thread, attributes, routine, argument);
    auto* start = static_cast<thread_start*>(__libc_malloc(sizeof(thread_start)));
    if (start == nullptr) return EAGAIN;
    *start = thread_start{routine, argument};
    const int result = real_create(thread, attributes, start_profiled_thread, start);
    if (result != 0) __libc_free(start);
    return result;
}

} // extern "C"

// operator new and delete: libstdc++'s call malloc, but a program may link a static libstdc++ or replace them;
// defining them here makes `new` objects carry their own allocator type either way.
namespace {
void* new_or_throw(std::size_t size, allocator kind) {
    for (;;) {
        if (void* pointer = __libc_malloc(size == 0 ? 1 : size)) {
            track(pointer, size, kind);
            return pointer;
        }
        std::new_handler handler = std::get_new_handler();
        if (handler == nullptr) throw std::bad_alloc();
        handler();
    }
}
void* aligned_new_or_throw(std::size_t size, std::align_val_t alignment, allocator kind) {
    for (;;) {
        if (void* pointer = __libc_memalign(static_cast<std::size_t>(alignment), size == 0 ? 1 : size)) {
            track(pointer, size, kind);
            return pointer;
        }
        std::new_handler handler = std::get_new_handler();
        if (handler == nullptr) throw std::bad_alloc();
        handler();
    }
}
void release(void* pointer) noexcept { free(pointer); }
} // namespace

void* operator new(std::size_t size) { return new_or_throw(size, by_new); }
void* operator new[](std::size_t size) { return new_or_throw(size, by_new_array); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    try {
        return new_or_throw(size, by_new);
    } catch (...) {
        return nullptr;
    }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
    try {
        return new_or_throw(size, by_new_array);
    } catch (...) {
        return nullptr;
    }
}
void* operator new(std::size_t size, std::align_val_t alignment) {
    return aligned_new_or_throw(size, alignment, by_new);
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
    return aligned_new_or_throw(size, alignment, by_new_array);
}
void operator delete(void* pointer) noexcept { release(pointer); }
void operator delete[](void* pointer) noexcept { release(pointer); }
void operator delete(void* pointer, std::size_t) noexcept { release(pointer); }
void operator delete[](void* pointer, std::size_t) noexcept { release(pointer); }
void operator delete(void* pointer, std::align_val_t) noexcept { release(pointer); }
void operator delete[](void* pointer, std::align_val_t) noexcept { release(pointer); }
void operator delete(void* pointer, std::size_t, std::align_val_t) noexcept { release(pointer); }
void operator delete[](void* pointer, std::size_t, std::align_val_t) noexcept { release(pointer); }
void operator delete(void* pointer, const std::nothrow_t&) noexcept { release(pointer); }
void operator delete[](void* pointer, const std::nothrow_t&) noexcept { release(pointer); }
