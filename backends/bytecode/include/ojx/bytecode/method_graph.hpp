// A method's bytecode as exact allocation counting sees it (include/ojx/counting/control_flow_graph.hpp): basic
// blocks split at every branch target, after every branch, jump, switch, return and athrow, and at every exception
// range's start, end and handler, so that each block is covered by the same handlers throughout; its allocation
// sites (new, newarray, anewarray, multianewarray) in order; an edge per way a block's last instruction leaves it.
// Where each block, site and edge lies in the code is kept, so that an instrumenter can place a plan's counters and an
// agent can turn a throw's bytecode index into a point.
#pragma once

#include "ojx/bytecode/code_attribute.hpp"
#include "ojx/bytecode/instructions.hpp"
#include "ojx/bytecode/result.hpp"
#include "ojx/counting/control_flow_graph.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace ojx::bytecode {

// How an edge leaves its block's last instruction.
enum class edge_kind : std::uint8_t {
    fall_through, // into the next block: the instruction ends the block without transferring control
    branch,       // a conditional branch or goto taken
    switch_case,  // a tableswitch or lookupswitch case (`case_index`)
    switch_default,
    return_, // to the method's exit
};

struct edge_origin {
    edge_kind kind = edge_kind::fall_through;
    std::uint32_t instruction = 0; // offset of the block's last instruction
    std::uint32_t case_index = 0;  // for switch_case: the position in instruction::cases
};

struct code_range {
    std::uint32_t start = 0; // offset of the first instruction
    std::uint32_t end = 0;   // offset after the last
};

struct method_graph {
    counting::control_flow_graph graph;
    std::vector<code_range> blocks;          // per block of `graph`
    std::vector<std::uint32_t> last;         // per block: offset of its last instruction
    std::vector<std::uint32_t> site_offsets; // per site: the allocation instruction's offset
    std::vector<edge_origin> edges;          // per edge of `graph`

    // The block holding the instruction at `offset`, if any.
    std::optional<counting::block_id> block_at(std::uint32_t offset) const noexcept;
    // The point an exception raised by the instruction at `offset` leaves from: its block, and how many of the
    // block's sites allocated before it (an allocation that throws has not allocated). For a caller's frame,
    // `offset` is the invoke's.
    std::optional<std::pair<counting::block_id, std::uint32_t>> point_at(std::uint32_t offset) const noexcept;
};

// Builds the graph of decoded code. Fails, naming the offset, on jsr/ret subroutines (class files before version
// 51; their graphs depend on the subroutine's caller) and on code that runs off its end.
result<method_graph> build_method_graph(const code_attribute& code, std::span<const instruction> instructions);

} // namespace ojx::bytecode
