// A relocation's survivors written against the previous relocation's (docs/trace-format.md, "kept survivors").
//
// After a young collection most tracked objects are old ones that did not move, and listing every survivor at
// every collection (a relocated-object record each, ~12 bytes) made relocations most of a G1 trace. So the
// recorder refers to the previous relocation's survivors, in their order: a run of them that stay where they are
// is one record (kept survivors: how many of the previous survivors to pass over, how many stay), one that moved
// is one short record (moved survivor: how many to pass over, the distance); only the others — new objects, and
// any whose size or profiler record changed — are written in full. Reading expands them back into exactly the list
// the profiler was given, in its order, so a replay gives the same profile.
//
// The reference crosses blocks (it is meaning, like a free naming an earlier allocation, not compaction state), so a
// lost record breaks it: the reader forgets the previous survivors at an events-lost record, and the recorder does
// not refer to a relocation during or after whose writing a record was lost.
#pragma once

#include "ojx/trace_format.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ojx {

// The recorder's side. Keeps the previous survivors: allocates, not signal-safe.
class survivor_encoder {
public:
    // Appends the records of `survivors` (each with from, to, size and info, as profiler::relocated_object) through
    // `append` (called with relocated_object_event, kept_survivors_event or moved_survivor_event), referring to
    // the previous relocation's survivors when `can_refer`.
    template <class Relocated, class Append>
    void encode(std::span<const Relocated> survivors, bool can_refer, Append&& append) {
        std::size_t cursor = 0; // the reader's position in previous_ after the records written so far
        std::size_t run_start = 0, run_length = 0; // kept survivors not written yet: previous_[run_start, +length)
        std::size_t search = 0; // previous survivors before it are matched or passed over
        const auto flush_run = [&] {
            if (run_length == 0) return;
            append(kept_survivors_event{run_start - cursor, run_length});
            cursor = run_start + run_length;
            run_length = 0;
        };
        current_.clear();
        for (const Relocated& s : survivors) {
            current_.push_back(relocated_object_event{s.from, s.to, s.size, s.info});
            const std::optional<std::size_t> j = can_refer ? find_previous(s, search) : std::nullopt;
            if (!j) {
                flush_run();
                append(current_.back());
                continue;
            }
            search = *j + 1;
            if (s.from == s.to) {
                if (run_length != 0 && *j == run_start + run_length) {
                    ++run_length;
                } else {
                    flush_run();
                    run_start = *j;
                    run_length = 1;
                }
                continue;
            }
            flush_run();
            append(moved_survivor_event{*j - cursor, s.to - s.from});
            cursor = *j + 1;
        }
        flush_run();
        previous_.swap(current_);
    }

private:
    // The previous survivor at or after `from` that is `s` as it was (same serial, then where it was, its size and
    // record), or nothing. Survivors keep their order (the JVM agent's registry), so the search moves forward only.
    template <class Relocated>
    std::optional<std::size_t> find_previous(const Relocated& s, std::size_t from) const {
        for (std::size_t j = from; j < previous_.size(); ++j) {
            const relocated_object_event& p = previous_[j];
            if (p.object.serial != s.info.serial) continue;
            if (p.to == s.from && p.size == s.size && p.object == s.info) return j;
            return std::nullopt;
        }
        return std::nullopt;
    }

    std::vector<relocated_object_event> previous_; // as the reader has them: `to` is where each is now
    std::vector<relocated_object_event> current_;
};

// The reader's side: expands the records of a relocation into its survivors, in order.
class survivor_decoder {
public:
    // Nothing, or what is wrong with the record (a reference past the previous survivors).
    void add(const relocated_object_event& object) { current_.push_back(object); }
    std::optional<std::string> add(const kept_survivors_event& kept) {
        if (kept.skip > previous_.size() - cursor_ || kept.count > previous_.size() - cursor_ - kept.skip)
            return past_the_end(kept.skip + kept.count);
        cursor_ += kept.skip;
        for (std::uint64_t i = 0; i < kept.count; ++i) {
            relocated_object_event object = previous_[cursor_++];
            object.from = object.to;
            current_.push_back(object);
        }
        return std::nullopt;
    }
    std::optional<std::string> add(const moved_survivor_event& moved) {
        if (moved.skip >= previous_.size() - cursor_) return past_the_end(moved.skip + 1);
        cursor_ += moved.skip;
        relocated_object_event object = previous_[cursor_++];
        object.from = object.to;
        object.to = object.from + moved.distance;
        current_.push_back(object);
        return std::nullopt;
    }

    // The survivors of the relocation being read (at its relocation record: all of them).
    const std::vector<relocated_object_event>& survivors() const noexcept { return current_; }
    // At the relocation record, after the survivors are used: they become the previous ones.
    void finish_relocation() {
        previous_.swap(current_);
        current_.clear();
        cursor_ = 0;
    }
    // At an events-lost record: the previous survivors may be incomplete.
    void forget_previous() {
        previous_.clear();
        cursor_ = 0;
    }

private:
    std::string past_the_end(std::uint64_t reaching) const {
        return "refers to survivor " + std::to_string(cursor_ + reaching) + " of the previous relocation, which had " +
               std::to_string(previous_.size());
    }

    std::vector<relocated_object_event> previous_;
    std::vector<relocated_object_event> current_;
    std::size_t cursor_ = 0;
};

} // namespace ojx
