#include "gzip.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <limits>

namespace ojx::tool {

namespace {

// windowBits 15 (the largest window) + 16: a gzip header and trailer instead of zlib's.
constexpr int gzip_window_bits = 15 + 16;
constexpr int default_memory_level = 8;

std::string zlib_error(const char* what, const z_stream& stream, int code) {
    return std::string("gzip: ") + what + " failed: " + (stream.msg != nullptr ? stream.msg : zError(code));
}

} // namespace

std::optional<std::string> write_gzip(std::ostream& out, std::string_view bytes) {
    z_stream stream{};
    int code = deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, gzip_window_bits, default_memory_level,
                            Z_DEFAULT_STRATEGY);
    if (code != Z_OK) return zlib_error("deflateInit2", stream, code);

    // zlib's z_stream is not const-correct: next_in is never written through.
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    std::size_t remaining = bytes.size();
    std::array<char, 64 * 1024> buffer;
    do {
        // avail_in is 32 bits wide: feed larger inputs in pieces.
        if (stream.avail_in == 0 && remaining > 0) {
            stream.avail_in = static_cast<uInt>(std::min<std::size_t>(remaining, std::numeric_limits<uInt>::max()));
            remaining -= stream.avail_in;
        }
        stream.next_out = reinterpret_cast<Bytef*>(buffer.data());
        stream.avail_out = static_cast<uInt>(buffer.size());
        code = deflate(&stream, remaining == 0 ? Z_FINISH : Z_NO_FLUSH);
        if (code == Z_STREAM_ERROR) {
            std::string error = zlib_error("deflate", stream, code);
            deflateEnd(&stream);
            return error;
        }
        out.write(buffer.data(), static_cast<std::streamsize>(buffer.size() - stream.avail_out));
    } while (code != Z_STREAM_END);
    deflateEnd(&stream);
    if (!out) return "gzip: write failed";
    return std::nullopt;
}

} // namespace ojx::tool
