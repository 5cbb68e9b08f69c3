#include "disagg/frame_stream.h"

namespace tempered {

Result<Frame, SocketError> read_frame(Socket& socket, Deadline deadline, uint32_t max_payload) {
    uint8_t header_bytes[kFrameHeaderBytes];
    auto received = socket.receive_exact(header_bytes, deadline);
    if (!received.ok()) return received.error();
    auto header = decode_frame_header(header_bytes);
    if (!header.ok()) return SocketError{SocketFailure::Failed, header.error().message};
    if (header->payload_bytes > max_payload)
        return SocketError{SocketFailure::Failed, std::string("a ") + frame_type_name(header->type) + " frame of " +
                                                      std::to_string(header->payload_bytes) + " bytes where at most " +
                                                      std::to_string(max_payload) + " were expected"};
    Frame frame{header->type, std::vector<uint8_t>(header->payload_bytes)};
    received = socket.receive_exact(frame.payload, deadline);
    if (!received.ok()) return received.error();
    return frame;
}

}  // namespace tempered
