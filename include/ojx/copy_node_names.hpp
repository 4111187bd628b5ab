// How reports name the nodes of a profile's copy section (copy_profile.hpp): the copies view, the replica table's
// "copied from" lines, the HTML page and the copy stacks all say the same names. Not for signal handlers.
#pragma once

#include "ojx/copy_graph.hpp"
#include "ojx/copy_profile.hpp"

#include <cstdio>
#include <string>

namespace ojx {

// A node without its allocation context: "Record.count" (a field the profile names), "Record+8" (one it does
// not), "long[] elements" (every element), "new Record" (fresh references), "static 0x…" ("untracked memory" for
// address 0, where a backend that knows no statics puts every location outside its tracked objects:
// followed_copy_graph.hpp), "(computed on)".
inline std::string copy_location_name(const copy_profile& copies, const copy_node& node) {
    switch (node.kind) {
    case copy_node_kind::field: {
        const std::string& type = copies.sites.at(node.site).type;
        if (node.offset == copy_node::elements) return type + " elements";
        if (const std::string* field = copies.field_name(type, node.offset)) return type + "." + *field;
        return type + "+" + std::to_string(node.offset);
    }
    case copy_node_kind::allocation: return "new " + copies.sites.at(node.site).type;
    case copy_node_kind::static_location: {
        if (node.offset == 0) return "untracked memory";
        char text[32];
        std::snprintf(text, sizeof text, "static 0x%llx", static_cast<unsigned long long>(node.offset));
        return text;
    }
    case copy_node_kind::consumer: break;
    }
    return "(computed on)";
}

// The leaf frame that names an allocation context in the views.
inline std::string copy_site_frame(const copy_profile& copies, context_id site) {
    const copy_site& s = copies.sites.at(site);
    return s.frames.empty() ? std::string("(no frames)") : s.frames.front();
}

// A node as the views name it: its location, and where a site is named, " at " its leaf frame.
inline std::string copy_node_name(const copy_profile& copies, const copy_node& node) {
    std::string name = copy_location_name(copies, node);
    return names_site(node) ? name + " at " + copy_site_frame(copies, node.site) : name;
}

// An allocation context as the site-level views (clone pairs, carrier sites) name it: "Wide at copyWide(…)".
inline std::string copy_site_name(const copy_profile& copies, context_id site) {
    return copies.sites.at(site).type + " at " + copy_site_frame(copies, site);
}

} // namespace ojx
