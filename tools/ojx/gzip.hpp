// gzip (RFC 1952) compression of bytes into a stream, for output formats that are gzipped on disk (pprof).
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace ojx::tool {

// Writes `bytes` gzipped to `out`. Returns the error, if any (zlib's, or "write failed" from the stream).
std::optional<std::string> write_gzip(std::ostream& out, std::string_view bytes);

} // namespace ojx::tool
