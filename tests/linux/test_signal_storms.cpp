// The rules that keep ojx's signals from harming the program (docs/design.md, "Failure model"): a handler never
// re-triggers its own watchpoints, however the program copies over the watched word (glibc's vectorised memcpy,
// `rep movsb`); a thread that blocks signals cannot make ojx's signals pile up, and a nearly full signal queue
// kills nothing; a program that installs its own SIGTRAP handler gets only its own traps and ojx stops; a program
// that takes ojx's timer signal where no interposer sees it is noticed by poll_handlers, and ojx stops; an 8 KiB
// alternate signal stack survives; descriptors the program closed and reused are never closed by ojx.
// Each scenario starts a backend, so each runs in a child process; an alarm turns a livelock into a failure.
#include "child_process.hpp"
#include "hardware_test_support.hpp"

#include <catch2/catch.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace ojx;
using namespace ojx::hardware;
using namespace ojx::hardware::testing;

namespace {

// A delivery that reads the trapped word again, as the profiler does when it compares (a read that, through the
// guarded load, would trap once more, for ever), and counts what arrived.
struct rereading_target {
    std::atomic<std::uint64_t> traps{0};
    std::atomic<std::uint64_t> samples{0};
    std::atomic<std::uint64_t> unread{0};

    static bool on_sample(void* self, const access_sample& sample, const ucontext_t&,
                          const handler_reads& reads) noexcept {
        auto& target = *static_cast<rereading_target*>(self);
        std::uint64_t value = 0;
        if (!read_memory(sample.effective_address, &value, sample.width, reads)) target.unread.fetch_add(1);
        target.samples.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    static void on_trap(void* self, const watchpoint_trap& trap, const ucontext_t&,
                        const handler_reads& reads) noexcept {
        auto& target = *static_cast<rereading_target*>(self);
        std::array<std::uint8_t, 64> window{};
        // The whole window around the word, as a comparison reads it.
        const std::uint64_t start = trap.watched_address & ~std::uint64_t{63};
        if (!read_memory(start, window.data(), window.size(), reads)) target.unread.fetch_add(1);
        target.traps.fetch_add(1, std::memory_order_relaxed);
    }
    backend_delivery delivery() noexcept { return {this, on_sample, on_trap}; }
};

alignas(64) unsigned char source[4096];
alignas(64) unsigned char destination[4096];

// Copies `source` with one `rep movsb`: the string instruction glibc uses for large copies, and the one ojx's own
// guarded reads use.
OJX_TEST_UNINSTRUMENTED void copy_by_rep_movsb(void* to, const void* from, std::size_t size) {
    asm volatile("rep movsb" : "+D"(to), "+S"(from), "+c"(size) : : "memory");
}

// A program's signal handler on its 8 KiB alternate stack, sampled there: plain loads and no calls, so that it
// needs next to no stack itself, even under AddressSanitizer (≈ 0.1 s).
OJX_TEST_UNINSTRUMENTED void spin_on_small_stack(int) {
    static volatile std::uint64_t words[64];
    std::uint64_t sum = 0;
    for (std::uint64_t i = 0; i < 100'000'000; ++i) sum += words[i & 63];
    words[0] = sum;
}

// Fails the child after `seconds` of wall time: a livelock then ends in a failure, not a hung suite.
void fail_after(unsigned seconds) {
    signal(SIGALRM, [](int) { _exit(3); });
    alarm(seconds);
}

// A backend for one scenario: `rate` samples per second on `sampler` (none: watchpoints only), `slots`
// watchpoints, delivering to a rereading_target; the calling thread attached when `attach`. False when it cannot
// start. Also arms the scenario's alarm.
struct scenario {
    rereading_target target;
    hardware_backend backend;

    bool start(sampler_kind sampler, double rate, std::size_t slots, bool attach) {
        fail_after(60);
        backend_options options;
        options.sampler = sampler;
        options.samples_per_second = rate;
        options.watchpoint_slots = slots;
        if (backend.start(options, target.delivery())) return false;
        return !attach || !backend.attach_current_thread();
    }
};

} // namespace

TEST_CASE("signal storms: a trap handler that reads the watched word does not trap again") {
    OJX_SKIP_WITHOUT_WATCHPOINTS();
    in_child_process([] {
        scenario run;
        if (!run.start(sampler_kind::none, 200, 1, true)) return 1;
        rereading_target& target = run.target;
        hardware_backend& backend = run.backend;
        const std::uint64_t watched = reinterpret_cast<std::uint64_t>(&source[1000]);
        if (!backend.arm(0, watched, 8)) return 1;
        constexpr int copies = 2000;
        for (int i = 0; i < copies; ++i) {
            std::memcpy(destination, source, sizeof source); // glibc: vector moves or rep movsb
            copy_by_rep_movsb(destination, source, sizeof source);
            asm volatile("" ::: "memory");
        }
        const std::uint64_t traps = target.traps.load();
        backend.stop();
        std::printf("traps %llu for %d copies\n", static_cast<unsigned long long>(traps), 2 * copies);
        // Each copy reads the 8 watched bytes once (at most one trap per byte with a byte-wise rep movsb); a
        // handler that re-triggered itself would never return.
        const bool bounded = traps >= copies && traps <= 8ull * 2 * copies;
        return bounded && target.unread.load() == 0 ? 0 : 1;
    });
}

TEST_CASE("signal storms: a thread that blocks every signal cannot pile up ojx's, and a full queue kills nothing") {
    OJX_SKIP_WITHOUT_WATCHPOINTS();
    in_child_process([] {
        // Almost no room in the user's signal queue, as when another process of the user holds queued signals.
        const rlimit tiny{4, 4};
        setrlimit(RLIMIT_SIGPENDING, &tiny);
        scenario run;
        if (!run.start(sampler_kind::none, 200, 1, false)) return 1;
        rereading_target& target = run.target;
        hardware_backend& backend = run.backend;
        const bool synchronous = backend.machine().synchronous_traps;
        std::uint64_t delivered = 0;
        std::thread blocked([&] {
            if (backend.attach_current_thread()) return;
            sigset_t all;
            sigfillset(&all);
            sigset_t previous;
            pthread_sigmask(SIG_BLOCK, &all, &previous);
            backend.arm(0, reinterpret_cast<std::uint64_t>(&source[64]), 8);
            for (int i = 0; i < 100000; ++i) static_cast<void>(*static_cast<volatile unsigned char*>(&source[64]));
            const std::uint64_t before = target.traps.load();
            pthread_sigmask(SIG_SETMASK, &previous, nullptr);
            delivered = target.traps.load() - before;
            backend.detach_current_thread();
        });
        blocked.join();
        backend.stop();
        std::printf("synchronous traps: %d; delivered after unblocking: %llu\n", synchronous ? 1 : 0,
                    static_cast<unsigned long long>(delivered));
        // 100 000 watched reads while blocked: with synchronous traps one SIGTRAP is pending at most. Without them
        // the kernel queues real-time signals until the queue is full, then sends SIGIO, which ojx ignores for a
        // program that does not handle it; reaching here alive is the test.
        return !synchronous || delivered <= 1 ? 0 : 1;
    });
}

TEST_CASE("signal storms: a program's own SIGTRAP handler gets its own traps, and ojx stops sampling") {
    in_child_process([] {
        scenario run;
        if (!run.start(sampler_kind::automatic, 200, 0, true)) return 1;
        hardware_backend& backend = run.backend;
        static std::atomic<int> own_traps{0};
        static std::atomic<int> foreign_traps{0};
        struct sigaction own {};
        own.sa_sigaction = [](int, siginfo_t* info, void*) {
            (info->si_code == SI_TKILL || info->si_code == SI_USER ? own_traps : foreign_traps).fetch_add(1);
        };
        own.sa_flags = SA_SIGINFO;
        sigaction(SIGTRAP, &own, nullptr);
        for (int i = 0; i < 5; ++i) raise(SIGTRAP);
        static volatile std::uint64_t words[512];
        read_loop(words, 512, 1.0); // a second of CPU: a few hundred sampling interrupts
        const bool displaced = backend.handlers_displaced();
        backend.stop();
        std::printf("own traps %d, foreign %d, displaced %d\n", own_traps.load(), foreign_traps.load(),
                    displaced ? 1 : 0);
        // The program's handler saw its five raises; a step trap may reach it only in the moment between ojx's
        // last check and its next trap, so at most one.
        return own_traps.load() == 5 && foreign_traps.load() <= 1 && displaced ? 0 : 1;
    });
}

TEST_CASE("signal storms: a program that takes ojx's timer signal unseen is noticed by poll_handlers, and ojx stops") {
    in_child_process([] {
        scenario run;
        // Timers alone: no breakpoint and no step trap runs ojx's handlers to notice on their own. Each thread's
        // timer is re-armed by ojx's handler, so a displaced handler gets one signal per thread that runs on.
        if (!run.start(sampler_kind::decode_timer, 1000, 0, true)) return 1;
        hardware_backend& backend = run.backend;
        constexpr int workers = 3;
        std::mutex attaching;
        std::atomic<int> attached{0};
        std::atomic<bool> go{false};
        std::vector<std::thread> threads;
        static volatile std::uint64_t words[512];
        for (int i = 0; i < workers; ++i)
            threads.emplace_back([&] {
                {
                    const std::lock_guard lock(attaching);
                    if (!backend.attach_current_thread()) attached.fetch_add(1);
                }
                go.wait(false); // no CPU time, so no timer expiry, until the poll
                read_loop(words, 512, 0.3);
                const std::lock_guard lock(attaching);
                backend.detach_current_thread();
            });
        while (attached.load() < workers) std::this_thread::yield();
        static std::atomic<int> program_signals{0};
        struct sigaction own {};
        own.sa_handler = [](int) { program_signals.fetch_add(1); };
        sigaction(backend.sampling_signal(), &own, nullptr); // the real sigaction: nothing interposed here
        const bool noticed_unpolled = backend.handlers_displaced();
        const bool noticed = hardware_backend::poll_handlers();
        go.store(true);
        go.notify_all();
        read_loop(words, 512, 0.3);
        for (std::thread& thread : threads) thread.join();
        const int received = program_signals.load();
        backend.stop();
        std::printf("program's handler: %d signals after the poll; noticed without it %d, by it %d\n", received,
                    noticed_unpolled ? 1 : 0, noticed ? 1 : 0);
        // Unquieted, each of the 4 threads' timers would reach the program's handler once; one already due
        // between the handler's installation and the poll may.
        return !noticed_unpolled && noticed && backend.handlers_displaced() && received <= 1 ? 0 : 1;
    });
}

TEST_CASE("signal storms: code on an 8 KiB alternate signal stack is sampled without overflowing it") {
    in_child_process([] {
        scenario run;
        if (!run.start(sampler_kind::automatic, 1000, 0, true)) return 1;
        rereading_target& target = run.target;
        hardware_backend& backend = run.backend;
        // The classic SIGSTKSZ, guarded below by an unreadable page so an overflow faults instead of scribbling.
        constexpr std::size_t page = 4096;
        constexpr std::size_t small = 8192;
        auto* region = static_cast<unsigned char*>(aligned_alloc(page, page + small));
        mprotect(region, page, PROT_NONE);
        stack_t alternate{};
        alternate.ss_sp = region + page;
        alternate.ss_size = small;
        sigaltstack(&alternate, nullptr);
        struct sigaction busy {};
        busy.sa_handler = spin_on_small_stack;
        busy.sa_flags = SA_ONSTACK;
        sigaction(SIGUSR1, &busy, nullptr);
        for (int i = 0; i < 3; ++i) raise(SIGUSR1);
        static volatile std::uint64_t words[512];
        read_loop(words, 512, 0.3); // and on the thread's own stack, where an alternate stack is set
        backend.stop();
        stack_t off{};
        off.ss_flags = SS_DISABLE;
        sigaltstack(&off, nullptr);
        mprotect(region, page, PROT_READ | PROT_WRITE);
        std::free(region);
        std::printf("samples %llu, skipped on a short stack %llu\n",
                    static_cast<unsigned long long>(target.samples.load()),
                    static_cast<unsigned long long>(backend.counters().no_stack_room.load()));
        return target.samples.load() > 0 && backend.counters().no_stack_room.load() > 0 ? 0 : 1;
    });
}

TEST_CASE("signal storms: a descriptor the program closed and reused is never closed or used by ojx") {
    OJX_SKIP_WITHOUT_WATCHPOINTS();
    in_child_process([] {
        scenario run;
        if (!run.start(sampler_kind::none, 200, 2, true)) return 1;
        hardware_backend& backend = run.backend;
        // As a daemon does: close every descriptor but the standard ones, then open its own files — which here
        // are given exactly the numbers ojx's descriptors had.
        std::vector<int> ours;
        if (DIR* fds = opendir("/proc/self/fd")) {
            while (const dirent* entry = readdir(fds)) {
                char link_target[64] = {};
                const std::string link = std::string("/proc/self/fd/") + entry->d_name;
                if (readlink(link.c_str(), link_target, sizeof link_target - 1) > 0 &&
                    std::strstr(link_target, "perf_event") != nullptr)
                    ours.push_back(std::atoi(entry->d_name));
            }
            closedir(fds);
        }
        for (int fd = 3; fd < 8192; ++fd) close(fd);
        for (int fd : ours) {
            const int file = open("/dev/null", O_WRONLY);
            dup2(file, fd);
            close(file);
        }
        // Arming touches the breakpoint descriptors; stopping closes them.
        backend.arm(0, reinterpret_cast<std::uint64_t>(&source[128]), 8);
        backend.stop();
        std::size_t still_open = 0;
        for (int fd : ours) still_open += fcntl(fd, F_GETFD) != -1 ? 1 : 0;
        std::printf("program descriptors still open %zu of %zu; ours found closed %llu\n", still_open, ours.size(),
                    static_cast<unsigned long long>(backend.counters().descriptors_lost.load()));
        return !ours.empty() && still_open == ours.size() && backend.counters().descriptors_lost.load() > 0 ? 0 : 1;
    });
}

TEST_CASE("signal storms: a thread that blocks ojx's signals is counted as barely sampled, not passed over") {
    in_child_process([] {
        scenario run;
        if (!run.start(sampler_kind::automatic, 200, 0, false)) return 1;
        hardware_backend& backend = run.backend;
        auto worker = [&](bool block) {
            if (backend.attach_current_thread()) return;
            sigset_t all;
            sigfillset(&all);
            if (block) pthread_sigmask(SIG_BLOCK, &all, nullptr);
            static thread_local volatile std::uint64_t words[512];
            read_loop(words, 512, 1.0);
            backend.detach_current_thread();
        };
        std::thread blocked(worker, true);
        blocked.join();
        const std::uint64_t after_blocked = backend.counters().threads_rarely_sampled.load();
        std::thread open(worker, false);
        open.join();
        const std::uint64_t after_open = backend.counters().threads_rarely_sampled.load();
        backend.stop();
        std::printf("rarely sampled: %llu after the blocking thread, %llu after the open one\n",
                    static_cast<unsigned long long>(after_blocked), static_cast<unsigned long long>(after_open));
        return after_blocked == 1 && after_open == 1 ? 0 : 1;
    });
}

TEST_CASE("signal storms: with no room in the signal queue for a timer, a thread samples on the task clock at the rate asked",
          "[may_skip]") {
    in_child_process([] {
        scenario run;
        if (!run.start(sampler_kind::decode_timer, 200, 0, false)) return 1;
        hardware_backend& backend = run.backend;
        if (!backend.machine().synchronous_traps) return child_skipped;
        // A queue with no room at all, as when other processes of the user filled it: timer_create fails.
        const rlimit none{0, 0};
        setrlimit(RLIMIT_SIGPENDING, &none);
        if (auto error = backend.attach_current_thread()) {
            std::printf("attach: %s\n", error->c_str());
            return 1;
        }
        static volatile std::uint64_t words[512];
        read_loop(words, 512, 1.0);
        const std::uint64_t triggers = backend.counters().triggers.load();
        const std::uint64_t fallbacks = backend.counters().timer_fallbacks.load();
        const std::uint64_t stopped = backend.counters().watchdog_quarantines.load();
        backend.stop();
        std::printf("task-clock fallbacks %llu, triggers %llu in 1 s of CPU, watchdog %llu\n",
                    static_cast<unsigned long long>(fallbacks), static_cast<unsigned long long>(triggers),
                    static_cast<unsigned long long>(stopped));
        // The task clock overflows at the asked mean period (randomized 0.5-1.5x): about 200 in the second.
        return fallbacks == 1 && stopped == 0 && triggers >= 100 && triggers <= 400 ? 0 : 1;
    });
}
