// One decode server's connection on the prefill side: read its CLAIM, wait for the room's KV, check that
// the two servers agree, send the blocks the decode lacks (TCP or shm), wait for the ACK, finish the room.
#pragma once

#include "disagg/prefill_rooms.h"
#include "disagg/socket.h"

namespace tempered {

void serve_claim(PrefillRooms& rooms, Socket& socket);

}  // namespace tempered
