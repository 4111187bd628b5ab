// A native program with planted copies, for copy profiling under the native agent (copies_suite.py): objects of
// one allocation site (make_source) are copied whole into objects of three others — by memcpy, by std::copy and by
// a hand loop of 8-byte words — and two controls read objects of their own sites without copying them: one sums
// them (every loaded value goes to a computation), one stores a computed value (x * 3 + 1) into objects of a
// fifth site. Each activity runs in turn for the same time. memcpy and std::copy move a whole object in a few
// hundred wide instructions, so that their slices would be mostly the allocator's and the agent's work at each
// allocation and free: they copy into each destination `library_repeats` times, so that their loads get samples
// of the same order as the hand loop's.
//
// Every site allocates through its own function (noinline, frame pointers), so the agent names five allocation
// contexts by those functions. The copies' destinations are freed at once; the sources live until the end.
//
// usage: copy_program [--seconds S]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr std::size_t object_bytes = 4096;
constexpr std::size_t words = object_bytes / sizeof(std::uint64_t);
constexpr std::size_t sources = 16;
constexpr int library_repeats = 8;

#define PLANTED __attribute__((noinline))

// One object; the barrier after malloc keeps the call from becoming a tail jump, so the site's frame is on the
// allocation stack.
std::uint64_t* allocate() {
    void* object = std::malloc(object_bytes);
    asm volatile("" : : "r"(object) : "memory");
    return static_cast<std::uint64_t*>(object);
}

PLANTED std::uint64_t* make_source() { return allocate(); }
PLANTED std::uint64_t* make_memcpy_copy() { return allocate(); }
PLANTED std::uint64_t* make_std_copy() { return allocate(); }
PLANTED std::uint64_t* make_loop_copy() { return allocate(); }
PLANTED std::uint64_t* make_summed() { return allocate(); }
PLANTED std::uint64_t* make_computed_from() { return allocate(); }
PLANTED std::uint64_t* make_computed() { return allocate(); }

PLANTED void copy_by_memcpy(const std::uint64_t* from) {
    std::uint64_t* to = make_memcpy_copy();
    for (int repeat = 0; repeat < library_repeats; ++repeat) {
        std::memcpy(to, from, object_bytes);
        asm volatile("" : : "r"(to) : "memory"); // each copy is made: the destination is read after it
    }
    std::free(to);
}

PLANTED void copy_by_std_copy(const std::uint64_t* from) {
    std::uint64_t* to = make_std_copy();
    for (int repeat = 0; repeat < library_repeats; ++repeat) {
        std::copy(from, from + words, to);
        asm volatile("" : : "r"(to) : "memory");
    }
    std::free(to);
}

// One word at a time, as a field-by-field copy does: a load, then a store of the loaded register.
PLANTED void copy_by_loop(const std::uint64_t* from) {
    std::uint64_t* to = make_loop_copy();
    for (std::size_t i = 0; i < words; ++i) {
        std::uint64_t value;
        asm volatile("movq (%1), %0" : "=r"(value) : "r"(from + i) : "memory");
        asm volatile("movq %1, (%0)" : : "r"(to + i), "r"(value) : "memory");
    }
    std::free(to);
}

// Control: every loaded value is added to a sum, none is stored.
PLANTED std::uint64_t sum_words(const std::uint64_t* from) {
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < words; ++i) {
        std::uint64_t value;
        asm volatile("movq (%1), %0" : "=r"(value) : "r"(from + i) : "memory");
        sum += value;
    }
    return sum;
}

// Control: what is stored is computed from what was loaded, not the loaded value.
PLANTED void compute_into(const std::uint64_t* from) {
    std::uint64_t* to = make_computed();
    for (std::size_t i = 0; i < words; ++i) {
        std::uint64_t value;
        asm volatile("movq (%1), %0" : "=r"(value) : "r"(from + i) : "memory");
        value = value * 3 + 1;
        asm volatile("movq %1, (%0)" : : "r"(to + i), "r"(value) : "memory");
    }
    std::free(to);
}

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

} // namespace

int main(int argc, char** argv) {
    double seconds = 3;
    for (int i = 1; i + 1 < argc; i += 2)
        if (std::string(argv[i]) == "--seconds") seconds = std::atof(argv[i + 1]);

    std::vector<std::uint64_t*> from(sources), summed(sources), computed_from(sources);
    for (std::size_t s = 0; s < sources; ++s) {
        from[s] = make_source();
        summed[s] = make_summed();
        computed_from[s] = make_computed_from();
        for (std::size_t i = 0; i < words; ++i) from[s][i] = summed[s][i] = computed_from[s][i] = s * 1000003 + i;
    }
    std::uint64_t sum = 0;
    const double end = now() + seconds;
    // Activities in turn, each for a slice of the same length.
    constexpr double slice = 0.01;
    for (std::uint64_t turn = 0; now() < end; ++turn) {
        const double slice_end = now() + slice;
        for (std::size_t s = 0; now() < slice_end; s = (s + 1) % sources) {
            switch (turn % 5) {
            case 0: copy_by_memcpy(from[s]); break;
            case 1: copy_by_std_copy(from[s]); break;
            case 2: copy_by_loop(from[s]); break;
            case 3: sum += sum_words(summed[s]); break;
            case 4: compute_into(computed_from[s]); break;
            }
        }
    }
    for (std::size_t s = 0; s < sources; ++s) {
        std::free(from[s]);
        std::free(summed[s]);
        std::free(computed_from[s]);
    }
    std::printf("%llu\n", static_cast<unsigned long long>(sum));
    return 0;
}
