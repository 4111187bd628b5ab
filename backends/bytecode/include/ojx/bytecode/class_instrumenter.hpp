// The instrumenter a JVM agent calls when a class is loaded: every method with code gets a counter plan
// (include/ojx/counting) for its control-flow graph, and each counter an increment snippet, `push index;
// invokestatic hook`, placed where the plan's counter sits (code_editor.hpp relocates the rest). What it returns
// says, per method, which counters it holds and how new code offsets map back to the original ones, so that the
// agent can turn counts and throw offsets into sites.
//
// Placement of a counter on flow edge u → v (method_graph's edge_origin), in this order:
//   - a return edge: before the return instruction;
//   - a fall-through edge: after u's last instruction (jumps to v skip it);
//   - a goto edge, or u's only successor: before u's last instruction when it does not fall through (a jump or a
//     switch), else after it;
//   - v has exactly one predecessor edge and is neither the entry nor a handler: before v's first instruction;
//   - otherwise (a critical branch or switch edge): on the edge, in a block appended to the code.
// A counter after a site goes right after the allocation instruction. Counters at one place run in plan order.
//
// Every array allocation site also gets an elements counter: after the allocation instruction, after the plan's
// counters there, `dup; arraylength; push index; invokestatic elements-hook` adds the new array's length (a
// multianewarray's outermost) to it. It adds no control flow and runs only once the array exists, so the lengths
// are exact whatever the plan; a method whose plan has no counter is still rewritten when it allocates arrays.
#pragma once

#include "ojx/bytecode/method_graph.hpp"
#include "ojx/bytecode/result.hpp"
#include "ojx/counting/counter_plan.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ojx::bytecode {

enum class plan_kind { sites, paths, edges };

// The static methods each increment calls with the counter's global index: `hit` adds one, `add` an array's length
// (its first argument).
struct counter_hook {
    std::string owner = "ojx/Counts";
    std::string name = "hit";
    std::string descriptor = "(I)V";
    std::string elements_name = "add";
    std::string elements_descriptor = "(II)V";
};

struct method_counting {
    std::string name, descriptor;
    // Of the original code (original offsets), when instrumented; also when the plan has no counter (`refused`
    // says so, the code is unchanged and new_to_original empty): the agent counts those sites where exceptions
    // leave them.
    std::optional<method_graph> graph;
    ojx::counting::counter_plan plan;        // its counters, in order
    std::uint32_t first_counter = 0;         // global index of plan.counters()[0]
    // The array sites' elements counters, after the plan's: element_sites[j] is the site (index into
    // site_offsets) whose lengths global counter first_counter + plan.counters().size() + j sums.
    std::vector<std::uint32_t> element_sites;
    std::vector<std::uint32_t> site_offsets; // original offsets of its allocation sites (empty when refused)
    // Per site, with `graph`: the allocated type as a field descriptor ("Ljava/lang/String;", "[B", "[[I"), and the
    // source line of the original LineNumberTable (-1 where there is none).
    std::vector<std::string> site_types;
    std::vector<std::int32_t> site_lines;
    bool counted_at_throws_only() const noexcept { return graph && refused; }
    // Global counter indices used: the plan's, then the elements counters.
    std::uint32_t counters() const noexcept {
        return static_cast<std::uint32_t>(plan.counters().size() + element_sites.size());
    }
    // New code offset -> what lies there: an original instruction's offset, or the counter (global index) whose
    // increment snippet it is.
    struct position {
        bool in_counter = false;
        std::uint32_t value = 0;
    };
    std::vector<position> new_to_original; // indexed by new offset; only instruction starts are meaningful
    std::optional<std::string> refused;    // why this method was left as it was
};

struct instrumented_class {
    std::vector<std::uint8_t> bytes; // the rewritten class; empty when no method was instrumented
    std::string name;                // internal form: "com/acme/Reader"
    std::string source_file;         // the SourceFile attribute's, or empty
    std::vector<method_counting> methods; // one per method with code, in class-file order
    std::uint32_t counters = 0;           // global indices used: first_counter .. first_counter + counters - 1
};

// Where a counter's increment goes in the original code, by the rules of the top comment: after or before the
// instruction at `instruction`, or on its branch target `slot` (code_editor::target_slot).
struct counter_placement {
    enum class kind : std::uint8_t { after, before, on_edge };
    kind where = kind::after;
    std::uint32_t instruction = 0;
    std::uint32_t slot = 0;
    friend bool operator==(const counter_placement&, const counter_placement&) = default;
};
counter_placement place_counter(const method_graph& graph, std::span<const instruction> instructions,
    ojx::counting::counter_place place);

// Instruments every method with code (see the top comment). A method whose plan has no counter, or which cannot be
// rewritten, stays as it was and `refused` says why; methods of the hook's own class are all left alone. A class
// that cannot be parsed, or whose rewritten form cannot be written, is an error.
result<instrumented_class> instrument_class(std::span<const std::uint8_t> class_bytes, plan_kind kind,
    std::uint32_t first_counter, const counter_hook& hook = {});

// "sites", "paths" or "edges".
const char* plan_kind_name(plan_kind kind) noexcept;

// A refusal's (or error's) reason with its numbers (offsets, indices) replaced by N, so that the reasons of many
// methods group into a few kinds, to be counted and named once.
std::string reason_kind(std::string_view reason);

} // namespace ojx::bytecode
