#include "disagg/prefill_sender.h"

#include <algorithm>

#include "disagg/frame_stream.h"
#include "disagg/shm_segment.h"

namespace tempered {
namespace {

// TCP runs stay near this size so that a cancel or a stop is seen between frames.
constexpr size_t kTargetRunBytes = 4u << 20;

struct SendFailure {
    TransferFailureReason reason = TransferFailureReason::Protocol;
    std::string message;
    bool tell_peer = true;  // send it as a REJECT before closing
};
using SendStatus = Result<Ok, SendFailure>;

SendFailure from_socket(const SocketError& error, const std::string& doing) {
    switch (error.kind) {
        case SocketFailure::Timeout: return {TransferFailureReason::Timeout, doing + ": timed out", false};
        case SocketFailure::PeerClosed:
            return {TransferFailureReason::PeerClosed, doing + ": the decode server closed the connection", false};
        case SocketFailure::Failed: return {TransferFailureReason::Protocol, doing + ": " + error.message, false};
    }
    return {};
}

std::string room_text(uint64_t room) { return "room " + std::to_string(room); }

Deadline deadline_from_now(const KvTransferConfig& config) { return TransferClock::now() + config.timeout; }

// Waits for `what` on `room` until `deadline`; a failure for a cancel, a stop or the deadline.
SendStatus wait_for(PrefillRooms& rooms, PrefillRoom& room, Deadline deadline, bool (*what)(PrefillRoom&),
                    const std::string& timeout_message) {
    bool happened = rooms.wait_until(
        deadline, [what](PrefillRoom& r) { return r.cancelled || what(r); }, room);
    if (room.cancelled) {
        return SendFailure{TransferFailureReason::Cancelled, "the prefill request for " + room_text(room.room) +
                                                                 " ended: cancelled before its KV was sent"};
    }
    if (rooms.stopping()) return SendFailure{TransferFailureReason::Cancelled, "the prefill server is shutting down"};
    if (!happened) return SendFailure{TransferFailureReason::Timeout, timeout_message};
    return Ok{};
}

SendStatus check_delivery(const ClaimFrame& claim, const std::vector<int32_t>& prompt, const StagedKv& kv,
                          const KvLayout& layout) {
    auto prompt_length = static_cast<int64_t>(prompt.size());
    uint64_t hash = prompt_hash(prompt);
    if (prompt_length != claim.prompt_length || hash != claim.prompt_hash) {
        return SendFailure{TransferFailureReason::Mismatch,
                           "the prompt of " + room_text(claim.room) + " differs: prefill " +
                               std::to_string(prompt_length) + " tokens, decode " +
                               std::to_string(claim.prompt_length) + " tokens" +
                               (prompt_length == claim.prompt_length ? " (same length, other tokens)" : "")};
    }
    if (kv.first_position > claim.cached_positions) {
        return SendFailure{TransferFailureReason::Protocol,
                           "the staged KV of " + room_text(claim.room) + " starts at position " +
                               std::to_string(kv.first_position) + ", after the decode's " +
                               std::to_string(claim.cached_positions) + " cached positions"};
    }
    if (kv.block_bytes != layout.pool_block_bytes ||
        kv.byte_count() != static_cast<int64_t>(kv.blocks.size()) * kv.block_bytes) {
        return SendFailure{TransferFailureReason::Protocol,
                           "the staged KV of " + room_text(claim.room) + " does not match this server's block size"};
    }
    return Ok{};
}

// The staged blocks the decode lacks: those at positions from its cached ones on.
std::vector<size_t> blocks_to_send(const StagedKv& kv, int64_t cached_positions, int64_t block_size) {
    std::vector<size_t> chosen;
    for (size_t i = 0; i < kv.blocks.size(); ++i) {
        if (kv.blocks[i].index * block_size >= cached_positions) chosen.push_back(i);
    }
    return chosen;
}

std::span<const uint8_t> block_bytes_of(const StagedKv& kv, size_t i) {
    return std::span<const uint8_t>(kv.bytes).subspan(i * static_cast<size_t>(kv.block_bytes),
                                                      static_cast<size_t>(kv.block_bytes));
}

struct Sending {
    PrefillRooms& rooms;
    PrefillRoom& room;
    Socket& socket;
    const StagedKv& kv;
    std::vector<size_t> chosen;
    bool shm = false;
};

// The injected fault, once `sent` blocks are out: a pause (then on), or an abort (the connection closes).
SendStatus apply_fault(const Sending& sending, int64_t sent) {
    const auto& fault = sending.rooms.config().fault;
    if (!fault || fault->after_blocks != sent) return Ok{};
    if (fault->kind == TransferFault::Kind::AbortAfterBlocks) {
        return SendFailure{TransferFailureReason::Protocol,
                           room_text(sending.room.room) + ": aborted after " + std::to_string(sent) +
                               " blocks (--disaggregation-fault)",
                           false};
    }
    if (!sending.rooms.sleep_unless_stopped(fault->pause)) {
        return SendFailure{TransferFailureReason::Cancelled, "the prefill server is shutting down", false};
    }
    return Ok{};
}

size_t run_length(const Sending& sending) {
    size_t per_block = 12 + (sending.shm ? 0 : static_cast<size_t>(sending.kv.block_bytes));
    size_t target = sending.shm ? kMaxKvBlocksPayload - 4 : kTargetRunBytes;
    return std::max<size_t>(1, target / per_block);
}

// KV_BLOCKS frames of the chosen blocks (tags only when the bytes are in shm), the fault between runs.
SendStatus send_block_runs(const Sending& sending, const KvTransferConfig& config) {
    const auto& fault = config.fault;
    size_t max_run = run_length(sending);
    size_t sent = 0;
    if (auto status = apply_fault(sending, 0); !status.ok()) return status;
    while (sent < sending.chosen.size()) {
        size_t run = std::min(max_run, sending.chosen.size() - sent);
        if (fault && static_cast<size_t>(fault->after_blocks) > sent) {
            run = std::min(run, static_cast<size_t>(fault->after_blocks) - sent);
        }
        std::vector<StagedKvBlock> tags;
        std::vector<uint8_t> bytes;
        for (size_t k = sent; k < sent + run; ++k) {
            size_t i = sending.chosen[k];
            tags.push_back(sending.kv.blocks[i]);
            if (!sending.shm) {
                auto block = block_bytes_of(sending.kv, i);
                bytes.insert(bytes.end(), block.begin(), block.end());
            }
        }
        if (sending.room.cancelled) {
            return SendFailure{
                TransferFailureReason::Cancelled,
                "the prefill request for " + room_text(sending.room.room) + " ended: cancelled mid-transfer"};
        }
        auto status = sending.socket.send_all(encode_kv_blocks(tags, bytes), deadline_from_now(config));
        if (!status.ok()) return from_socket(status.error(), "sending the KV of " + room_text(sending.room.room));
        sent += run;
        if (auto fault_status = apply_fault(sending, static_cast<int64_t>(sent)); !fault_status.ok())
            return fault_status;
    }
    return Ok{};
}

// The shm segment with the chosen blocks in order; the caller holds it until the ACK (it unlinks on close).
Result<ShmSegment, SendFailure> fill_segment(const Sending& sending) {
    size_t block_bytes = static_cast<size_t>(sending.kv.block_bytes);
    auto segment = ShmSegment::create(ShmSegment::name_for(sending.room.room), sending.chosen.size() * block_bytes);
    if (!segment.ok()) return SendFailure{TransferFailureReason::Protocol, segment.error().message};
    for (size_t k = 0; k < sending.chosen.size(); ++k) {
        auto block = block_bytes_of(sending.kv, sending.chosen[k]);
        std::copy(block.begin(), block.end(), segment->bytes().begin() + static_cast<ptrdiff_t>(k * block_bytes));
    }
    return std::move(segment.value());
}

SendStatus await_ack(PrefillRooms& rooms, uint64_t room, Socket& socket) {
    auto frame = read_frame(socket, deadline_from_now(rooms.config()), kMaxRejectMessageBytes + 16);
    if (!frame.ok()) return from_socket(frame.error(), "waiting for the ACK of " + room_text(room));
    if (frame->type == FrameType::Ack) return Ok{};
    if (frame->type == FrameType::Reject) {
        auto message = decode_reject(frame->payload);
        return SendFailure{TransferFailureReason::Rejected,
                           "the decode server refused the KV of " + room_text(room) + ": " +
                               (message.ok() ? message.value() : message.error().message),
                           false};
    }
    return SendFailure{TransferFailureReason::Protocol,
                       std::string("expected ACK for ") + room_text(room) + ", got " + frame_type_name(frame->type)};
}

// Everything after the match: the KV, the checks, the blocks, the ACK. Returns the bytes sent and the path.
// `claimed_at`: when the claim came; `ready_at` is set to when the KV was ready to move.
Result<std::pair<int64_t, bool>, SendFailure> transfer(PrefillRooms& rooms, PrefillRoom& room, Socket& socket,
                                                       const ClaimFrame& claim, Deadline claimed_at,
                                                       Deadline& ready_at) {
    const KvTransferConfig& config = rooms.config();
    if (auto mismatch = describe_mismatch(config.layout, claim.layout)) {
        return SendFailure{TransferFailureReason::Mismatch, room_text(claim.room) + ": " + *mismatch};
    }
    if (config.layout.block_size <= 0 || claim.cached_positions % config.layout.block_size != 0) {
        return SendFailure{TransferFailureReason::Protocol,
                           room_text(claim.room) + ": cached positions " + std::to_string(claim.cached_positions) +
                               " are not a multiple of the block size " + std::to_string(config.layout.block_size)};
    }
    auto delivered = wait_for(
        rooms, room, TransferClock::now() + config.timeout, [](PrefillRoom& r) { return r.delivered; },
        room_text(claim.room) + " was not computed within " + seconds_text(config.timeout));
    if (!delivered.ok()) return delivered.error();
    auto delivery = rooms.take_delivery(room);
    if (!delivery) return SendFailure{TransferFailureReason::Cancelled, room_text(claim.room) + " ended"};
    ready_at = TransferClock::now();
    rooms.metrics().observe_wait(TransferRole::Prefill, std::chrono::duration<double>(ready_at - claimed_at).count());
    const auto& [prompt, kv] = *delivery;
    if (auto status = check_delivery(claim, prompt, kv, config.layout); !status.ok()) return status.error();

    Sending sending{rooms,
                    room,
                    socket,
                    kv,
                    blocks_to_send(kv, claim.cached_positions, config.layout.block_size),
                    claim.accepts_shm && config.path != TransferPath::Tcp};
    KvHeaderFrame header{std::max(kv.first_position, claim.cached_positions), kv.end_position, kv.block_bytes,
                         static_cast<int64_t>(sending.chosen.size()), ""};
    std::optional<ShmSegment> segment;
    if (sending.shm) {
        auto filled = fill_segment(sending);
        if (!filled.ok()) return filled.error();
        segment.emplace(std::move(filled.value()));
        header.shm_name = segment->name();
    }
    auto sent = socket.send_all(encode_kv_header(header), deadline_from_now(config));
    if (!sent.ok()) return from_socket(sent.error(), "sending the KV header of " + room_text(claim.room));
    if (auto status = send_block_runs(sending, config); !status.ok()) return status.error();
    sent = socket.send_all(encode_empty(FrameType::Done), deadline_from_now(config));
    if (!sent.ok()) return from_socket(sent.error(), "sending DONE for " + room_text(claim.room));
    if (auto status = await_ack(rooms, claim.room, socket); !status.ok()) return status.error();
    return std::make_pair(static_cast<int64_t>(sending.chosen.size()) * kv.block_bytes, sending.shm);
}

// A valid CLAIM from the connection, or nothing (having told the peer why, when it can be told).
std::optional<ClaimFrame> read_claim(PrefillRooms& rooms, Socket& socket) {
    // A claim follows the connection at once and is small: a silent or oversized one holds nothing for long.
    auto frame = read_frame(socket, TransferClock::now() + kClaimReadTimeout, kMaxClaimPayload);
    // A peer that left or stayed silent made no claim and opened no room: nothing to count or answer.
    if (!frame.ok() && frame.error().kind != SocketFailure::Failed) return std::nullopt;
    Result<ClaimFrame> claim =
        !frame.ok() ? Result<ClaimFrame>(Error{frame.error().message})
        : frame->type == FrameType::Claim
            ? decode_claim(frame->payload)
            : Result<ClaimFrame>(Error{std::string("expected CLAIM, got ") + frame_type_name(frame->type)});
    if (claim.ok()) return claim.value();
    rooms.metrics().failure(TransferRole::Prefill, TransferFailureReason::Protocol);
    (void)socket.send_all(encode_reject(claim.error().message), deadline_from_now(rooms.config()));
    return std::nullopt;
}

}  // namespace

void serve_claim(PrefillRooms& rooms, Socket& socket) {
    const KvTransferConfig& config = rooms.config();
    auto claim = read_claim(rooms, socket);
    if (!claim) return socket.shutdown();
    auto room = rooms.claim(claim->room, claim->cached_positions);
    if (!room.ok()) {
        (void)socket.send_all(encode_reject(room.error().message), deadline_from_now(config));
        return socket.shutdown();
    }
    Deadline claimed_at = TransferClock::now();
    auto opened = wait_for(
        rooms, *room.value(), claimed_at + config.timeout, [](PrefillRoom& r) { return r.export_open; },
        "the prefill server has no request for " + room_text(claim->room) + " (waited " + seconds_text(config.timeout) +
            ")");
    Deadline ready_at = claimed_at;
    auto outcome = opened.ok() ? transfer(rooms, *room.value(), socket, *claim, claimed_at, ready_at)
                               : Result<std::pair<int64_t, bool>, SendFailure>(opened.error());
    if (outcome.ok()) {
        rooms.metrics().add_bytes(TransferRole::Prefill, outcome->second, outcome->first);
        rooms.metrics().observe_seconds(TransferRole::Prefill,
                                        std::chrono::duration<double>(TransferClock::now() - ready_at).count());
        rooms.finish(*room.value(), Ok{}, std::nullopt);
    } else {
        const SendFailure& failure = outcome.error();
        if (failure.tell_peer) (void)socket.send_all(encode_reject(failure.message), deadline_from_now(config));
        rooms.finish(*room.value(), Error{failure.message}, failure.reason);
    }
    socket.shutdown();
}

}  // namespace tempered
