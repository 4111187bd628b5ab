// Relocations written against the previous relocation (relocation_survivors.hpp): over many random sequences of
// collections — survivors that stay, move or die, new objects, a survivor whose record changed — decoding the
// records gives back exactly the survivors encoded, in order; objects that stay cost a record per run, not per
// object; nothing refers to a relocation the reader may not have whole; a reference past the previous survivors
// is reported.
#include "ojx/profiler.hpp"
#include "ojx/relocation_survivors.hpp"

#include <catch2/catch.hpp>

#include <random>
#include <variant>
#include <vector>

namespace {

using namespace ojx;

struct relocated {
    address from;
    address to;
    std::uint64_t size;
    object_info info;
};

using survivor_record = std::variant<relocated_object_event, kept_survivors_event, moved_survivor_event>;

std::vector<survivor_record> encode(survivor_encoder& encoder, const std::vector<relocated>& survivors, bool can_refer) {
    std::vector<survivor_record> records;
    encoder.encode(std::span<const relocated>(survivors), can_refer, [&](const auto& record) { records.push_back(record); });
    return records;
}

// Decodes `records` as one relocation; the survivors, or the first problem.
std::vector<relocated_object_event> decode(survivor_decoder& decoder, const std::vector<survivor_record>& records,
                                           std::string& problem) {
    for (const survivor_record& record : records) {
        std::visit(
            [&](const auto& r) {
                if constexpr (std::is_same_v<std::decay_t<decltype(r)>, relocated_object_event>) {
                    decoder.add(r);
                } else if (auto error = decoder.add(r); error && problem.empty()) {
                    problem = *error;
                }
            },
            record);
    }
    std::vector<relocated_object_event> survivors = decoder.survivors();
    decoder.finish_relocation();
    return survivors;
}

std::vector<relocated_object_event> as_events(const std::vector<relocated>& survivors) {
    std::vector<relocated_object_event> events;
    for (const relocated& s : survivors) events.push_back({s.from, s.to, s.size, s.info});
    return events;
}

} // namespace

TEST_CASE("random collections: the decoded survivors are exactly the encoded ones, in order", "[relocation]") {
    std::uint64_t kept_objects = 0, records_written = 0, full_records = 0, survivors_encoded = 0;
    for (std::uint64_t seed = 1; seed <= 200; ++seed) {
        std::mt19937_64 random(seed);
        const auto chance = [&](unsigned percent) { return random() % 100 < percent; };
        survivor_encoder encoder;
        survivor_decoder decoder;
        std::vector<relocated> registry; // where each tracked object is now, in allocation order
        std::uint64_t serial = 0;
        address top = 0x10000;
        for (int gc = 0; gc < 12; ++gc) {
            const std::size_t born = random() % 30;
            for (std::size_t i = 0; i < born; ++i) {
                const std::uint64_t size = 16 + random() % 64 * 8;
                registry.push_back({top, top, size, {static_cast<context_id>(random() % 5), static_cast<type_id>(random() % 3), ++serial}});
                top += size;
            }
            std::vector<relocated> survivors;
            for (const relocated& object : registry) {
                if (chance(15)) continue; // died
                relocated s{object.to, object.to, object.size, object.info};
                if (chance(20)) s.to = s.from + 0x100000 - random() % 0x200000; // moved, either way
                if (chance(2)) ++s.info.allocation_context; // the profiler's record changed: written in full
                survivors.push_back(s);
            }
            // Now and then the reader may not have the previous relocation whole (a record was lost).
            const bool can_refer = !chance(10);
            if (!can_refer) decoder.forget_previous();
            const std::vector<survivor_record> records = encode(encoder, survivors, can_refer);
            survivors_encoded += survivors.size();
            std::string problem;
            const std::vector<relocated_object_event> decoded = decode(decoder, records, problem);
            INFO("seed " << seed << ", collection " << gc);
            REQUIRE(problem.empty());
            REQUIRE(decoded == as_events(survivors));
            for (const survivor_record& r : records) {
                ++records_written;
                full_records += std::holds_alternative<relocated_object_event>(r) ? 1 : 0;
                if (const auto* kept = std::get_if<kept_survivors_event>(&r)) kept_objects += kept->count;
                if (!can_refer) REQUIRE(std::holds_alternative<relocated_object_event>(r));
            }
            registry.clear();
            for (const relocated& s : survivors) registry.push_back({s.to, s.to, s.size, s.info});
        }
    }
    std::printf("relocations: %llu survivors in %llu records, %llu of them full, %llu survivors kept by run records\n",
                static_cast<unsigned long long>(survivors_encoded), static_cast<unsigned long long>(records_written),
                static_cast<unsigned long long>(full_records), static_cast<unsigned long long>(kept_objects));
    // Even with a fifth of the survivors moving and a sixth dying at every collection, runs of kept ones make
    // fewer records than survivors.
    CHECK(records_written < survivors_encoded);
}

TEST_CASE("objects that stay cost one record per run; one that moves, one short record", "[relocation]") {
    std::vector<relocated> survivors;
    for (std::uint64_t i = 0; i < 1000; ++i) survivors.push_back({0x1000 + i * 64, 0x1000 + i * 64, 48, {1, 2, i + 1}});
    survivor_encoder encoder;
    const auto first = encode(encoder, survivors, true);
    CHECK(first.size() == 1000); // nothing to refer to yet
    survivors.erase(survivors.begin() + 500); // one died
    survivors[700].to += 0x40000;             // one moved
    const auto second = encode(encoder, survivors, true);
    REQUIRE(second.size() == 4);
    CHECK(std::get<kept_survivors_event>(second[0]) == kept_survivors_event{0, 500});   // 0-499
    CHECK(std::get<kept_survivors_event>(second[1]) == kept_survivors_event{1, 200});   // 501-700: 500 died
    CHECK(std::get<moved_survivor_event>(second[2]) == moved_survivor_event{0, 0x40000}); // 701
    CHECK(std::get<kept_survivors_event>(second[3]) == kept_survivors_event{0, 298});   // 702-999
    // Everything stays where the second relocation left it: one run.
    for (relocated& s : survivors) s.from = s.to;
    const auto third = encode(encoder, survivors, true);
    REQUIRE(third.size() == 1);
    CHECK(std::get<kept_survivors_event>(third[0]) == kept_survivors_event{0, 999});
}

TEST_CASE("a reference past the previous survivors is reported", "[relocation]") {
    survivor_decoder decoder;
    decoder.add(relocated_object_event{0x1000, 0x2000, 16, {1, 1, 1}});
    decoder.finish_relocation();
    CHECK(!decoder.add(kept_survivors_event{0, 1}));
    decoder.finish_relocation();
    const auto past = decoder.add(kept_survivors_event{1, 1});
    REQUIRE(past);
    CHECK(*past == "refers to survivor 2 of the previous relocation, which had 1");
    CHECK(decoder.add(moved_survivor_event{1, 8}));
    decoder.forget_previous();
    CHECK(decoder.add(moved_survivor_event{0, 8}));
}
