// Text from outside (a peer process's answer) made safe to print on a terminal: printable ASCII stays, every
// other byte becomes \xNN. No escape sequence, control character or 8-bit control (0x9b is CSI to some
// terminals) reaches the terminal of whoever runs ojx, who may be root.
#pragma once

#include <string>
#include <string_view>

namespace ojx::tool {

std::string printable(std::string_view text);

} // namespace ojx::tool
