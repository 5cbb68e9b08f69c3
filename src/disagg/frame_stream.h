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
// `max_payload`: a frame announcing more is refused before anything is allocated for it (what a reader
// expects next, e.g. a small CLAIM, bounds what a hostile peer can make it allocate).
Result<Frame, SocketError> read_frame(Socket& socket, Deadline deadline, uint32_t max_payload = kMaxKvBlocksPayload);

}  // namespace tempered
