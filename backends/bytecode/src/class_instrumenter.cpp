// Instrumenting a class (class_instrumenter.hpp): per method, plan its counters and place one increment snippet
// per counter with the code editor.
#include "ojx/bytecode/class_instrumenter.hpp"
#include "ojx/bytecode/class_reader.hpp"
#include "ojx/bytecode/class_writer.hpp"
#include "ojx/bytecode/code_editor.hpp"
#include "ojx/bytecode/stack_map.hpp"
#include "ojx/counting/chord_plan.hpp"
#include "ojx/counting/edge_frequencies.hpp"
#include "ojx/counting/hot_path_plan.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <utility>

namespace ojx::bytecode {

namespace {

counting::counter_plan plan_for(const counting::control_flow_graph& g, plan_kind kind) {
    const auto frequencies = counting::frequencies_of(g);
    switch (kind) {
    case plan_kind::sites:
        return counting::site_counters{}.plan(g, frequencies);
    case plan_kind::paths:
        return counting::hot_path_counters{}.plan(g, frequencies);
    case plan_kind::edges:
        break;
    }
    return counting::chord_counters{}.plan(g, frequencies);
}

// `prefix; push index; invokestatic hook`: sipush while the index fits, else ldc_w of an Integer constant.
// `max_push`: the most the snippet holds on the stack above what it found.
result<code_snippet> hook_call(constant_pool& pool, std::uint16_t hook_ref, std::uint32_t index,
    std::vector<std::uint8_t> prefix, std::uint16_t max_push) {
    code_snippet snippet;
    snippet.tag = index;
    snippet.max_push = max_push;
    snippet.bytes = std::move(prefix);
    if (index <= 32767) {
        snippet.bytes.insert(snippet.bytes.end(), {static_cast<std::uint8_t>(opcode::sipush),
                                                      static_cast<std::uint8_t>(index >> 8), static_cast<std::uint8_t>(index)});
    } else {
        auto constant = pool.intern(constant_integer{index});
        if (!constant) {
            return constant.error();
        }
        snippet.bytes.insert(snippet.bytes.end(), {static_cast<std::uint8_t>(opcode::ldc_w),
                                                      static_cast<std::uint8_t>(*constant >> 8),
                                                      static_cast<std::uint8_t>(*constant)});
    }
    snippet.bytes.insert(snippet.bytes.end(), {static_cast<std::uint8_t>(opcode::invokestatic),
                                                  static_cast<std::uint8_t>(hook_ref >> 8),
                                                  static_cast<std::uint8_t>(hook_ref)});
    return snippet;
}

// An increment: `push index; invokestatic hit`.
result<code_snippet> increment(constant_pool& pool, std::uint16_t hook_ref, std::uint32_t index) {
    return hook_call(pool, hook_ref, index, {}, 1);
}

// After an array allocation (the array on top): `dup; arraylength; push index; invokestatic add`.
result<code_snippet> add_length(constant_pool& pool, std::uint16_t hook_ref, std::uint32_t index) {
    return hook_call(pool, hook_ref, index,
        {static_cast<std::uint8_t>(opcode::dup), static_cast<std::uint8_t>(opcode::arraylength)}, 2);
}

// The type an allocation instruction makes, as a field descriptor; empty where the constant cannot be read.
std::string allocated_type(const instruction& in, const constant_pool& pool) {
    if (in.op == opcode::newarray) {
        static constexpr char elements[] = "ZCFDBSIJ"; // atype 4..11
        return in.value >= 4 && in.value <= 11 ? std::string{'[', elements[in.value - 4]} : std::string();
    }
    const auto name = pool.class_name(in.index);
    if (!name) {
        return {};
    }
    const bool array = !name->empty() && name->front() == '[';
    switch (in.op) {
    case opcode::new_:
        return "L" + std::string(*name) + ";";
    case opcode::anewarray:
        return array ? "[" + std::string(*name) : "[L" + std::string(*name) + ";";
    default: // multianewarray names the array type itself
        return std::string(*name);
    }
}

// (start offset, line) of every LineNumberTable of `code`, by offset.
std::vector<std::pair<std::uint32_t, std::int32_t>> line_table(const code_attribute& code, const constant_pool& pool) {
    std::vector<std::pair<std::uint32_t, std::int32_t>> lines;
    for (const attribute& a : code.attributes) {
        const auto name = pool.utf8(a.name_index);
        if (!name || *name != "LineNumberTable" || a.info.size() < 2) {
            continue;
        }
        const std::size_t count = (std::size_t{a.info[0]} << 8) | a.info[1];
        for (std::size_t i = 0; i < count && 2 + 4 * i + 4 <= a.info.size(); ++i) {
            const std::uint8_t* e = a.info.data() + 2 + 4 * i;
            lines.emplace_back((std::uint32_t{e[0]} << 8) | e[1], static_cast<std::int32_t>((e[2] << 8) | e[3]));
        }
    }
    std::sort(lines.begin(), lines.end());
    return lines;
}

// Fills the per-site types and lines of a method with a graph.
void describe_sites(method_counting& counting, std::span<const instruction> decoded, const code_attribute& code,
    const constant_pool& pool) {
    const auto lines = line_table(code, pool);
    for (const std::uint32_t offset : counting.site_offsets) {
        const auto at = find_instruction(decoded, offset);
        counting.site_types.push_back(at ? allocated_type(decoded[*at], pool) : std::string());
        const auto after = std::upper_bound(lines.begin(), lines.end(), std::pair{offset, INT32_MAX});
        counting.site_lines.push_back(after == lines.begin() ? -1 : std::prev(after)->second);
    }
}

} // namespace

counter_placement place_counter(const method_graph& m, std::span<const instruction> instructions,
    counting::counter_place where) {
    using kind = counter_placement::kind;
    if (where.where == counting::counter_place::kind::after_site) {
        return counter_placement{kind::after, m.site_offsets.at(where.index), 0};
    }
    const edge_origin& origin = m.edges.at(where.index);
    const counting::flow_edge& edge = m.graph.edge(where.index);
    const instruction& last = instructions[*find_instruction(instructions, origin.instruction)];
    if (origin.kind == edge_kind::return_) {
        return counter_placement{kind::before, origin.instruction, 0};
    }
    if (origin.kind == edge_kind::fall_through) {
        return counter_placement{kind::after, origin.instruction, 0};
    }
    if (last.is(instruction_kind::unconditional_jump) || m.graph.successors(edge.from).size() == 1) {
        return counter_placement{last.falls_through() ? kind::after : kind::before, origin.instruction, 0};
    }
    bool handler = false;
    for (const auto& block : m.graph.blocks()) {
        handler = handler || std::find(block.handlers.begin(), block.handlers.end(), edge.to) != block.handlers.end();
    }
    if (edge.to != m.graph.exit() && edge.to != counting::control_flow_graph::entry() &&
        m.graph.predecessors(edge.to).size() == 1 && !handler) {
        return counter_placement{kind::before, m.blocks[edge.to].start, 0};
    }
    const std::uint32_t slot = origin.kind == edge_kind::switch_case ? origin.case_index + 1 : 0;
    return counter_placement{kind::on_edge, origin.instruction, slot};
}

const char* plan_kind_name(plan_kind kind) noexcept {
    switch (kind) {
    case plan_kind::sites:
        return "sites";
    case plan_kind::paths:
        return "paths";
    case plan_kind::edges:
        break;
    }
    return "edges";
}

result<instrumented_class> instrument_class(std::span<const std::uint8_t> class_bytes, plan_kind kind,
    std::uint32_t first_counter, const counter_hook& hook) {
    auto parsed = read_class(class_bytes);
    if (!parsed) {
        return parsed.error();
    }
    class_file klass = std::move(parsed).value();
    auto class_name = klass.name();
    if (!class_name) {
        return class_name.error();
    }
    const std::string this_name(*class_name);
    const bool hook_class = this_name == hook.owner;
    instrumented_class out;
    out.name = this_name;
    for (const attribute& a : klass.attributes) {
        const auto name = klass.constants.utf8(a.name_index);
        if (name && *name == "SourceFile" && a.info.size() == 2) {
            if (const auto file = klass.constants.utf8(static_cast<std::uint16_t>((a.info[0] << 8) | a.info[1]))) {
                out.source_file = std::string(*file);
            }
        }
    }
    std::optional<std::uint16_t> hook_ref, elements_ref;
    std::uint32_t next = first_counter;
    for (method_info& method : klass.methods) {
        code_attribute* code = method.code();
        if (!code) {
            continue;
        }
        method_counting counting;
        const auto name = klass.name_of(method);
        const auto descriptor = klass.descriptor_of(method);
        counting.name = name ? std::string(*name) : std::string();
        counting.descriptor = descriptor ? std::string(*descriptor) : std::string();
        counting.first_counter = next;
        const auto refuse = [&](std::string why) {
            if (!counting.graph) { // sites are described only with the graph the agent counts them by
                counting.site_offsets.clear();
                counting.site_types.clear();
                counting.site_lines.clear();
            }
            counting.element_sites.clear(); // no counter of its own
            counting.refused = std::move(why);
            out.methods.push_back(std::move(counting));
        };
        if (hook_class) {
            refuse("a method of the hook's own class");
            continue;
        }
        auto decoded = decode_instructions(*code, klass.constants);
        if (!decoded) {
            refuse("decode: " + decoded.error().describe());
            continue;
        }
        auto graph = build_method_graph(*code, *decoded);
        if (!graph) {
            refuse("graph: " + graph.error().describe());
            continue;
        }
        counting::counter_plan plan = plan_for(graph->graph, kind);
        // From the original code: editing relocates its line table.
        counting.site_offsets = graph->site_offsets;
        describe_sites(counting, *decoded, *code, klass.constants);
        for (std::uint32_t site = 0; site < counting.site_types.size(); ++site) {
            if (!counting.site_types[site].empty() && counting.site_types[site].front() == '[') {
                counting.element_sites.push_back(site);
            }
        }
        if (plan.counters().empty() && counting.element_sites.empty()) {
            if (graph->graph.site_count() != 0) {
                // Kept for the agent, which counts these sites where exceptions leave them.
                counting.graph = std::move(graph).value();
                counting.plan = std::move(plan);
            }
            refuse(counting.graph ? "its plan has no counter (its sites are counted where exceptions leave, by the "
                                    "agent)"
                                  : "it has no allocation site");
            continue;
        }
        auto initial = initial_frame(this_name, counting.name, counting.descriptor, method.access_flags);
        if (!initial) {
            refuse(initial.error().describe());
            continue;
        }
        // The hooks' Methodrefs, interned once a class; false (the method refused) where the pool is full.
        const auto intern_hook = [&](std::optional<std::uint16_t>& ref, const std::string& hook_name,
                                     const std::string& hook_descriptor) {
            if (ref) {
                return true;
            }
            auto interned =
                klass.constants.intern_member_ref(constant_tag::methodref, hook.owner, hook_name, hook_descriptor);
            if (!interned) {
                refuse("cannot add the hook " + hook_name + "'s Methodref: " + interned.error().describe());
                return false;
            }
            ref = *interned;
            return true;
        };
        if (!intern_hook(hook_ref, hook.name, hook.descriptor) ||
            (!counting.element_sites.empty() && !intern_hook(elements_ref, hook.elements_name, hook.elements_descriptor))) {
            continue;
        }
        code_editor editor;
        std::optional<std::string> failed;
        for (std::uint32_t k = 0; k < plan.counters().size() && !failed; ++k) {
            auto snippet = increment(klass.constants, *hook_ref, next + k);
            if (!snippet) {
                failed = "cannot add a counter's index: " + snippet.error().describe();
                break;
            }
            const auto at = place_counter(*graph, *decoded, plan.counters()[k].place);
            switch (at.where) {
            case counter_placement::kind::after:
                editor.insert_after(at.instruction, std::move(*snippet));
                break;
            case counter_placement::kind::before:
                editor.insert_before(at.instruction, std::move(*snippet));
                break;
            case counter_placement::kind::on_edge:
                editor.insert_on_edge(at.instruction, at.slot, std::move(*snippet));
                break;
            }
        }
        // After the plan's counters at the same place, so that a throw inside finds them run (the agent's point).
        const auto elements_first = next + static_cast<std::uint32_t>(plan.counters().size());
        for (std::uint32_t j = 0; j < counting.element_sites.size() && !failed; ++j) {
            auto snippet = add_length(klass.constants, *elements_ref, elements_first + j);
            if (!snippet) {
                failed = "cannot add an elements counter's index: " + snippet.error().describe();
                break;
            }
            editor.insert_after(counting.site_offsets[counting.element_sites[j]], std::move(*snippet));
        }
        if (failed) {
            refuse(std::move(*failed));
            continue;
        }
        auto edited = editor.apply(*code, *decoded, klass.constants, *initial);
        if (!edited) {
            refuse(edited.error().describe());
            continue;
        }
        *code = std::move(edited->code);
        counting.new_to_original.reserve(edited->new_to_original.size());
        for (const auto& p : edited->new_to_original) {
            counting.new_to_original.push_back(method_counting::position{p.in_snippet, p.value});
        }
        counting.site_offsets = graph->site_offsets;
        counting.graph = std::move(graph).value();
        counting.plan = std::move(plan);
        next += counting.counters();
        out.methods.push_back(std::move(counting));
    }
    out.counters = next - first_counter;
    if (out.counters == 0) {
        return out;
    }
    auto written = write_class(klass);
    if (!written) {
        return written.error();
    }
    out.bytes = std::move(written).value();
    return out;
}

std::string reason_kind(std::string_view reason) {
    std::string out;
    for (const char c : reason) {
        if (std::isdigit(static_cast<unsigned char>(c))) {
            if (out.empty() || out.back() != 'N') {
                out += 'N';
            }
        } else {
            out += c;
        }
    }
    return out;
}

} // namespace ojx::bytecode
