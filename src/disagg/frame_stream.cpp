#include "disagg/frame_stream.h"

namespace tempered {

Result<Frame, SocketError> read_frame(Socket& socket, Deadline deadline) {
    uint8_t header_bytes[kFrameHeaderBytes];
    auto received = socket.receive_exact(header_bytes, deadline);
    if (!received.ok()) return received.error();
    auto header = decode_frame_header(header_bytes);
    if (!header.ok()) return SocketError{SocketFailure::Failed, header.error().message};
    Frame frame{header->type, std::vector<uint8_t>(header->payload_bytes)};
    received = socket.receive_exact(frame.payload, deadline);
    if (!received.ok()) return received.error();
    return frame;
}

}  // namespace tempered
