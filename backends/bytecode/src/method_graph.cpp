// Builds a method's control-flow graph from its decoded instructions (method_graph.hpp).
#include "ojx/bytecode/method_graph.hpp"

#include <algorithm>
#include <string>

namespace ojx::bytecode {

namespace {

using counting::block_id;

bool ends_block(const instruction& in) {
    return in.is(instruction_kind::conditional_branch | instruction_kind::unconditional_jump |
                 instruction_kind::switch_ | instruction_kind::return_ | instruction_kind::athrow);
}

} // namespace

std::optional<block_id> method_graph::block_at(std::uint32_t offset) const noexcept {
    const auto after = std::upper_bound(blocks.begin(), blocks.end(), offset,
                                        [](std::uint32_t o, const code_range& r) { return o < r.start; });
    if (after == blocks.begin()) {
        return std::nullopt;
    }
    const auto& range = *(after - 1);
    if (offset >= range.end) {
        return std::nullopt;
    }
    return static_cast<block_id>(after - 1 - blocks.begin());
}

std::optional<std::pair<block_id, std::uint32_t>> method_graph::point_at(std::uint32_t offset) const noexcept {
    const auto b = block_at(offset);
    if (!b) {
        return std::nullopt;
    }
    std::uint32_t cut = 0;
    for (const counting::site_id s : graph.block(*b).sites) {
        if (site_offsets[s] < offset) {
            ++cut;
        }
    }
    return std::pair{*b, cut};
}

result<method_graph> build_method_graph(const code_attribute& code, std::span<const instruction> instructions) {
    if (instructions.empty()) {
        return make_error("the method has no instruction");
    }
    const auto length = static_cast<std::uint32_t>(code.code.size());
    // Leaders: where a block starts.
    std::vector<bool> leader(length + std::size_t{1}, false);
    leader[0] = true;
    for (const auto& in : instructions) {
        if (in.is(instruction_kind::subroutine)) {
            return make_error("jsr/ret subroutines are not rewritten (class files before version 51)", in.offset);
        }
        if (in.has_targets()) {
            for (const auto t : in.targets()) {
                leader[t] = true;
            }
        }
        if (ends_block(in)) {
            leader[in.offset + in.length] = true;
        }
    }
    for (const auto& entry : code.exception_table) {
        leader[entry.start_pc] = true;
        leader[entry.end_pc] = true;
        leader[entry.handler_pc] = true;
    }
    method_graph m;
    std::vector<counting::basic_block> blocks;
    std::vector<std::uint32_t> block_of_offset(length, 0);
    for (std::size_t i = 0; i < instructions.size(); ++i) {
        const auto& in = instructions[i];
        if (leader[in.offset]) {
            if (!m.blocks.empty()) {
                m.blocks.back().end = in.offset;
            }
            m.blocks.push_back(code_range{in.offset, length});
            blocks.emplace_back();
            m.last.push_back(in.offset);
        }
        const auto b = static_cast<block_id>(m.blocks.size() - 1);
        block_of_offset[in.offset] = b;
        m.last.back() = in.offset;
        if (in.is(instruction_kind::allocation)) {
            blocks.back().sites.push_back(static_cast<counting::site_id>(m.site_offsets.size()));
            m.site_offsets.push_back(in.offset);
        }
    }
    // Handlers: every exception range covering a block (ranges start and end at leaders, so a block is covered
    // whole or not at all), each handler once.
    for (const auto& entry : code.exception_table) {
        const block_id handler = block_of_offset[entry.handler_pc];
        for (block_id b = block_of_offset[entry.start_pc]; b < m.blocks.size() && m.blocks[b].start < entry.end_pc;
             ++b) {
            auto& handlers = blocks[b].handlers;
            if (std::find(handlers.begin(), handlers.end(), handler) == handlers.end()) {
                handlers.push_back(handler);
            }
        }
    }
    const auto exit = static_cast<block_id>(m.blocks.size());
    std::vector<counting::flow_edge> edges;
    const auto add = [&](block_id from, std::uint32_t to_offset, edge_origin origin) {
        edges.push_back(counting::flow_edge{from, to_offset == length ? exit : block_of_offset[to_offset], -1});
        m.edges.push_back(origin);
    };
    for (block_id b = 0; b < m.blocks.size(); ++b) {
        const auto at = find_instruction(instructions, m.last[b]);
        const auto& in = instructions[*at];
        if (in.is(instruction_kind::return_)) {
            edges.push_back(counting::flow_edge{b, exit, -1});
            m.edges.push_back(edge_origin{edge_kind::return_, in.offset, 0});
        } else if (in.is(instruction_kind::switch_)) {
            add(b, in.target, edge_origin{edge_kind::switch_default, in.offset, 0});
            for (std::uint32_t c = 0; c < in.cases.size(); ++c) {
                add(b, in.cases[c].target, edge_origin{edge_kind::switch_case, in.offset, c});
            }
        } else if (in.is(instruction_kind::unconditional_jump)) {
            add(b, in.target, edge_origin{edge_kind::branch, in.offset, 0});
        } else if (!in.is(instruction_kind::athrow)) {
            if (in.is(instruction_kind::conditional_branch)) {
                add(b, in.target, edge_origin{edge_kind::branch, in.offset, 0});
            }
            if (in.offset + in.length >= length) {
                return make_error("the code runs off its end", in.offset);
            }
            add(b, in.offset + in.length, edge_origin{edge_kind::fall_through, in.offset, 0});
        }
    }
    m.graph = counting::control_flow_graph(std::move(blocks), std::move(edges));
    return m;
}

} // namespace ojx::bytecode
