// The replay backend's memory: what the profiler reads while it handles an event (the window it digests around a
// compared word) is what the recording profiler read then, carried by the memory-contents records just before the
// event. A read is answered only from those records, never from older ones: bytes read for an earlier event may
// have changed since, and a stale answer would be a silent wrong comparison; a read they do not cover fails (the
// profiler counts it as unreadable), as the recorded read had failed — failures are not recorded.
#pragma once

#include "ojx/trace_format.hpp"
#include "ojx/types.hpp"

#include <cstddef>
#include <cstring>
#include <vector>

namespace ojx::replay {

class replay_memory {
public:
    // What the profiler read for the next event. The bytes must stay valid until event_delivered (they point
    // into the trace).
    void add(const memory_contents_event& contents) { contents_.push_back(contents); }
    // The event was delivered: its bytes no longer describe memory.
    void event_delivered() { contents_.clear(); }

    bool read(address where, void* out, std::size_t size) const noexcept {
        for (const memory_contents_event& c : contents_) {
            if (where >= c.where && size <= c.bytes.size() && where - c.where <= c.bytes.size() - size) {
                if (size != 0) std::memcpy(out, c.bytes.data() + (where - c.where), size);
                return true;
            }
        }
        return false;
    }

private:
    std::vector<memory_contents_event> contents_;
};

} // namespace ojx::replay
