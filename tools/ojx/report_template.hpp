// The HTML report's page (tools/ojx/report_template.html: markup, style and script), compiled into the library
// by embed_template.cmake. html_report.cpp fills in its placeholders.
#pragma once

#include <string_view>

namespace ojx::tool {

std::string_view report_template() noexcept;

} // namespace ojx::tool
