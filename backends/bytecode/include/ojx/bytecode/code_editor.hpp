// Inserting straight-line snippets into a method's code and relocating everything that names a code offset: branch
// and switch targets, the exception table, LineNumberTable, LocalVariableTable, LocalVariableTypeTable and
// StackMapTable (Uninitialized types included). The instrumenter (class_instrumenter.hpp) inserts its counter
// increments with it.
//
// Each original instruction keeps a *label*, where jumps to it land: the start of the snippets inserted before it,
// or the instruction itself. Three insertions:
//   - after an instruction that falls through: its snippets run between it and the next instruction's label, so
//     jumps to the next instruction skip them;
//   - before an instruction: its snippets start its label, so jumps to it (and its frame) move to them;
//   - on one branch or switch target: that target alone is redirected to a block appended after the code,
//     `snippets; goto_w target`, whose frame is the target's.
// Several snippets at one place run in the order they were inserted.
//
// What cannot be rewritten is refused, as a result error naming why: a conditional branch whose offset would not
// fit 16 bits (goto is widened to goto_w instead), code that would exceed 65535 bytes, jsr/ret, a StackMapTable
// without the frame a split edge needs (or whose frame holds an object still uninitialized, which a backward jump
// may not carry), table entries that do not fall on instruction boundaries, and a max_stack past 65535.
#pragma once

#include "ojx/bytecode/code_attribute.hpp"
#include "ojx/bytecode/constant_pool.hpp"
#include "ojx/bytecode/instructions.hpp"
#include "ojx/bytecode/result.hpp"
#include "ojx/bytecode/stack_map.hpp"

#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

namespace ojx::bytecode {

// Straight-line code inserted as it is: no branch, switch, return or throw, no wide-sensitive alignment, and it
// must leave the stack and locals as it found them.
struct code_snippet {
    std::vector<std::uint8_t> bytes;
    std::uint16_t max_push = 0; // the most stack slots it uses above what it finds (raises max_stack)
    std::uint32_t tag = 0;      // the caller's name for it, reported in the position map
};

// What lies at a new code offset: an original instruction (value = its original offset), or a snippet (value =
// its tag). The goto_w ending a split edge's block belongs to the last snippet of that block.
struct code_position {
    bool in_snippet = false;
    std::uint32_t value = 0;
    friend bool operator==(const code_position&, const code_position&) = default;
};

struct edited_code {
    code_attribute code;                        // the rewritten attribute
    std::vector<code_position> new_to_original; // indexed by new offset; meaningful at instruction starts
    std::vector<std::uint32_t> original_to_new; // indexed by original offset: where that instruction now starts
                                                // (meaningful at original instruction starts)
};

class code_editor {
public:
    // Which branch target of an instruction: 0 is the branch target or a switch's default, 1 + c a switch's case c.
    using target_slot = std::uint32_t;

    void insert_after(std::uint32_t instruction, code_snippet snippet) {
        after_[instruction].push_back(std::move(snippet));
    }
    void insert_before(std::uint32_t instruction, code_snippet snippet) {
        before_[instruction].push_back(std::move(snippet));
    }
    void insert_on_edge(std::uint32_t branch_instruction, target_slot slot, code_snippet snippet) {
        on_edge_[{branch_instruction, slot}].push_back(std::move(snippet));
    }
    bool empty() const noexcept { return after_.empty() && before_.empty() && on_edge_.empty(); }

    // Rewrites `code`, decoded as `instructions`. `initial` is the method's implicit first frame (initial_frame),
    // needed when the code has a StackMapTable; `pool` gains Class constants only where a frame's encoding needs
    // one that is missing. Fails, naming why, on an insertion at an offset that starts no instruction (or after
    // one that does not fall through, or on a target it does not have) and on the refusals above.
    result<edited_code> apply(const code_attribute& code, std::span<const instruction> instructions,
        constant_pool& pool, const stack_frame& initial) const;

private:
    std::map<std::uint32_t, std::vector<code_snippet>> after_;
    std::map<std::uint32_t, std::vector<code_snippet>> before_;
    std::map<std::pair<std::uint32_t, target_slot>, std::vector<code_snippet>> on_edge_;
};

} // namespace ojx::bytecode
