// The profiling session's parts that do not depend on its analyses, and the session the agents run
// (profiling_session: the profiler alone), compiled here once.
#include "ojx/hardware/profiling_session.hpp"

#include "ojx/hardware/arch_x86_64.hpp"

#include <sched.h>
#include <sys/mman.h>

namespace ojx::hardware {

void profiler_lock::lock() noexcept {
    unsigned spins = 0;
    while (!try_lock()) {
        // Wait until the lock looks free before trying again: each failed exchange would take the cache line away
        // from the holder. The holder may be a descheduled thread (or vCPU), so after a while give way to it.
        while (held_.load(std::memory_order_relaxed)) {
            if (++spins < 64)
                arch::spin_pause();
            else
                sched_yield();
        }
    }
}

// The object map's large tables get huge pages (this project's machines run transparent huge pages in "madvise"
// mode): a lookup probes a random line of a table that may be hundreds of MiB, and with 4 KiB pages each probe
// also misses the TLB. Advice only: refused, the table works as before.
void advise_huge_pages(void* memory, std::size_t bytes) { (void)::madvise(memory, bytes, MADV_HUGEPAGE); }

template class basic_profiling_session<followed_copy_graph>;

} // namespace ojx::hardware
