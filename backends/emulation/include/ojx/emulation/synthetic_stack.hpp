// The emulation backend's context capture: the synthetic program's current call stack, as frames root first.
// Capturing inserts the stack into a calling context tree, as a hardware backend inserts an unwound stack.
#pragma once

#include "ojx/sampler.hpp"
#include "ojx/types.hpp"

#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

namespace ojx::emulation {

class synthetic_stack {
public:
    synthetic_stack() = default;
    synthetic_stack(std::initializer_list<std::uint64_t> frames_root_first) : frames_(frames_root_first) {}

    void push(std::uint64_t frame) { frames_.push_back(frame); }
    void pop() { frames_.pop_back(); }
    std::span<const std::uint64_t> frames() const noexcept { return frames_; }

    template <class Tree>
    context_id capture(Tree& tree) const {
        return tree.insert_path(std::span<const std::uint64_t>(frames_));
    }

private:
    std::vector<std::uint64_t> frames_;
};

} // namespace ojx::emulation
