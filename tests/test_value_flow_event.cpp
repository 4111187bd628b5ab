// value_flow_event (ojx/value_flow.hpp): each kind, built by its factory, is delivered to the sink member it stands
// for with the arguments it was built from; unused fields stay zero, so equal events compare equal.
#include "ojx/value_flow.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

using namespace ojx;

namespace {

// A sink that writes down each call: the member's name and its arguments, in order.
struct call {
    std::string member;
    std::vector<std::uint64_t> arguments;
    friend bool operator==(const call&, const call&) = default;
};

struct recording_sink {
    std::vector<call> calls;
    void on_allocation(address, std::uint64_t, context_id, const allocation_shape&) {
        calls.push_back({"allocation", {}});
    }
    void on_free(address) { calls.push_back({"free", {}}); }
    void on_move(address, address) { calls.push_back({"move", {}}); }
    void on_new_reference(value_register r, context_id c) { calls.push_back({"new_reference", {r, c}}); }
    void on_constant(value_register r) { calls.push_back({"constant", {r}}); }
    void on_load(value_register r, address a, std::uint8_t width) { calls.push_back({"load", {r, a, width}}); }
    void on_register_move(value_register d, value_register s) { calls.push_back({"register_move", {d, s}}); }
    void on_store(value_register r, address a, std::uint8_t width) { calls.push_back({"store", {r, a, width}}); }
    void on_compute(std::span<const value_register> sources, std::optional<value_register> result) {
        std::vector<std::uint64_t> arguments(sources.begin(), sources.end());
        arguments.push_back(result ? *result : 1000); // 1000: no result (no register has that number)
        calls.push_back({"compute", arguments});
    }
    void on_string_move(address d, address s, std::uint64_t bytes, std::uint8_t width) {
        calls.push_back({"string_move", {d, s, bytes, width}});
    }
};
static_assert(value_flow_sink<recording_sink>);

call delivered(const value_flow_event& event) {
    recording_sink sink;
    deliver(event, sink);
    REQUIRE(sink.calls.size() == 1);
    return sink.calls.front();
}

} // namespace

TEST_CASE("each event kind reaches its sink member with its arguments", "[value_flow]") {
    using e = value_flow_event;
    CHECK(delivered(e::load(3, 0x1000, 8)) == call{"load", {3, 0x1000, 8}});
    CHECK(delivered(e::register_move(5, 48)) == call{"register_move", {5, 48}});
    CHECK(delivered(e::store(16, 0x2008, 16)) == call{"store", {16, 0x2008, 16}});
    const value_register two[] = {0, 255};
    CHECK(delivered(e::compute(two, value_register{0})) == call{"compute", {0, 255, 0}});
    CHECK(delivered(e::compute(std::span<const value_register>(two, 1), std::nullopt)) == call{"compute", {0, 1000}});
    CHECK(delivered(e::compute({}, value_register{7})) == call{"compute", {7}});
    const value_register six[] = {1, 2, 3, 4, 5, 6};
    CHECK(delivered(e::compute(six, value_register{9})) == call{"compute", {1, 2, 3, 4, 5, 6, 9}});
    CHECK(delivered(e::constant(2)) == call{"constant", {2}});
    CHECK(delivered(e::string_move(0x3000, 0x4000, 64, 8)) == call{"string_move", {0x3000, 0x4000, 64, 8}});
    CHECK(delivered(e::new_reference(1, 42)) == call{"new_reference", {1, 42}});
}

TEST_CASE("events compare by what they say", "[value_flow]") {
    using e = value_flow_event;
    const value_register a[] = {1, 2};
    const value_register b[] = {1, 3};
    CHECK(e::compute(a, value_register{1}) == e::compute(a, value_register{1}));
    CHECK_FALSE(e::compute(a, value_register{1}) == e::compute(b, value_register{1}));
    CHECK_FALSE(e::compute(a, value_register{0}) == e::compute(a, std::nullopt)); // result 0 is not "none"
    CHECK_FALSE(e::load(1, 0x10, 8) == e::store(1, 0x10, 8));
    CHECK(e::register_move(4, 5).sources[1] == 0); // unused fields zero
    CHECK(sizeof(value_flow_event) <= 48);
}
