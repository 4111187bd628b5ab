// Code insertion and relocation (code_editor.hpp): lay out the new code until every goto fits (widening those
// that do not), then emit it and rewrite every table that names offsets through the label and position maps.
#include "ojx/bytecode/code_editor.hpp"
#include "ojx/bytecode/byte_reader.hpp"
#include "ojx/bytecode/byte_writer.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace ojx::bytecode {

namespace {

constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();

std::size_t snippets_size(const std::vector<code_snippet>* snippets) {
    std::size_t size = 0;
    if (snippets) {
        for (const auto& s : *snippets) {
            size += s.bytes.size();
        }
    }
    return size;
}

template <class Map, class Key>
const std::vector<code_snippet>* find_in(const Map& map, const Key& key) {
    const auto found = map.find(key);
    return found == map.end() ? nullptr : &found->second;
}

bool fits_s2(std::int64_t delta) { return delta >= -32768 && delta <= 32767; }

std::uint32_t switch_padding(std::uint32_t position) { return (4 - ((position + 1) % 4)) % 4; }

class rewriter {
public:
    rewriter(const code_attribute& code, std::span<const instruction> instructions, constant_pool& pool,
        const stack_frame& initial, const std::map<std::uint32_t, std::vector<code_snippet>>& after,
        const std::map<std::uint32_t, std::vector<code_snippet>>& before,
        const std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<code_snippet>>& on_edge)
        : code_(code), in_(instructions), pool_(pool), initial_(initial), after_(after), before_(before),
          on_edge_(on_edge) {}

    result<edited_code> run() {
        if (auto failed = check()) {
            return *failed;
        }
        if (auto failed = lay_out()) {
            return *failed;
        }
        edited_code out;
        out.code.name_index = code_.name_index;
        out.code.max_locals = code_.max_locals;
        std::size_t push = 0;
        const auto widest = [&](const auto& map) {
            for (const auto& [key, list] : map) {
                for (const auto& s : list) {
                    push = std::max<std::size_t>(push, s.max_push);
                }
            }
        };
        widest(after_);
        widest(before_);
        widest(on_edge_);
        if (code_.max_stack + push > 0xffff) {
            return make_error("max_stack would exceed 65535");
        }
        out.code.max_stack = static_cast<std::uint16_t>(code_.max_stack + push);
        emit(out);
        for (const auto& entry : code_.exception_table) {
            exception_entry moved = entry;
            const auto start = label_at(entry.start_pc), end = end_at(entry.end_pc), handler = label_at(entry.handler_pc);
            if (start == none || end == none || handler == none) {
                return make_error("an exception table entry does not fall on instruction boundaries", entry.start_pc);
            }
            moved.start_pc = static_cast<std::uint16_t>(start);
            moved.end_pc = static_cast<std::uint16_t>(end);
            moved.handler_pc = static_cast<std::uint16_t>(handler);
            out.code.exception_table.push_back(moved);
        }
        for (const attribute& nested : code_.attributes) {
            const auto name = pool_.utf8(nested.name_index);
            const std::string_view kind = name ? *name : std::string_view{};
            if (kind == "RuntimeVisibleTypeAnnotations" || kind == "RuntimeInvisibleTypeAnnotations") {
                // Their targets name offsets inside annotations this library does not parse; dropping them loses
                // only what tools read (the JVM exposes no code-level type annotation).
                continue;
            }
            attribute moved = nested;
            if (kind == "LineNumberTable") {
                auto rewritten = rewrite_line_numbers(nested.info);
                if (!rewritten) {
                    return rewritten.error();
                }
                moved.info = std::move(*rewritten);
            } else if (kind == "LocalVariableTable" || kind == "LocalVariableTypeTable") {
                auto rewritten = rewrite_local_variables(nested.info, kind);
                if (!rewritten) {
                    return rewritten.error();
                }
                moved.info = std::move(*rewritten);
            } else if (kind == "StackMapTable") {
                auto rewritten = rewrite_stack_map(nested.info);
                if (!rewritten) {
                    return rewritten.error();
                }
                moved.info = std::move(*rewritten);
            }
            out.code.attributes.push_back(std::move(moved));
        }
        return out;
    }

private:
    struct edge_block {
        std::uint32_t branch = 0; // index in in_ of the branching instruction
        std::uint32_t slot = 0;
        const std::vector<code_snippet>* snippets = nullptr;
        std::uint32_t start = 0;
    };

    std::optional<error> check() {
        const auto length = static_cast<std::uint32_t>(code_.code.size());
        index_.assign(length + std::size_t{1}, none);
        for (std::size_t i = 0; i < in_.size(); ++i) {
            const auto& in = in_[i];
            if (in.is(instruction_kind::subroutine)) {
                return make_error("jsr/ret subroutines are not rewritten", in.offset);
            }
            if (in.offset >= length) {
                return make_error("an instruction lies outside the code", in.offset);
            }
            index_[in.offset] = static_cast<std::uint32_t>(i);
        }
        for (const auto& [offset, list] : before_) {
            if (offset >= length || index_[offset] == none) {
                return make_error("insertion before an offset that starts no instruction", offset);
            }
        }
        for (const auto& [offset, list] : after_) {
            if (offset >= length || index_[offset] == none) {
                return make_error("insertion after an offset that starts no instruction", offset);
            }
            if (!in_[index_[offset]].falls_through()) {
                return make_error("insertion after an instruction that does not fall through", offset);
            }
        }
        for (const auto& [key, list] : on_edge_) {
            const auto [offset, slot] = key;
            if (offset >= length || index_[offset] == none) {
                return make_error("insertion on an edge of an offset that starts no instruction", offset);
            }
            const auto& in = in_[index_[offset]];
            if (!in.has_targets() || slot > in.cases.size()) {
                return make_error("insertion on branch target " + std::to_string(slot) +
                                      ", which the instruction does not have",
                    offset);
            }
            edges_.push_back(edge_block{index_[offset], slot, &list, 0});
        }
        return std::nullopt;
    }

    std::uint32_t new_length(std::size_t i, std::uint32_t position) const {
        const auto& in = in_[i];
        if (in.op == opcode::goto_) {
            return widened_[i] ? 5 : 3;
        }
        if (in.op == opcode::tableswitch) {
            return 1 + switch_padding(position) + 12 + 4 * static_cast<std::uint32_t>(in.cases.size());
        }
        if (in.op == opcode::lookupswitch) {
            return 1 + switch_padding(position) + 8 + 8 * static_cast<std::uint32_t>(in.cases.size());
        }
        return in.length;
    }

    // Where slot `slot` of instruction i now leads: a split edge's block, or the target's label.
    std::uint32_t target_of(std::size_t i, std::uint32_t slot) const {
        const auto found = edge_of_.find({static_cast<std::uint32_t>(i), slot});
        if (found != edge_of_.end()) {
            return edges_[found->second].start;
        }
        const auto& in = in_[i];
        const std::uint32_t original = slot == 0 ? in.target : in.cases[slot - 1].target;
        return label_[index_[original]];
    }

    std::optional<error> lay_out() {
        widened_.assign(in_.size(), false);
        label_.assign(in_.size(), 0);
        position_.assign(in_.size(), 0);
        for (std::size_t e = 0; e < edges_.size(); ++e) {
            edge_of_[{edges_[e].branch, edges_[e].slot}] = e;
        }
        for (;;) {
            std::size_t at = 0;
            for (std::size_t i = 0; i < in_.size(); ++i) {
                label_[i] = static_cast<std::uint32_t>(at);
                at += snippets_size(find_in(before_, in_[i].offset));
                position_[i] = static_cast<std::uint32_t>(at);
                at += new_length(i, static_cast<std::uint32_t>(at));
                at += snippets_size(find_in(after_, in_[i].offset));
                if (at > code_attribute::max_code_length) {
                    return too_long(at);
                }
            }
            main_end_ = static_cast<std::uint32_t>(at);
            for (auto& edge : edges_) {
                edge.start = static_cast<std::uint32_t>(at);
                at += snippets_size(edge.snippets) + 5;
            }
            if (at > code_attribute::max_code_length) {
                return too_long(at);
            }
            total_ = static_cast<std::uint32_t>(at);
            bool changed = false;
            for (std::size_t i = 0; i < in_.size(); ++i) {
                if (in_[i].op == opcode::goto_ && !widened_[i] &&
                    !fits_s2(std::int64_t{target_of(i, 0)} - position_[i])) {
                    widened_[i] = true;
                    changed = true;
                }
            }
            if (!changed) {
                break;
            }
        }
        for (std::size_t i = 0; i < in_.size(); ++i) {
            if (in_[i].is(instruction_kind::conditional_branch) &&
                !fits_s2(std::int64_t{target_of(i, 0)} - position_[i])) {
                return make_error("the conditional branch's offset would not fit 16 bits after insertion",
                    in_[i].offset);
            }
        }
        return std::nullopt;
    }

    static error too_long(std::size_t at) {
        return make_error("the code would grow past 65535 bytes (" + std::to_string(at) + " or more)");
    }

    void put(std::vector<std::uint8_t>& bytes, std::vector<code_position>& where, std::span<const std::uint8_t> data,
        code_position position) {
        bytes.insert(bytes.end(), data.begin(), data.end());
        where.insert(where.end(), data.size(), position);
    }

    void put_snippets(std::vector<std::uint8_t>& bytes, std::vector<code_position>& where,
        const std::vector<code_snippet>* snippets) {
        if (!snippets) {
            return;
        }
        for (const auto& s : *snippets) {
            put(bytes, where, s.bytes, code_position{true, s.tag});
        }
    }

    void emit(edited_code& out) {
        auto& bytes = out.code.code;
        auto& where = out.new_to_original;
        bytes.reserve(total_);
        where.reserve(total_);
        out.original_to_new.assign(code_.code.size(), none);
        for (std::size_t i = 0; i < in_.size(); ++i) {
            const auto& in = in_[i];
            put_snippets(bytes, where, find_in(before_, in.offset));
            out.original_to_new[in.offset] = static_cast<std::uint32_t>(bytes.size());
            const code_position self{false, in.offset};
            const std::int64_t here = position_[i];
            byte_writer w;
            if (in.is(instruction_kind::conditional_branch) || in.op == opcode::goto_ || in.op == opcode::goto_w) {
                const std::int64_t delta = std::int64_t{target_of(i, 0)} - here;
                if (in.op == opcode::goto_w || (in.op == opcode::goto_ && widened_[i])) {
                    w.u1(static_cast<std::uint8_t>(opcode::goto_w));
                    w.u4(static_cast<std::uint32_t>(static_cast<std::int32_t>(delta)));
                } else {
                    w.u1(static_cast<std::uint8_t>(in.op));
                    w.u2(static_cast<std::uint16_t>(static_cast<std::int16_t>(delta)));
                }
            } else if (in.is(instruction_kind::switch_)) {
                w.u1(static_cast<std::uint8_t>(in.op));
                for (std::uint32_t p = switch_padding(position_[i]); p > 0; --p) {
                    w.u1(0);
                }
                const auto relative = [&](std::uint32_t slot) {
                    return static_cast<std::uint32_t>(static_cast<std::int32_t>(std::int64_t{target_of(i, slot)} - here));
                };
                w.u4(relative(0));
                if (in.op == opcode::tableswitch) {
                    w.u4(static_cast<std::uint32_t>(in.cases.front().key));
                    w.u4(static_cast<std::uint32_t>(in.cases.back().key));
                    for (std::uint32_t c = 0; c < in.cases.size(); ++c) {
                        w.u4(relative(c + 1));
                    }
                } else {
                    w.u4(static_cast<std::uint32_t>(in.cases.size()));
                    for (std::uint32_t c = 0; c < in.cases.size(); ++c) {
                        w.u4(static_cast<std::uint32_t>(in.cases[c].key));
                        w.u4(relative(c + 1));
                    }
                }
            } else {
                w.bytes(std::span<const std::uint8_t>(code_.code).subspan(in.offset, in.length));
            }
            put(bytes, where, w.data(), self);
            put_snippets(bytes, where, find_in(after_, in.offset));
        }
        for (const auto& edge : edges_) {
            put_snippets(bytes, where, edge.snippets);
            const auto& in = in_[edge.branch];
            const std::uint32_t original = edge.slot == 0 ? in.target : in.cases[edge.slot - 1].target;
            const std::int64_t delta = std::int64_t{label_[index_[original]]} - static_cast<std::int64_t>(bytes.size());
            byte_writer w;
            w.u1(static_cast<std::uint8_t>(opcode::goto_w));
            w.u4(static_cast<std::uint32_t>(static_cast<std::int32_t>(delta)));
            const std::uint32_t tag = edge.snippets->empty() ? 0 : edge.snippets->back().tag;
            put(bytes, where, w.data(), code_position{true, tag});
        }
    }

    // The label of the instruction at an original offset, or none when no instruction starts there.
    std::uint32_t label_at(std::uint32_t offset) const {
        return offset < code_.code.size() && index_[offset] != none ? label_[index_[offset]] : none;
    }
    // As label_at, for the end of a range: the code's end maps to the end of the relocated original code.
    std::uint32_t end_at(std::uint32_t offset) const {
        return offset == code_.code.size() ? main_end_ : label_at(offset);
    }

    result<std::vector<std::uint8_t>> rewrite_line_numbers(const std::vector<std::uint8_t>& info) const {
        byte_reader r(info);
        byte_writer w;
        std::uint16_t count = 0;
        if (!r.read_u2(count)) {
            return make_error("LineNumberTable: truncated");
        }
        w.u2(count);
        for (std::uint16_t i = 0; i < count; ++i) {
            std::uint16_t start = 0, line = 0;
            if (!r.read_u2(start) || !r.read_u2(line)) {
                return make_error("LineNumberTable: truncated");
            }
            const auto moved = label_at(start);
            if (moved == none) {
                return make_error("LineNumberTable: start_pc does not start an instruction", start);
            }
            w.u2(static_cast<std::uint16_t>(moved));
            w.u2(line);
        }
        if (!r.at_end()) {
            return make_error("LineNumberTable: bytes after its entries");
        }
        return w.take();
    }

    result<std::vector<std::uint8_t>> rewrite_local_variables(const std::vector<std::uint8_t>& info,
        std::string_view kind) const {
        byte_reader r(info);
        byte_writer w;
        std::uint16_t count = 0;
        if (!r.read_u2(count)) {
            return make_error(std::string(kind) + ": truncated");
        }
        w.u2(count);
        for (std::uint16_t i = 0; i < count; ++i) {
            std::uint16_t start = 0, length = 0, name = 0, descriptor = 0, slot = 0;
            if (!r.read_u2(start) || !r.read_u2(length) || !r.read_u2(name) || !r.read_u2(descriptor) ||
                !r.read_u2(slot)) {
                return make_error(std::string(kind) + ": truncated");
            }
            const auto from = label_at(start);
            const auto to = end_at(std::uint32_t{start} + length);
            if (from == none || to == none || to < from) {
                return make_error(std::string(kind) + ": a range does not fall on instruction boundaries", start);
            }
            w.u2(static_cast<std::uint16_t>(from));
            w.u2(static_cast<std::uint16_t>(to - from));
            w.u2(name);
            w.u2(descriptor);
            w.u2(slot);
        }
        if (!r.at_end()) {
            return make_error(std::string(kind) + ": bytes after its entries");
        }
        return w.take();
    }

    std::optional<error> move_types(std::vector<verification_type>& types) const {
        for (auto& type : types) {
            if (type.tag != verification_tag::uninitialized) {
                continue;
            }
            if (type.offset >= code_.code.size() || index_[type.offset] == none) {
                return make_error("StackMapTable: an Uninitialized type names an offset that starts no instruction",
                    type.offset);
            }
            type.offset = position_[index_[type.offset]];
        }
        return std::nullopt;
    }

    static bool holds_uninitialized(const stack_frame& frame) {
        const auto uninitialized = [](const verification_type& t) {
            return t.tag == verification_tag::uninitialized || t.tag == verification_tag::uninitialized_this;
        };
        return std::any_of(frame.locals.begin(), frame.locals.end(), uninitialized) ||
               std::any_of(frame.stack.begin(), frame.stack.end(), uninitialized);
    }

    result<std::vector<std::uint8_t>> rewrite_stack_map(const std::vector<std::uint8_t>& info) const {
        auto decoded = decode_stack_map(info, initial_, pool_, static_cast<std::uint32_t>(code_.code.size()));
        if (!decoded) {
            return decoded.error();
        }
        std::vector<stack_frame> frames;
        frames.reserve(decoded->size() + edges_.size());
        std::map<std::uint32_t, std::size_t> frame_at; // original offset -> position in *decoded
        for (std::size_t f = 0; f < decoded->size(); ++f) {
            stack_frame frame = (*decoded)[f];
            frame_at[frame.offset] = f;
            const auto moved = label_at(frame.offset);
            if (moved == none) {
                return make_error("StackMapTable: a frame's offset starts no instruction", frame.offset);
            }
            frame.offset = moved;
            if (auto failed = move_types(frame.locals)) {
                return *failed;
            }
            if (auto failed = move_types(frame.stack)) {
                return *failed;
            }
            frames.push_back(std::move(frame));
        }
        for (const auto& edge : edges_) {
            const auto& in = in_[edge.branch];
            const std::uint32_t original = edge.slot == 0 ? in.target : in.cases[edge.slot - 1].target;
            const auto found = frame_at.find(original);
            if (found == frame_at.end()) {
                return make_error("StackMapTable: no frame at the target of a split edge", original);
            }
            stack_frame frame = frames[found->second];
            if (holds_uninitialized(frame)) {
                return make_error("a split edge's target frame holds an uninitialized object, which the jump back "
                                  "from the appended block may not carry",
                    original);
            }
            frame.offset = edge.start;
            frames.push_back(std::move(frame));
        }
        return encode_stack_map(frames, initial_, pool_);
    }

    const code_attribute& code_;
    std::span<const instruction> in_;
    constant_pool& pool_;
    const stack_frame& initial_;
    const std::map<std::uint32_t, std::vector<code_snippet>>& after_;
    const std::map<std::uint32_t, std::vector<code_snippet>>& before_;
    const std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<code_snippet>>& on_edge_;

    std::vector<std::uint32_t> index_; // original offset -> position in in_, or none
    std::vector<edge_block> edges_;    // in (instruction offset, slot) order
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::size_t> edge_of_; // (position in in_, slot) -> edge
    std::vector<bool> widened_;
    std::vector<std::uint32_t> label_;    // per instruction: where jumps to it land
    std::vector<std::uint32_t> position_; // per instruction: where it starts
    std::uint32_t main_end_ = 0;
    std::uint32_t total_ = 0;
};

} // namespace

result<edited_code> code_editor::apply(const code_attribute& code, std::span<const instruction> instructions,
    constant_pool& pool, const stack_frame& initial) const {
    return rewriter(code, instructions, pool, initial, after_, before_, on_edge_).run();
}

} // namespace ojx::bytecode
