// native_replicas: the native test subject of ojx's LD_PRELOAD agent (libojxpreload.so). An ordinary
// multi-threaded C++ program with no ojx dependency; it runs the same with or without the agent.
//
// Worker threads keep a pool of live heap objects per allocation site, read them over and over, and replace
// some of them over time. Some sites have replicas planted in them (objects with identical contents); the
// others are controls whose objects all differ. At exit the program writes, for every site, the exact largest
// identical-group ratio over all the objects it allocated (--truth FILE), which tests/ground_truth/check_profile.py compares with
// the profile the agent wrote.
//
//   native_replicas [--seconds S] [--threads N] [--seed N] [--churn-ms MS] [--truth FILE]
//
// The duration can also be given by the environment variable NATIVE_REPLICAS_SECONDS (the option wins).
// Build: g++ -std=c++20 -O2 -g -fno-omit-frame-pointer -pthread native_replicas.cpp -o native_replicas
// (frame pointers and -g so that a profiler can walk and name the allocation call stacks).
//
// Design points, each for the profiler's sake:
// - Every allocation site is its own noinline function with a distinctive name, called from one place
//   (replace_object), which is called from one place (worker_main): each site is one calling context.
// - Contents are written once, right after allocation, and never changed: the truth, computed from the
//   contents at allocation time, holds for the object's whole life.
// - Objects are 1-8 KiB (ojx tracks objects of at least 1 KiB by default) and are read whole, word by word,
//   many times during their life: samples land anywhere in them and watchpoints on them trap soon.
// - Templates and bookkeeping live in static storage, not on the heap, so the only heap objects of 1 KiB or
//   more are the sites' objects (plus the truth record arrays, one per site, and whatever the C++ runtime
//   allocates).
//
// One site is transient: each --churn-ms every worker allocates 8 of its objects, reads each and frees it at
// once, so that it saves churn and no heap (the truth's kept_alive: 0).
//
// Scale: 64 live objects per site; every worker replaces one object of every site each --churn-ms (10 ms), so
// with 4 workers a site allocates about 400 objects a second, each living about 160 ms and read thousands of
// times. Memory: the live objects take under 3 MiB; the truth keeps 24 bytes per allocated object (about
// 3.5 MiB per minute of run time with the defaults).

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

// The types and site functions are in a named namespace, not an anonymous one, so that the site functions
// have external linkage: their symbols are then global, which keeps them nameable by symbolizers that only
// look at global symbols.
namespace native_replicas {

constexpr std::size_t word_bytes = sizeof(std::uint64_t);
constexpr std::size_t cache_line_words = 64 / word_bytes;

// SplitMix64's finalizer: a bijection on 64-bit words with full avalanche. Used for seeding, content and
// hashing, so that everything is reproducible from --seed.
constexpr std::uint64_t mix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

class random_stream {
public:
    explicit random_stream(std::uint64_t seed) : state_(mix64(seed)) {}
    std::uint64_t next() { return mix64(state_ += 0x9e3779b97f4a7c15ULL); }
    std::size_t below(std::size_t bound) { return static_cast<std::size_t>(next() % bound); }
    unsigned percent() { return static_cast<unsigned>(next() % 100); }

private:
    std::uint64_t state_;
};

// A site's objects are words; sizes are multiples of 64 bytes so that whole cache lines are compared.
struct allocation {
    std::uint64_t* words = nullptr;
    std::size_t bytes = 0;
    std::size_t word_count() const { return bytes / word_bytes; }
};

constexpr std::size_t config_block_bytes = 4096;
constexpr std::size_t config_default_bytes = 3072; // the rest of a block is reserved and stays zero
constexpr std::size_t lookup_table_bytes = 2048;
constexpr std::size_t lookup_table_variants = 4;
constexpr std::size_t input_chunk_initial_bytes = 1024;
constexpr std::size_t input_chunk_bytes = 6144;
constexpr std::size_t input_sources = 3;
constexpr std::size_t input_run_length = 32;
constexpr std::size_t random_buffer_bytes = 8192;
constexpr std::size_t sparse_row_bytes = 4096;
constexpr std::size_t message_min_bytes = 1024;
constexpr std::size_t message_max_bytes = 8192;
constexpr std::size_t reply_header_bytes = 4096;

// What the planted sites copy from. Filled once by make_content_source before any thread starts.
struct content_source {
    std::uint64_t seed = 0;
    std::array<std::uint64_t, config_default_bytes / word_bytes> config_defaults{};
    std::array<std::array<std::uint64_t, lookup_table_bytes / word_bytes>, lookup_table_variants> lookup_tables{};
    std::array<std::array<std::uint64_t, input_chunk_bytes / word_bytes>, input_sources> inputs{};
    std::array<std::uint64_t, reply_header_bytes / word_bytes> reply_template{};
};

// The random generator for object `sequence` of site `site`: contents depend on the seed and the object's
// place in its site's allocation order, never on which thread allocated it.
random_stream object_random(std::uint64_t seed, std::uint64_t site, std::uint64_t sequence) {
    return random_stream(seed ^ mix64((site << 48) ^ sequence));
}

void* checked(void* memory, std::size_t bytes) {
    if (memory == nullptr) {
        std::fprintf(stderr, "native_replicas: out of memory allocating %zu bytes\n", bytes);
        std::abort();
    }
    return memory;
}

// ---- Planted sites -------------------------------------------------------------------------------------------

// Every object is a copy of the one set of defaults (largest-group ratio 1.0): a per-request config block
// that nobody ever changes. calloc, as config code does, so the reserved tail is zero.
[[gnu::noinline]] allocation allocate_config_blocks(const content_source& source, std::uint64_t /*sequence*/) {
    auto* words = static_cast<std::uint64_t*>(checked(std::calloc(1, config_block_bytes), config_block_bytes));
    std::memcpy(words, source.config_defaults.data(), config_default_bytes);
    return {words, config_block_bytes};
}

// A private copy of one of four lookup tables, picked at random with weights 50/25/15/10 %: groups in no
// order, the largest about half the objects.
[[gnu::noinline]] allocation allocate_lookup_tables(const content_source& source, std::uint64_t sequence) {
    constexpr std::array<unsigned, lookup_table_variants> cumulative_percent{50, 75, 90, 100};
    const unsigned draw = object_random(source.seed, 1, sequence).percent();
    const auto variant = static_cast<std::size_t>(
        std::upper_bound(cumulative_percent.begin(), cumulative_percent.end(), draw) - cumulative_percent.begin());
    auto* words = new std::uint64_t[lookup_table_bytes / word_bytes];
    std::memcpy(words, source.lookup_tables[variant].data(), lookup_table_bytes);
    return {words, lookup_table_bytes};
}

// A reader that re-reads the same input into a fresh buffer: the input changes every 32 allocations (a run;
// one of three sources, weights 70/20/10 %), and 20 % of the reads get new data instead (unique objects).
// About 80 % of objects are copies of one of three sources, in runs; the largest group is about 56 %.
// It does not know the length up front: it starts with 1 KiB and grows the buffer with realloc.
[[gnu::noinline]] allocation read_input_chunks(const content_source& source, std::uint64_t sequence) {
    random_stream run_random = object_random(source.seed, 2, sequence / input_run_length);
    const unsigned run_draw = run_random.percent();
    const std::size_t input = run_draw < 70 ? 0 : run_draw < 90 ? 1 : 2;
    random_stream object_draws = object_random(source.seed, 3, sequence);
    const bool fresh_data = object_draws.percent() < 20;

    const auto fill = [&](std::uint64_t* words, std::size_t from, std::size_t to) {
        for (std::size_t i = from; i < to; ++i) words[i] = fresh_data ? object_draws.next() : source.inputs[input][i];
    };
    auto* words = static_cast<std::uint64_t*>(
        checked(std::malloc(input_chunk_initial_bytes), input_chunk_initial_bytes));
    fill(words, 0, input_chunk_initial_bytes / word_bytes);
    words = static_cast<std::uint64_t*>(checked(std::realloc(words, input_chunk_bytes), input_chunk_bytes));
    fill(words, input_chunk_initial_bytes / word_bytes, input_chunk_bytes / word_bytes);
    return {words, input_chunk_bytes};
}

// Every object a copy of one reply template, built, read and freed at once (none is kept): as replicated as
// the config blocks, yet never more than one per thread alive. Sharing it saves allocation churn, not heap.
[[gnu::noinline]] allocation format_reply_headers(const content_source& source, std::uint64_t /*sequence*/) {
    auto* words = static_cast<std::uint64_t*>(checked(std::malloc(reply_header_bytes), reply_header_bytes));
    std::memcpy(words, source.reply_template.data(), reply_header_bytes);
    return {words, reply_header_bytes};
}

// ---- Control sites: every object differs (largest-group ratio 1/X) ------------------------------------------

// Random bytes, and the hottest site of all (see site_table) so that a control gets at least as many samples
// as any planted site.
[[gnu::noinline]] allocation allocate_random_buffers(const content_source& source, std::uint64_t sequence) {
    constexpr std::size_t count = random_buffer_bytes / word_bytes;
    random_stream random = object_random(source.seed, 4, sequence);
    auto* words = new std::uint64_t[count];
    for (std::size_t i = 0; i < count; ++i) words[i] = random.next();
    return {words, random_buffer_bytes};
}

// The hard negative: rows that are almost all zero and look alike, but no two are identical. Each 64-byte line
// of the object holds one nonzero random word at a random place, the rest zero. ojx compares the word a trap
// lands on *and* a digest of the 64-byte window around it, aligned to the object's start; because every such
// window holds a random word, a window comparison of two rows is always "different", while a one-word
// comparison would mostly see zero against zero and call them equal. Fewer differing words than one per line
// would leave all-zero windows that a 64-byte comparison cannot tell apart.
[[gnu::noinline]] allocation allocate_sparse_rows(const content_source& source, std::uint64_t sequence) {
    constexpr std::size_t count = sparse_row_bytes / word_bytes;
    random_stream random = object_random(source.seed, 5, sequence);
    auto* words = static_cast<std::uint64_t*>(checked(std::calloc(count, word_bytes), sparse_row_bytes));
    for (std::size_t line = 0; line < count; line += cache_line_words)
        words[line + random.below(cache_line_words)] = random.next() | 1; // nonzero
    return {words, sparse_row_bytes};
}

// Messages of 1-8 KiB (multiples of 64 bytes): a header with the message number and length, then random
// payload. Objects of different sizes are different without looking; equal-sized ones differ in content.
[[gnu::noinline]] allocation allocate_message_records(const content_source& source, std::uint64_t sequence) {
    random_stream random = object_random(source.seed, 6, sequence);
    const std::size_t bytes = message_min_bytes + 64 * random.below((message_max_bytes - message_min_bytes) / 64 + 1);
    const std::size_t count = bytes / word_bytes;
    auto* words = static_cast<std::uint64_t*>(checked(std::malloc(bytes), bytes));
    words[0] = sequence;
    words[1] = bytes;
    for (std::size_t i = 2; i < count; ++i) words[i] = random.next();
    return {words, bytes};
}

void release_with_free(std::uint64_t* words) { std::free(words); }
void release_with_delete_array(std::uint64_t* words) { delete[] words; }

struct site_description {
    const char* function;     // the allocating function, as a profile's frames name it
    const char* role;         // "planted" or "control"
    const char* allocator;    // how the objects are allocated
    const char* contents;     // what the objects hold
    unsigned reads_per_round; // objects read per worker round: how hot the site is
    allocation (*allocate)(const content_source&, std::uint64_t sequence);
    void (*release)(std::uint64_t*);
    // 0: the site keeps live_objects_per_site objects, replacing one each churn period. Else a transient site:
    // this many objects each churn period, each read and freed at once.
    unsigned transient_per_churn = 0;
};

// Words read per worker round: config 1 x 512, lookup 2 x 256, input 1 x 768, random 2 x 1024, sparse 1 x 512,
// messages 1 x ~576 on average: the random control is read the most.
constexpr std::array<site_description, 7> site_table{{
    {"allocate_config_blocks", "planted", "calloc", "every object a copy of one 3 KiB default configuration", 1,
     allocate_config_blocks, release_with_free},
    {"allocate_lookup_tables", "planted", "new[]", "copies of one of 4 tables, weights 50/25/15/10 %, shuffled", 2,
     allocate_lookup_tables, release_with_delete_array},
    {"read_input_chunks", "planted", "malloc+realloc",
     "80 % copies of one of 3 inputs in runs of 32 (input weights 70/20/10 %), 20 % unique", 1, read_input_chunks,
     release_with_free},
    {"allocate_random_buffers", "control", "new[]", "random words; the most-read site", 2, allocate_random_buffers,
     release_with_delete_array},
    {"allocate_sparse_rows", "control", "calloc", "zero except one random word per 64-byte line (hard negative)", 1,
     allocate_sparse_rows, release_with_free},
    {"allocate_message_records", "control", "malloc", "1-8 KiB, sequence number and random payload", 1,
     allocate_message_records, release_with_free},
    {"format_reply_headers", "planted", "malloc",
     "every object a copy of one 4 KiB reply template, 8 a churn period, each freed at once (none kept)", 0,
     format_reply_headers, release_with_free, 8},
}};

// ---- Truth: exact grouping of every object a site allocated -------------------------------------------------

// 128 bits of two independent hash chains over the full contents, plus the size: two objects are taken as
// identical when all three agree. A collision between different contents has probability about 2^-128 per
// pair, far below anything that could change a ratio here.
struct object_record {
    std::uint64_t hash_a = 0;
    std::uint64_t hash_b = 0;
    std::uint64_t bytes = 0;
    auto operator<=>(const object_record&) const = default;
};

object_record record_of(const allocation& object) {
    std::uint64_t a = 0x243f6a8885a308d3ULL;
    std::uint64_t b = 0x13198a2e03707344ULL ^ object.bytes;
    for (std::size_t i = 0; i < object.word_count(); ++i) {
        a = mix64(a ^ object.words[i]);
        b = mix64(b + object.words[i] * 0xff51afd7ed558ccdULL + i);
    }
    return {a, b, object.bytes};
}

struct site_truth {
    std::uint64_t objects = 0;
    std::uint64_t bytes = 0;
    std::uint64_t min_bytes = 0;
    std::uint64_t max_bytes = 0;
    std::uint64_t distinct_sizes = 0;
    std::uint64_t groups = 0;
    std::uint64_t largest_group = 0;
    double largest_group_ratio = 0;     // X_N / X
    double identical_pair_fraction = 0; // fraction of all pairs of objects that are identical (the true theta)
};

site_truth summarize(std::vector<object_record> records) {
    site_truth truth;
    truth.objects = records.size();
    if (records.empty()) return truth;
    std::sort(records.begin(), records.end());
    double identical_pairs = 0;
    for (std::size_t begin = 0; begin < records.size();) {
        std::size_t end = begin + 1;
        while (end < records.size() && records[end] == records[begin]) ++end;
        const std::uint64_t group_size = end - begin;
        ++truth.groups;
        truth.largest_group = std::max(truth.largest_group, group_size);
        identical_pairs += static_cast<double>(group_size) * static_cast<double>(group_size - 1);
        begin = end;
    }
    std::vector<std::uint64_t> sizes;
    sizes.reserve(records.size());
    for (const object_record& record : records) {
        truth.bytes += record.bytes;
        sizes.push_back(record.bytes);
    }
    std::sort(sizes.begin(), sizes.end());
    truth.min_bytes = sizes.front();
    truth.max_bytes = sizes.back();
    truth.distinct_sizes = static_cast<std::uint64_t>(std::unique(sizes.begin(), sizes.end()) - sizes.begin());

    const double x = static_cast<double>(truth.objects);
    truth.largest_group_ratio = static_cast<double>(truth.largest_group) / x;
    truth.identical_pair_fraction = truth.objects > 1 ? identical_pairs / (x * (x - 1)) : 1.0; // one object: one group
    return truth;
}

// ---- Live objects ----------------------------------------------------------------------------------------------

constexpr std::size_t live_objects_per_site = 64;

// One live object. The lock makes a reader and the thread replacing the object take turns; a line of its own
// so that threads working on neighbouring slots do not share a cache line.
struct alignas(64) live_slot {
    std::mutex lock;
    allocation object;
};

struct site_state {
    std::array<live_slot, live_objects_per_site> slots;
    std::atomic<std::uint64_t> next_sequence{0};
    std::atomic<std::uint64_t> object_reads{0};
    std::mutex records_lock;
    std::vector<object_record> records;
};

struct program_state {
    std::array<site_state, site_table.size()> sites;
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> checksum{0};
};

// Reads the whole object, one 64-bit word after another; returns their sum. An empty slot (not yet filled at
// start-up) reads as zero.
[[gnu::noinline]] std::uint64_t read_object(live_slot& slot) {
    const std::lock_guard guard(slot.lock);
    const std::uint64_t* words = slot.object.words;
    const std::size_t count = slot.object.word_count();
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < count; ++i) sum += words[i];
    return sum;
}

// Allocates the site's next object, records its contents for the truth, and puts it in the slot; the object it
// replaces is freed (often by another thread than the one that allocated it).
[[gnu::noinline]] void replace_object(const site_description& description, site_state& site, std::size_t slot_index,
                                      const content_source& source) {
    const std::uint64_t sequence = site.next_sequence.fetch_add(1, std::memory_order_relaxed);
    const allocation fresh = description.allocate(source, sequence);
    const object_record record = record_of(fresh);
    {
        const std::lock_guard guard(site.records_lock);
        site.records.push_back(record);
    }
    allocation old;
    {
        live_slot& slot = site.slots[slot_index];
        const std::lock_guard guard(slot.lock);
        old = slot.object;
        slot.object = fresh;
    }
    if (old.words != nullptr) description.release(old.words);
}

// A transient site's objects for one churn period: each allocated, recorded, read whole and freed at once.
[[gnu::noinline]] std::uint64_t use_transient_objects(const site_description& description, site_state& site,
                                                      const content_source& source) {
    std::uint64_t sum = 0;
    for (unsigned i = 0; i < description.transient_per_churn; ++i) {
        const allocation fresh = description.allocate(source, site.next_sequence.fetch_add(1, std::memory_order_relaxed));
        const object_record record = record_of(fresh);
        {
            const std::lock_guard guard(site.records_lock);
            site.records.push_back(record);
        }
        for (std::size_t w = 0; w < fresh.word_count(); ++w) sum += fresh.words[w];
        site.object_reads.fetch_add(1, std::memory_order_relaxed);
        description.release(fresh.words);
    }
    return sum;
}

struct worker_settings {
    std::size_t index = 0;
    std::size_t count = 0;
    std::uint64_t seed = 0;
    std::chrono::nanoseconds churn_period{};
};

// A worker first fills its share of every site's slots (slot index = its index modulo the worker count), then
// loops: one round of reads over all sites, and every churn period one object replaced in each site. Filling
// and churn go through the same call of replace_object, so that a site's objects all have one calling context.
[[gnu::noinline]] void worker_main(program_state& state, const content_source& source, worker_settings settings) {
    random_stream random(settings.seed ^ mix64(0x776f726b ^ settings.index));
    std::array<std::uint64_t, site_table.size()> reads{};
    std::uint64_t checksum = 0;
    std::size_t next_fill = settings.index; // next slot this worker fills at start-up
    auto next_churn = std::chrono::steady_clock::now();
    while (!state.stop.load(std::memory_order_relaxed)) {
        const bool filling = next_fill < live_objects_per_site;
        if (filling || std::chrono::steady_clock::now() >= next_churn) {
            for (std::size_t s = 0; s < site_table.size(); ++s) {
                if (site_table[s].transient_per_churn != 0) {
                    if (!filling) checksum += use_transient_objects(site_table[s], state.sites[s], source);
                    continue;
                }
                const std::size_t slot = filling ? next_fill : random.below(live_objects_per_site);
                replace_object(site_table[s], state.sites[s], slot, source);
            }
            if (filling) {
                next_fill += settings.count;
                next_churn = std::chrono::steady_clock::now() + settings.churn_period;
            } else {
                next_churn += settings.churn_period;
            }
        }
        for (std::size_t s = 0; s < site_table.size(); ++s) {
            for (unsigned r = 0; r < site_table[s].reads_per_round; ++r) {
                checksum += read_object(state.sites[s].slots[random.below(live_objects_per_site)]);
                ++reads[s];
            }
        }
    }
    state.checksum.fetch_add(checksum, std::memory_order_relaxed);
    for (std::size_t s = 0; s < site_table.size(); ++s)
        state.sites[s].object_reads.fetch_add(reads[s], std::memory_order_relaxed);
}

void make_content_source(content_source& source, std::uint64_t seed) {
    source.seed = seed;
    random_stream random(seed ^ 0x74656d706c617465ULL);
    for (std::uint64_t& word : source.config_defaults) word = random.next();
    for (auto& table : source.lookup_tables)
        for (std::uint64_t& word : table) word = random.next();
    for (auto& input : source.inputs)
        for (std::uint64_t& word : input) word = random.next();
    for (std::uint64_t& word : source.reply_template) word = random.next();
}

} // namespace native_replicas

namespace {

using namespace native_replicas;

struct options {
    double seconds = 4.0;
    std::size_t threads = 4;
    std::uint64_t seed = 1;
    double churn_ms = 10.0;
    std::string truth_path;
};

constexpr std::string_view usage =
    "usage: native_replicas [--seconds S] [--threads N] [--seed N] [--churn-ms MS] [--truth FILE]\n"
    "  --seconds S     how long to run (default 4, or $NATIVE_REPLICAS_SECONDS)\n"
    "  --threads N     worker threads (default 4)\n"
    "  --seed N        seed of all contents (default 1)\n"
    "  --churn-ms MS   each worker replaces one object of every site this often (default 10)\n"
    "  --truth FILE    write the ground truth (JSON) to FILE at exit\n";

template <typename T>
std::optional<T> parse_number(std::string_view text) {
    T value{};
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
}

std::optional<options> parse_options(int argc, char** argv) {
    options result;
    if (const char* env = std::getenv("NATIVE_REPLICAS_SECONDS"); env != nullptr && *env != '\0') {
        const auto seconds = parse_number<double>(env);
        if (!seconds || !(*seconds > 0)) {
            std::fprintf(stderr, "native_replicas: NATIVE_REPLICAS_SECONDS must be a positive number, got '%s'\n", env);
            return std::nullopt;
        }
        result.seconds = *seconds;
    }
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::fputs(usage.data(), stdout);
            std::exit(0);
        }
        if (arg != "--seconds" && arg != "--threads" && arg != "--seed" && arg != "--churn-ms" && arg != "--truth") {
            std::fprintf(stderr, "native_replicas: unknown option '%s'\n%s", argv[i], usage.data());
            return std::nullopt;
        }
        if (i + 1 >= argc) {
            std::fprintf(stderr, "native_replicas: %s needs a value\n", argv[i]);
            return std::nullopt;
        }
        const std::string_view text = argv[++i];
        bool valid = true;
        if (arg == "--truth") {
            result.truth_path = text;
        } else if (arg == "--seed") {
            const auto seed = parse_number<std::uint64_t>(text);
            valid = seed.has_value();
            if (valid) result.seed = *seed;
        } else if (arg == "--threads") {
            const auto threads = parse_number<std::size_t>(text);
            valid = threads && *threads >= 1 && *threads <= 256;
            if (valid) result.threads = *threads;
        } else {
            const auto value = parse_number<double>(text);
            valid = value && *value > 0 && *value < 1e6;
            if (valid) (arg == "--seconds" ? result.seconds : result.churn_ms) = *value;
        }
        if (!valid) {
            std::fprintf(stderr, "native_replicas: invalid value '%s' for %s\n", argv[i], argv[i - 1]);
            return std::nullopt;
        }
    }
    return result;
}

bool write_truth(const std::string& path, const options& settings, double elapsed_seconds, std::uint64_t checksum,
                 const std::array<site_truth, site_table.size()>& truths, const program_state& state) {
    std::FILE* out = std::fopen(path.c_str(), "w");
    if (out == nullptr) {
        std::fprintf(stderr, "native_replicas: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
        return false;
    }
    std::fprintf(out,
                 "{\n  \"native_replicas_truth_version\": 1,\n  \"seed\": %" PRIu64 ", \"threads\": %zu, "
                 "\"seconds\": %.3f, \"elapsed_seconds\": %.3f, \"churn_ms\": %.3f, \"live_objects_per_site\": %zu,\n"
                 "  \"checksum\": \"%016" PRIx64 "\",\n  \"sites\": [",
                 settings.seed, settings.threads, settings.seconds, elapsed_seconds, settings.churn_ms,
                 live_objects_per_site, checksum);
    for (std::size_t s = 0; s < site_table.size(); ++s) {
        const site_description& site = site_table[s];
        const site_truth& truth = truths[s];
        std::fprintf(out,
                     "%s\n    {\"function\": \"%s\", \"role\": \"%s\", \"allocator\": \"%s\", \"contents\": \"%s\",\n"
                     "     \"objects\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"object_bytes\": {\"min\": %" PRIu64
                     ", \"max\": %" PRIu64 ", \"distinct\": %" PRIu64 "},\n"
                     "     \"groups\": %" PRIu64 ", \"largest_group\": %" PRIu64
                     ", \"largest_group_ratio\": %.9g, \"identical_pair_fraction\": %.9g, \"object_reads\": %" PRIu64
                     ", \"kept_alive\": %zu}",
                     s == 0 ? "" : ",", site.function, site.role, site.allocator, site.contents, truth.objects,
                     truth.bytes, truth.min_bytes, truth.max_bytes, truth.distinct_sizes, truth.groups,
                     truth.largest_group, truth.largest_group_ratio, truth.identical_pair_fraction,
                     state.sites[s].object_reads.load(), site.transient_per_churn != 0 ? 0 : live_objects_per_site);
    }
    std::fputs("\n  ]\n}\n", out);
    if (std::fclose(out) != 0) {
        std::fprintf(stderr, "native_replicas: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
        return false;
    }
    return true;
}

} // namespace

int main(int argc, char** argv) {
    const std::optional<options> settings = parse_options(argc, argv);
    if (!settings) return 2;

    // Static storage: neither the templates nor the slot tables are heap objects a profiler would track.
    static content_source source;
    static program_state state;
    make_content_source(source, settings->seed);

    // Reserve the truth records up front so that they are not reallocated while the workers run (each
    // reallocation would be one more large heap object). Growth past this is still correct, just noisier.
    const double churn_per_second = 1000.0 / settings->churn_ms;
    const auto expected_objects = static_cast<std::size_t>(
        static_cast<double>(live_objects_per_site) +
        static_cast<double>(settings->threads) * churn_per_second * (settings->seconds + 1.0));
    for (std::size_t s = 0; s < site_table.size(); ++s)
        state.sites[s].records.reserve(std::min<std::size_t>(
            expected_objects * std::max<std::size_t>(1, site_table[s].transient_per_churn), 1u << 24));

    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    workers.reserve(settings->threads);
    for (std::size_t i = 0; i < settings->threads; ++i) {
        const worker_settings worker{i, settings->threads, settings->seed,
                                     std::chrono::nanoseconds(static_cast<std::int64_t>(settings->churn_ms * 1e6))};
        workers.emplace_back(worker_main, std::ref(state), std::cref(source), worker);
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(settings->seconds));
    state.stop.store(true, std::memory_order_relaxed);
    for (std::thread& worker : workers) worker.join();
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    std::array<site_truth, site_table.size()> truths;
    for (std::size_t s = 0; s < site_table.size(); ++s) {
        for (live_slot& slot : state.sites[s].slots) {
            if (slot.object.words != nullptr) site_table[s].release(slot.object.words);
            slot.object = {};
        }
        truths[s] = summarize(std::move(state.sites[s].records));
    }

    const std::uint64_t checksum = state.checksum.load();
    std::printf("native_replicas: %zu threads, %.2f s, seed %" PRIu64 ", checksum %016" PRIx64 "\n",
                settings->threads, elapsed, settings->seed, checksum);
    std::printf("  %-26s %-8s %-15s %8s %12s %8s %8s  %s\n", "site", "role", "allocator", "objects", "bytes/object",
                "groups", "largest", "ratio X_N/X");
    for (std::size_t s = 0; s < site_table.size(); ++s) {
        const site_truth& truth = truths[s];
        char sizes[32];
        if (truth.min_bytes == truth.max_bytes)
            std::snprintf(sizes, sizeof sizes, "%" PRIu64, truth.min_bytes);
        else
            std::snprintf(sizes, sizeof sizes, "%" PRIu64 "-%" PRIu64, truth.min_bytes, truth.max_bytes);
        std::printf("  %-26s %-8s %-15s %8" PRIu64 " %12s %8" PRIu64 " %8" PRIu64 "  %.4f\n",
                    site_table[s].function, site_table[s].role, site_table[s].allocator, truth.objects, sizes,
                    truth.groups, truth.largest_group, truth.largest_group_ratio);
    }
    if (!settings->truth_path.empty() &&
        !write_truth(settings->truth_path, *settings, elapsed, checksum, truths, state))
        return 1;
    return 0;
}
