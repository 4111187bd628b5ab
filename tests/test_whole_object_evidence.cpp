// Whole-object evidence as units: fingerprints of objects read through a memory policy, the bounded identical-group
// table (exact for what it keeps, merged exactly), the near-replica families, and the largest-share and
// identical-pair estimators checked statistically against populations of known structure (many seeds; the
// intervals are 95 % ones and must cover the truth in ≥ 92 % of draws, which 400 draws tell apart from 95 % within
// about 2.5 standard errors).
#include "ojx/emulation/synthetic_heap.hpp"
#include "ojx/identical_groups.hpp"
#include "ojx/near_replicas.hpp"
#include "ojx/object_contents.hpp"
#include "ojx/random.hpp"
#include "ojx/site_estimate.hpp"
#include "ojx/whole_object_evidence.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <numeric>
#include <vector>

using namespace ojx;

namespace {

object_fingerprint fingerprint_of(const std::vector<std::uint64_t>& words) {
    emulation::synthetic_heap heap(1 << 20);
    const address at = *heap.allocate(words.size() * 8);
    heap.write(at, words.data(), words.size() * 8);
    object_fingerprint f;
    REQUIRE(fingerprint_object(heap, at, words.size() * 8, f));
    return f;
}

std::vector<std::uint64_t> random_words(fast_random& rng, std::size_t n) {
    std::vector<std::uint64_t> words(n);
    for (auto& w : words) w = rng() | 1;
    return words;
}

} // namespace

TEST_CASE("a fingerprint tells identical objects, near-replicas and zeros apart") {
    fast_random rng(3);
    const auto row = random_words(rng, 2048); // 16 KiB: blocks of 64 words
    auto same = row;
    auto near = row;
    for (int k = 0; k < 8; ++k) near[static_cast<std::size_t>(k) * 256 + 5] ^= 1; // 8 of 2048 elements, 8 blocks
    const auto a = fingerprint_of(row), b = fingerprint_of(same), c = fingerprint_of(near);
    REQUIRE(a.digest == b.digest);
    REQUIRE(a.blocks == b.blocks);
    REQUIRE(a.digest != c.digest);
    REQUIRE(shared_blocks(a, c) == fingerprint_blocks - 8);
    REQUIRE_FALSE(a.all_zero);
    REQUIRE(fingerprint_of(std::vector<std::uint64_t>(128, 0)).all_zero);
    // A size that is no multiple of the block count: 1000 bytes, blocks of 32 bytes, the last ones empty.
    std::vector<std::uint64_t> odd(125, 7);
    const auto o = fingerprint_of(odd);
    odd[124] = 8;
    REQUIRE(shared_blocks(o, fingerprint_of(odd)) == fingerprint_blocks - 1);
    // Sizes differ: never near.
    REQUIRE(shared_blocks(a, fingerprint_of(random_words(rng, 1024))) == 0);
    // Outside readable memory: no fingerprint.
    emulation::synthetic_heap heap(4096);
    object_fingerprint f;
    REQUIRE_FALSE(fingerprint_object(heap, heap.base() + 2048, 4096, f));
}

TEST_CASE("the group table is exact for what it keeps, past its capacity too") {
    // 50 contents, 90 objects: 10 repeated contents (5 objects each) and 40 seen once, through a table of 16.
    fast_random rng(11);
    std::vector<std::uint64_t> stream;
    for (std::uint64_t g = 0; g < 10; ++g) stream.insert(stream.end(), 5, rng());
    for (int s = 0; s < 40; ++s) stream.push_back(rng());
    for (std::size_t i = stream.size(); i > 1; --i) std::swap(stream[i - 1], stream[rng.below(i)]);
    identical_group_table table(16);
    for (const std::uint64_t d : stream) table.record(d, false, 1);
    const identical_groups_summary s = table.summary();
    REQUIRE(s.objects() == stream.size());
    REQUIRE(s.groups.size() <= 16);
    REQUIRE(s.unkept_objects > 0);
    // Every kept content holds all of its objects.
    for (const content_group& g : s.groups)
        REQUIRE(g.objects == static_cast<std::uint64_t>(std::count(stream.begin(), stream.end(), g.digest)));
    const auto e = estimate_identical_groups(s, 0.95, stream.size());
    REQUIRE(e.distinct_low <= 50);
    REQUIRE(e.distinct_high >= 50);
    REQUIRE(e.largest_share_ci.contains(5.0 / static_cast<double>(stream.size()))); // 5 of the 90 objects
}

// The table's rule as plainly as it can be written (a linear scan of the kept contents), to check the indexed
// table against: same kept contents, same counts, same unkept objects.
struct reference_table {
    std::size_t capacity;
    std::vector<content_group> kept;
    std::uint64_t limit = ~std::uint64_t{0};
    std::uint64_t unkept = 0;

    void record(std::uint64_t digest) {
        for (content_group& g : kept)
            if (g.digest == digest) return void(++g.objects);
        if (digest >= limit) return void(++unkept);
        if (kept.size() < capacity) return kept.push_back({digest, 1, 1, 1, 1, false});
        auto victim = kept.end();
        for (auto g = kept.begin(); g != kept.end(); ++g)
            if (g->objects == 1 && (victim == kept.end() || g->digest > victim->digest)) victim = g;
        if (victim == kept.end()) return void(++unkept);
        if (victim->digest < digest) {
            limit = digest;
            return void(++unkept);
        }
        limit = std::min(limit, victim->digest);
        ++unkept;
        *victim = {digest, 1, 1, 1, 1, false};
    }
};

TEST_CASE("the indexed table keeps exactly what the plain rule keeps, at any capacity") {
    for (const std::size_t capacity : {std::size_t{1}, std::size_t{7}, std::size_t{256}, std::size_t{300},
                                       std::size_t{5000}}) {
        for (std::uint64_t seed = 1; seed <= 20; ++seed) {
            fast_random rng(seed * 7919 + capacity);
            identical_group_table table(capacity);
            reference_table reference{capacity, {}};
            // Digests from a small range collide in the index's low bits; a skewed mix repeats some often.
            const std::uint64_t distinct = 1 + rng.below(3 * capacity + 50);
            for (int i = 0; i < 4000; ++i) {
                const std::uint64_t d = rng.below(4) == 0 ? rng.below(3) : rng.below(distinct) << (seed % 3 * 20);
                table.record(d, false, 1);
                reference.record(d);
            }
            const identical_groups_summary s = table.summary();
            std::vector<content_group> expected = reference.kept;
            std::sort(expected.begin(), expected.end(),
                      [](const content_group& a, const content_group& b) { return a.digest < b.digest; });
            REQUIRE(s.groups.size() == expected.size());
            for (std::size_t g = 0; g < expected.size(); ++g) {
                REQUIRE(s.groups[g].digest == expected[g].digest);
                REQUIRE(s.groups[g].objects == expected[g].objects);
            }
            REQUIRE(s.unkept_objects == reference.unkept);
        }
    }
}

// The heaviest unkept content's weight, from the stream and what the table kept (a kept content holds all of its
// objects, so the rest of a content's weight is unkept).
double heaviest_unkept_content(const std::vector<std::pair<std::uint64_t, double>>& stream,
                               const identical_groups_summary& s) {
    std::vector<std::pair<std::uint64_t, double>> totals;
    for (const auto& [digest, weight] : stream) {
        auto at = std::find_if(totals.begin(), totals.end(), [&](const auto& t) { return t.first == digest; });
        if (at == totals.end()) totals.emplace_back(digest, weight);
        else at->second += weight;
    }
    double heaviest = 0;
    for (const auto& [digest, total] : totals) {
        const auto kept = std::find_if(s.groups.begin(), s.groups.end(),
                                       [&](const content_group& g) { return g.digest == digest; });
        heaviest = std::max(heaviest, total - (kept == s.groups.end() ? 0 : kept->weight));
    }
    return heaviest;
}

TEST_CASE("the unkept objects' heaviest content is bounded, and the bound is tight where contents are distinct") {
    for (std::uint64_t seed = 1; seed <= 200; ++seed) {
        fast_random rng(seed);
        identical_group_table table(16);
        std::vector<std::pair<std::uint64_t, double>> stream;
        // A table filled by repeated contents first, then a mix: a popular late content, many distinct ones.
        const std::uint64_t late = rng() | 1;
        for (int i = 0; i < 600; ++i) {
            const std::uint64_t digest = i < 64 ? static_cast<std::uint64_t>(i % 16) * 0x9e3779b97f4a7c15ULL
                                         : rng.below(3) == 0 ? late : rng();
            const double weight = 1 + static_cast<double>(rng.below(4));
            stream.emplace_back(digest, weight);
            table.record(digest, false, weight);
        }
        const identical_groups_summary s = table.summary();
        REQUIRE(s.unkept_objects > 0);
        const double truth = heaviest_unkept_content(stream, s);
        INFO("seed " << seed << ": heaviest unkept " << truth << ", bound " << s.unkept_largest_weight << " of "
                     << s.unkept_weight);
        REQUIRE(s.heaviest_unkept() >= truth - 1e-9);
        REQUIRE(s.heaviest_unkept() <= s.unkept_weight + 1e-9);
        // The estimate's upper end holds the popular late content's share.
        const auto e = estimate_identical_groups(s, 0.95);
        double all = 0;
        for (const auto& item : stream) all += item.second;
        REQUIRE(e.largest_share_ci.high >= truth / all - 1e-9);
    }
    // All distinct: the bound is about the unkept weight over the sketch's 16 counters, not all of it.
    identical_group_table distinct(16);
    fast_random rng(3);
    for (int i = 0; i < 1600; ++i) distinct.record(rng(), false, 1);
    const identical_groups_summary s = distinct.summary();
    REQUIRE(s.unkept_objects >= 1500);
    CHECK(s.heaviest_unkept() <= 2.0 * static_cast<double>(s.unkept_objects) / 16);
    const auto e = estimate_identical_groups(s, 0.95);
    CHECK(e.largest_share_ci.high < 0.2);
}

TEST_CASE("merged summaries bound the unkept objects' heaviest content of the union") {
    for (std::uint64_t seed = 1; seed <= 100; ++seed) {
        fast_random rng(seed);
        identical_group_table left(8), right(8);
        std::vector<std::pair<std::uint64_t, double>> stream;
        for (int i = 0; i < 400; ++i) {
            const std::uint64_t digest = rng.below(2) == 0 ? rng.below(20) * 0x9e3779b97f4a7c15ULL : rng();
            stream.emplace_back(digest, 1);
            (i % 2 ? left : right).record(digest, false, 1);
        }
        identical_groups_summary merged = left.summary();
        merged += right.summary();
        INFO("seed " << seed);
        REQUIRE(merged.heaviest_unkept() >= heaviest_unkept_content(stream, merged) - 1e-9);
        REQUIRE(merged.heaviest_unkept() <= merged.unkept_weight + 1e-9);
    }
}

TEST_CASE("a table grows from its initial room and keeps every content exactly") {
    identical_group_table table(1 << 20);
    const std::size_t distinct = 20 * 256;
    for (std::size_t round = 0; round < 3; ++round)
        for (std::size_t d = 0; d < distinct; ++d) table.record(d * 0x9e3779b97f4a7c15ULL + round % 2, false, 1);
    const identical_groups_summary s = table.summary();
    REQUIRE(s.unkept_objects == 0);
    REQUIRE(s.groups.size() == 2 * distinct);
    std::uint64_t objects = 0;
    for (const content_group& g : s.groups) objects += g.objects;
    REQUIRE(objects == 3 * distinct);
}

TEST_CASE("a table of the default capacity starts small, grows to it, and keeps exact groups past it") {
    // The room doubles from initial_room to the capacity as contents arrive, then full-table eviction begins.
    REQUIRE(identical_group_table::initial_bytes(256) <= 8 * (sizeof(content_group) + 2 * sizeof(std::uint32_t)));
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        fast_random rng(seed);
        identical_group_table table(256);
        std::vector<std::uint64_t> stream;
        for (int i = 0; i < 2000; ++i) stream.push_back(rng.below(600) * 0x9e3779b97f4a7c15ULL);
        for (std::uint64_t d : stream) table.record(d, false, 1);
        const identical_groups_summary s = table.summary();
        INFO("seed " << seed);
        REQUIRE(s.groups.size() <= 256);
        REQUIRE(table.kept() == s.groups.size());
        std::map<std::uint64_t, std::uint64_t> truth;
        for (std::uint64_t d : stream) ++truth[d];
        std::uint64_t kept_objects = 0;
        for (const content_group& g : s.groups) {
            REQUIRE(g.objects == truth[g.digest]); // a kept content has every one of its objects
            kept_objects += g.objects;
        }
        REQUIRE(kept_objects + s.unkept_objects == stream.size());
    }
}

TEST_CASE("summaries merge exactly: the sum is the summary of all the objects") {
    fast_random rng(5);
    identical_group_table all(256), left(256), right(256);
    for (int i = 0; i < 300; ++i) {
        const std::uint64_t d = rng.below(40) * 0x9e3779b97f4a7c15ULL;
        const double w = 1 + static_cast<double>(rng.below(3));
        all.record(d, false, w);
        (i % 3 == 0 ? left : right).record(d, false, w);
    }
    identical_groups_summary merged = left.summary();
    merged += right.summary();
    REQUIRE(merged.groups == all.summary().groups);
    identical_groups_summary other_order = right.summary();
    other_order += left.summary();
    REQUIRE(other_order.groups == merged.groups);
}

TEST_CASE("with every object digested the estimates are exact") {
    identical_groups_summary s;
    s.groups = {{1, 60, 60, 60, 1, true}, {2, 30, 30, 30, 1, false}, {3, 10, 10, 10, 1, false}};
    const auto e = estimate_identical_groups(s, 0.95, 100);
    REQUIRE(e.largest_share == Approx(0.6));
    REQUIRE(e.largest_share_ci.low == Approx(0.6));
    REQUIRE(e.largest_share_ci.high == Approx(0.6));
    REQUIRE(e.largest_all_zero);
    const double pairs = (60.0 * 59 + 30 * 29 + 10 * 9) / (100.0 * 99);
    REQUIRE(e.identical_pairs == Approx(pairs));
    REQUIRE(e.identical_pairs_ci.low == Approx(pairs));
    REQUIRE(e.identical_pairs_ci.high == Approx(pairs));
    REQUIRE(e.distinct_low == 3);
    REQUIRE(e.distinct_high == 3);
    // The same objects as a sample of an unknown population: an interval around the same point.
    const auto sample = estimate_identical_groups(s, 0.95);
    REQUIRE(sample.largest_share_ci.low < 0.6);
    REQUIRE(sample.largest_share_ci.high > 0.6);
}

namespace {

struct population_shape {
    const char* name;
    std::vector<std::uint32_t> groups; // sizes; the rest of `size` are distinct singletons
    std::uint32_t size;
};

// Draws `sampled` of the population without replacement, each with weight `weight`, and returns how often the
// intervals covered the truth.
struct coverage_count {
    int largest = 0, pairs = 0, draws = 0;
};

coverage_count sample_coverage(const population_shape& shape, std::uint32_t sampled, bool weighted, int seeds) {
    std::vector<std::uint64_t> population;
    std::uint64_t largest = 0;
    double pair_sum = 0;
    for (std::size_t g = 0; g < shape.groups.size(); ++g) {
        population.insert(population.end(), shape.groups[g], g + 1);
        largest = std::max<std::uint64_t>(largest, shape.groups[g]);
        pair_sum += static_cast<double>(shape.groups[g]) * (shape.groups[g] - 1.0);
    }
    for (std::uint64_t s = population.size(); s < shape.size; ++s) population.push_back(1000 + s);
    if (largest == 0) largest = 1;
    const double n = shape.size;
    const double true_largest = static_cast<double>(largest) / n, true_pairs = pair_sum / (n * (n - 1));
    coverage_count c;
    for (int seed = 1; seed <= seeds; ++seed) {
        fast_random rng(static_cast<std::uint64_t>(seed) * 7919);
        std::vector<std::uint64_t> order = population;
        for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
        identical_group_table table(512);
        // Weighted: a population that allocation sampling thinned; every sampled object stands for 4.
        for (std::uint32_t i = 0; i < sampled; ++i) table.record(order[i] * 0x9e3779b97f4a7c15ULL, false, weighted ? 4 : 1);
        const auto e = estimate_identical_groups(table.summary(), 0.95, weighted ? 0 : shape.size);
        ++c.draws;
        c.largest += e.largest_share_ci.contains(true_largest) ? 1 : 0;
        c.pairs += e.identical_pairs_ci.contains(true_pairs) ? 1 : 0;
    }
    return c;
}

} // namespace

TEST_CASE("the largest-share and identical-pair intervals cover the truth at their level", "[statistical]") {
    const std::vector<population_shape> shapes = {
        {"one group of 70%", {1400}, 2000},
        {"two equal groups", {800, 800}, 2000},
        {"five equal groups", {300, 300, 300, 300, 300}, 2000},
        {"50/30/20", {1000, 600, 400}, 2000},
        {"20 groups of 5%", std::vector<std::uint32_t>(20, 100), 2000},
        {"10% and singletons", {200}, 2000},
        {"all distinct", {}, 2000},
        {"all identical", {2000}, 2000},
    };
    int largest = 0, pairs = 0, draws = 0;
    std::printf("%-22s %8s %8s %8s\n", "shape", "sample", "largest", "pairs");
    for (const auto& shape : shapes) {
        for (const std::uint32_t sampled : {60u, 400u}) {
            for (const bool weighted : {false, true}) {
                const auto c = sample_coverage(shape, sampled, weighted, 200);
                std::printf("%-22s %5u%s %7.1f%% %7.1f%%\n", shape.name, sampled, weighted ? "w" : " ",
                            100.0 * c.largest / c.draws, 100.0 * c.pairs / c.draws);
                // Per configuration: no worse than 88 % (200 draws: 95 % less 3 standard errors).
                CHECK(c.largest >= 0.88 * c.draws);
                CHECK(c.pairs >= 0.88 * c.draws);
                largest += c.largest;
                pairs += c.pairs;
                draws += c.draws;
            }
        }
    }
    // Pooled over 6400 draws: at least 93 %.
    REQUIRE(largest >= 0.93 * draws);
    REQUIRE(pairs >= 0.93 * draws);
}

namespace {

// A population of `size` objects: groups of the given shares of it (rounded to whole objects), the rest distinct.
struct small_site_shape {
    const char* name;
    std::vector<double> shares;
};

std::vector<std::uint64_t> population_of(const small_site_shape& shape, std::uint32_t size, double& true_largest) {
    std::vector<std::uint64_t> population;
    std::uint64_t largest = 1;
    for (std::size_t g = 0; g < shape.shares.size(); ++g) {
        const auto count = std::min<std::uint64_t>(static_cast<std::uint64_t>(std::llround(shape.shares[g] * size)),
                                                   size - population.size());
        population.insert(population.end(), count, g + 1);
        largest = std::max(largest, count);
    }
    while (population.size() < size) population.push_back(1000 + population.size());
    true_largest = static_cast<double>(largest) / size;
    return population;
}

// How a site's objects reach its digests: all of weight 1 from a population of known size (no allocation
// sampling) or of unknown size (allocation sampling at one inclusion probability), or drawn in batches of different inclusion probabilities and weighted by their inverses (the
// adaptive allocation-sampling interval, a sweep's or a second's digest budget), with the population unknown
// (allocation sampling) or known (budgets only). Weighted draws give a varying number of digested objects; each
// draw counts for the number it gave.
enum class small_draw { uniform_known, uniform_unknown, weighted_unknown, weighted_known };

} // namespace

TEST_CASE("from three digested objects on, the largest-share interval covers the truth", "[statistical]") {
    const std::vector<small_site_shape> shapes = {
        {"all distinct", {}},
        {"all identical", {1.0}},
        {"5% and singletons", {0.05}},
        {"20% and singletons", {0.2}},
        {"50% and singletons", {0.5}},
        {"80% and singletons", {0.8}},
        {"90% and singletons", {0.9}},
        {"95% and singletons", {0.95}},
        {"two equal groups", {0.5, 0.5}},
        {"50/30/20", {0.5, 0.3, 0.2}},
        {"80/20", {0.8, 0.2}},
        {"five groups of 20%", std::vector<double>(5, 0.2)},
        {"20 groups of 5%", std::vector<double>(20, 0.05)},
    };
    constexpr std::uint32_t first = 3, last = 19;
    constexpr int draws = 60;
    struct cell {
        int draws = 0, covered = 0;
    };
    // cells[n][shape]: pooled over the population sizes and the four ways of drawing.
    std::vector<std::vector<cell>> cells(last + 1, std::vector<cell>(shapes.size()));
    int distinct_draws = 0, distinct_low_above = 0;
    for (std::uint32_t target = first; target <= last; ++target) {
        for (const std::uint32_t size : {target, target + 1, 2 * target, 50u, 2000u}) {
            for (std::size_t k = 0; k < shapes.size(); ++k) {
                double truth = 0;
                const auto population = population_of(shapes[k], size, truth);
                for (const small_draw how : {small_draw::uniform_known, small_draw::uniform_unknown,
                                              small_draw::weighted_unknown, small_draw::weighted_known}) {
                    for (int seed = 1; seed <= draws; ++seed) {
                        fast_random rng(static_cast<std::uint64_t>(seed) * 7919 + target * 31 + size * 131 +
                                        static_cast<std::uint64_t>(how) * 100003);
                        identical_group_table table(512);
                        std::uint32_t digested = 0;
                        if (how == small_draw::uniform_known || how == small_draw::uniform_unknown) {
                            std::vector<std::uint64_t> order = population;
                            for (std::size_t i = 0; i < target; ++i)
                                std::swap(order[i], order[i + rng.below(order.size() - i)]);
                            for (std::size_t i = 0; i < target; ++i)
                                table.record(order[i] * 0x9e3779b97f4a7c15ULL, false, 1);
                            digested = target;
                        } else {
                            // Inclusion probabilities 0.4 to 1.6 times target/size by batch, independent of content.
                            constexpr double spread[] = {0.4, 0.8, 1.2, 1.6};
                            const double base = static_cast<double>(target) / size;
                            for (const std::uint64_t content : population) {
                                const double p = std::min(1.0, base * spread[rng.below(4)]);
                                if (!(rng.unit() < p)) continue;
                                table.record(content * 0x9e3779b97f4a7c15ULL, false, 1 / p);
                                ++digested;
                            }
                        }
                        if (digested < first || digested > last) continue;
                        const auto e = estimate_identical_groups(
                            table.summary(), 0.95,
                            how == small_draw::weighted_unknown || how == small_draw::uniform_unknown ? 0 : size);
                        cell& c = cells[digested][k];
                        ++c.draws;
                        c.covered += e.largest_share_ci.contains(truth) ? 1 : 0;
                        if (shapes[k].shares.empty()) {
                            ++distinct_draws;
                            distinct_low_above += e.largest_share_ci.low > truth + 1e-9 ? 1 : 0;
                        }
                    }
                }
            }
        }
    }
    int covered = 0, all = 0;
    double worst = 1;
    for (std::uint32_t n = first; n <= last; ++n) {
        for (std::size_t k = 0; k < shapes.size(); ++k) {
            const cell& c = cells[n][k];
            covered += c.covered;
            all += c.draws;
            // Per (n, shape) cell, each of at least 300 draws: no worse than 93 %, which a 95 % interval misses
            // by chance with probability ≈ 0.007 (2.4 standard errors at 300 draws); the cells of a structure
            // are where a small-n interval fails (near shares of 0 and 1), and pooling would hide them.
            REQUIRE(c.draws >= 300);
            worst = std::min(worst, static_cast<double>(c.covered) / c.draws);
            if (c.covered < 0.93 * c.draws)
                FAIL_CHECK("n " << n << ", " << shapes[k].name << ": " << c.covered << " of " << c.draws);
        }
    }
    std::printf("small sites: %d of %d draws covered (%.2f%%), worst (n, shape) cell %.1f%%\n", covered, all,
                100.0 * covered / all, 100 * worst);
    REQUIRE(covered >= 0.95 * all);
    // An all-distinct population: a lower end above 1/N would claim replicas where there are none. Never.
    REQUIRE(distinct_draws > 0);
    REQUIRE(distinct_low_above == 0);
}

TEST_CASE("a site whose every object was digested gets its counts, whatever their weights") {
    identical_group_table table(16);
    // Ten objects of a known population of ten: six identical, of weight 1, four distinct, of weight 4.
    for (int i = 0; i < 6; ++i) table.record(7, false, 1);
    for (std::uint64_t i = 0; i < 4; ++i) table.record(100 + i, false, 4);
    const auto exact = estimate_identical_groups(table.summary(), 0.95, 10);
    REQUIRE(exact.largest_share == Approx(0.6));
    REQUIRE(exact.largest_share_ci.low == Approx(0.6));
    REQUIRE(exact.largest_share_ci.high == Approx(0.6));
    REQUIRE(exact.identical_pairs == Approx(6.0 * 5 / (10 * 9)));
    // The same objects from an unknown population are a weighted sample: 6 of 22.
    const auto sample = estimate_identical_groups(table.summary(), 0.95);
    REQUIRE(sample.largest_share == Approx(6.0 / 22));
}

TEST_CASE("near-replicas form a family of their own and are not identical") {
    fast_random rng(17);
    const auto pattern = random_words(rng, 2048);
    near_replica_table near(8);
    identical_group_table groups(256);
    for (int i = 0; i < 50; ++i) {
        auto row = pattern;
        for (int k = 0; k < 8; ++k) row[rng.below(row.size())] = rng(); // 8 of 2048 elements differ
        const auto f = fingerprint_of(row);
        near.record(f);
        groups.record(f.digest, f.all_zero, 1);
    }
    // Controls: distinct dense rows join no family.
    for (int i = 0; i < 10; ++i) near.record(fingerprint_of(random_words(rng, 2048)));
    const auto e = estimate_near_replicas(near.summary(), 60);
    REQUIRE(e.found);
    REQUIRE(e.near == 49);
    REQUIRE(e.members == 50);
    REQUIRE(e.shared_fraction >= 0.5);
    REQUIRE(e.shared_fraction <= 31.0 / 32);
    const auto identical = estimate_identical_groups(groups.summary(), 0.95, 50);
    REQUIRE(identical.largest_objects == 1);
    REQUIRE(identical.identical_pairs == 0);
    // Two halves merged: one family again.
    near_replica_summary a = near.summary(), b = near.summary();
    a += b;
    REQUIRE(estimate_near_replicas(a, 120).near == 98);
}

TEST_CASE("the combined estimate says which evidence it rests on") {
    // By default three digested objects are enough: two pairs are the least that can show identity.
    const estimator_config config{};
    REQUIRE(config.min_digested_objects == 3);
    replica_estimate comparisons;
    comparisons.reported = true;
    comparisons.omega = 0.3;
    comparisons.gamma = 0.8;
    comparisons.theta = 0.5;
    identical_groups_estimate whole;
    whole.objects = 2;
    REQUIRE(combine_estimates(comparisons, whole, config).basis == evidence_basis::comparisons);
    REQUIRE(combine_estimates(comparisons, whole, config).largest_share_ci == interval{0.3, 0.8});
    whole.objects = 3;
    whole.largest_share = 0.4;
    whole.largest_share_ci = {0.3, 0.5};
    const site_estimate e = combine_estimates(comparisons, whole, config);
    REQUIRE(e.basis == evidence_basis::whole_objects);
    REQUIRE(e.largest_share == 0.4);
    comparisons.reported = false;
    whole.objects = 2;
    REQUIRE(combine_estimates(comparisons, whole, config).basis == evidence_basis::none);
    // A stricter threshold (a profile that says 20) leaves the same site to comparisons.
    const estimator_config strict{.min_digested_objects = 20};
    comparisons.reported = true;
    whole.objects = 19;
    REQUIRE(combine_estimates(comparisons, whole, strict).basis == evidence_basis::comparisons);
}

TEST_CASE("objects tracked with weight 1 make the population known only where allocations were counted") {
    // A site of fifteen allocations whose three tracked ones each had weight 1: under a sampling interval that
    // grew, the other twelve were passed over without a trace, so the instances read 3 either way.
    REQUIRE(digest_population(3, 3, true) == 3);
    REQUIRE(digest_population(3, 3, false) == 0);
    REQUIRE(digest_population(3, 3.5, true) == 0); // some tracked object stood for more than itself
    identical_group_table table(16);
    for (std::uint64_t i = 0; i < 3; ++i) table.record(100 + i, false, 1);
    const auto counted = estimate_identical_groups(table.summary(), 0.95, digest_population(3, 3, true));
    REQUIRE(counted.largest_share_ci.low == Approx(1.0 / 3));
    const auto sampled = estimate_identical_groups(table.summary(), 0.95, digest_population(3, 3, false));
    REQUIRE(sampled.largest_share_ci.low < replicated_omega);
    REQUIRE(sampled.largest_share_ci.high > 0.5);
}

TEST_CASE("a site is called replicated only where two of its objects are identical") {
    const estimator_config config{};
    replica_estimate no_comparisons;
    // Three distinct objects of a known population of three: the largest group's share is exactly 1/3, and it
    // is one object.
    identical_group_table distinct(16);
    for (std::uint64_t i = 0; i < 3; ++i) distinct.record(100 + i, false, 1);
    const site_estimate alone =
        combine_estimates(no_comparisons, estimate_identical_groups(distinct.summary(), 0.95, 3), config);
    REQUIRE(alone.basis == evidence_basis::whole_objects);
    REQUIRE(alone.largest_share_ci.low >= replicated_omega);
    REQUIRE(alone.largest_objects == 1);
    REQUIRE_FALSE(called_replicated(alone));
    // Two of three identical: a replica group.
    identical_group_table pair(16);
    pair.record(7, false, 1);
    pair.record(7, false, 1);
    pair.record(8, false, 1);
    const site_estimate two =
        combine_estimates(no_comparisons, estimate_identical_groups(pair.summary(), 0.95, 3), config);
    REQUIRE(two.largest_objects == 2);
    REQUIRE(called_replicated(two));
    // Comparisons: a lower end of 0.1 or more rests on equal comparisons.
    replica_estimate comparisons;
    comparisons.reported = true;
    comparisons.omega = 0.2;
    comparisons.gamma = 0.6;
    REQUIRE(called_replicated(combine_estimates(comparisons, identical_groups_estimate{}, config)));
    comparisons.omega = 0.05;
    REQUIRE_FALSE(called_replicated(combine_estimates(comparisons, identical_groups_estimate{}, config)));
}
