// Frames over a Socket: a header checked before its payload is allocated, then the payload.
#pragma once

#include <cstdint>
#include <vector>

#include "disagg/frames.h"
#include "disagg/socket.h"

namespace tempered {

struct Frame {
    FrameType type = FrameType::Done;
    std::vector<uint8_t> payload;
};

// A frame's header is malformed: the error is SocketFailure::Failed with the decoder's message, which
// callers report as a protocol error.
Result<Frame, SocketError> read_frame(Socket& socket, Deadline deadline);

}  // namespace tempered
