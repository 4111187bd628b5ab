#include "copy_stacks.hpp"

#include "ojx/apportioned.hpp"
#include "ojx/copies_view.hpp"

#include <algorithm>
#include <cstddef>
#include <utility>

namespace ojx::tool {
namespace {

// A stack of `edge`'s copies with its destination frame `location`, valued at `copies` of `samples`; its code
// frames are the caller's.
copy_stack edge_stack(const copy_profile& copies, const copy_edge& edge, std::string location,
                      std::uint64_t estimated, std::uint64_t samples) {
    copy_stack stack;
    stack.location = std::move(location);
    stack.source = "[copied from " + copy_node_name(copies, edge.from) + "]";
    stack.copies = estimated;
    stack.bytes = estimated * edge.width;
    stack.samples = samples;
    stack.width = edge.width;
    return stack;
}

// One share of an edge's samples: the code that took them, as frames (leaf first) or a frame standing for it.
struct code_share {
    std::vector<std::string> frames;
    std::string code;
    std::uint64_t samples = 0;
};

// `edge`'s samples by the code that took them, in the order copying_code_stacks gives; shares of none left out.
std::vector<code_share> code_shares(const copy_profile& copies, const copy_edge& edge, std::uint64_t samples) {
    const edge_code& code = copies.code.of(edge);
    std::vector<code_share> shares;
    for (const auto& [context, taken] : code.contexts) {
        const std::vector<std::string>& frames = copies.code_contexts.at(context).frames;
        shares.push_back({frames, frames.empty() ? "(no frames)" : "", taken});
    }
    // The section never counts more code samples than the edge's (copy_profile.hpp's invariant).
    shares.push_back({{}, "[other code]", code.other});
    shares.push_back({{}, "[code not recorded]", samples - code.samples()});
    std::erase_if(shares, [](const code_share& s) { return s.samples == 0; });
    return shares;
}

} // namespace

std::vector<copy_stack> copy_stacks(const copy_profile& copies) {
    std::vector<copy_stack> stacks;
    for (const auto& [edge, volume] : copies.graph.edges()) {
        if (!edge.to.is_location()) continue;
        copy_stack stack = edge_stack(copies, edge, "[" + copy_location_name(copies, edge.to) + "]", volume.weight,
                                      volume.samples);
        if (names_site(edge.to)) stack.frames = copies.sites.at(edge.to.site).frames;
        stacks.push_back(std::move(stack));
    }
    return stacks;
}

std::vector<copy_stack> copying_code_stacks(const copy_profile& copies) {
    std::vector<copy_stack> stacks;
    for (const auto& [edge, volume] : copies.graph.edges()) {
        if (!edge.to.is_location()) continue;
        std::vector<code_share> shares = code_shares(copies, edge, volume.samples);
        std::vector<std::uint64_t> samples;
        for (const code_share& share : shares) samples.push_back(share.samples);
        const std::vector<std::uint64_t> estimated = apportioned(volume.weight, samples);
        const std::string into = "[into " + copy_node_name(copies, edge.to) + "]";
        for (std::size_t i = 0; i < shares.size(); ++i) {
            copy_stack stack = edge_stack(copies, edge, into, estimated[i], shares[i].samples);
            stack.frames = std::move(shares[i].frames);
            stack.code = std::move(shares[i].code);
            stacks.push_back(std::move(stack));
        }
    }
    return stacks;
}

} // namespace ojx::tool
