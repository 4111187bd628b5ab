#include "copy_stacks.hpp"

#include "ojx/copies_view.hpp"

namespace ojx::tool {

std::vector<copy_stack> copy_stacks(const copy_profile& copies) {
    std::vector<copy_stack> stacks;
    for (const auto& [edge, volume] : copies.graph.edges()) {
        if (!edge.to.is_location()) continue;
        copy_stack stack;
        if (names_site(edge.to)) stack.frames = copies.sites.at(edge.to.site).frames;
        stack.location = "[" + copy_location_name(copies, edge.to) + "]";
        stack.source = "[copied from " + copy_node_name(copies, edge.from) + "]";
        stack.copies = volume.weight;
        stack.bytes = volume.weight * edge.width;
        stack.samples = volume.samples;
        stack.width = edge.width;
        stacks.push_back(std::move(stack));
    }
    return stacks;
}

} // namespace ojx::tool
