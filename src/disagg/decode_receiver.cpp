#include "disagg/decode_receiver.h"

#include <algorithm>

#include "disagg/frame_stream.h"
#include "disagg/shm_segment.h"

namespace tempered {

std::string ImportState::where() const {
    return "room " + std::to_string(room) + " from " + host + ":" + std::to_string(port);
}

void ImportState::attach(Socket* socket) {
    std::unique_lock lock(mutex_);
    socket_ = socket;
    if (socket_ != nullptr && cancelled) socket_->shutdown();
}

void ImportState::cancel() {
    std::unique_lock lock(mutex_);
    cancelled = true;
    if (socket_ != nullptr) socket_->shutdown();
}

void ImportState::set_result(Result<StagedKv> result) {
    {
        std::unique_lock lock(mutex_);
        result_ = std::move(result);
    }
    if (!cancelled && ready) ready();
}

std::optional<Result<StagedKv>> ImportState::take_result() {
    std::unique_lock lock(mutex_);
    if (!result_) return std::nullopt;
    if (taken_) return Result<StagedKv>(Error{"the KV of " + where() + " was already taken"});
    taken_ = true;
    return std::move(*result_);
}

namespace {

struct ReceiveFailure {
    TransferFailureReason reason = TransferFailureReason::Protocol;
    std::string message;
};
template <class T>
using Received = Result<T, ReceiveFailure>;

ReceiveFailure from_socket(const SocketError& error, const std::string& doing) {
    switch (error.kind) {
        case SocketFailure::Timeout: return {TransferFailureReason::Timeout, doing + ": timed out"};
        case SocketFailure::PeerClosed:
            return {TransferFailureReason::PeerClosed, doing + ": the prefill server closed the connection"};
        case SocketFailure::Failed: return {TransferFailureReason::Protocol, doing + ": " + error.message};
    }
    return {};
}

ReceiveFailure protocol(const std::string& message) { return {TransferFailureReason::Protocol, message}; }

ReceiveFailure rejected(const Frame& frame) {
    auto message = decode_reject(frame.payload);
    return {TransferFailureReason::Rejected,
            "the prefill server refused: " + (message.ok() ? message.value() : message.error().message)};
}

int64_t blocks_until(int64_t position, int64_t block_size) { return (position + block_size - 1) / block_size; }

// The header against what this request asked for, so that no count it holds makes us allocate more than
// the prompt's KV can take.
Received<Ok> check_header(const ImportState& state, const KvHeaderFrame& header) {
    const KvLayout& layout = state.config.layout;
    auto prompt_length = static_cast<int64_t>(state.prompt.size());
    if (header.block_bytes != layout.pool_block_bytes) {
        return ReceiveFailure{TransferFailureReason::Mismatch,
                              "the prefill's KV blocks are " + std::to_string(header.block_bytes) + " bytes, ours " +
                                  std::to_string(layout.pool_block_bytes)};
    }
    if (header.first_position != state.cached_positions || header.end_position > prompt_length ||
        header.end_position < std::max<int64_t>(prompt_length - 1, header.first_position)) {
        return protocol("the prefill sends positions [" + std::to_string(header.first_position) + ", " +
                        std::to_string(header.end_position) + ") for a prompt of " + std::to_string(prompt_length) +
                        " with " + std::to_string(state.cached_positions) + " cached");
    }
    int64_t position_blocks =
        blocks_until(header.end_position, layout.block_size) - header.first_position / layout.block_size;
    if (header.block_count > position_blocks * layout.group_count) {
        return protocol("the prefill announces " + std::to_string(header.block_count) + " blocks where at most " +
                        std::to_string(position_blocks * layout.group_count) + " fit");
    }
    return Ok{};
}

Received<Ok> check_tag(const ImportState& state, const KvHeaderFrame& header, const StagedKvBlock& block) {
    const KvLayout& layout = state.config.layout;
    bool group_ok = block.group >= 0 && block.group < layout.group_count;
    bool index_ok = block.index >= header.first_position / layout.block_size &&
                    block.index < blocks_until(header.end_position, layout.block_size);
    if (group_ok && index_ok) return Ok{};
    return protocol("a block tagged group " + std::to_string(block.group) + ", index " + std::to_string(block.index) +
                    " is outside the transfer");
}

// KV_BLOCKS frames until DONE, into `kv` (bytes too, unless they are in shm).
Received<Ok> receive_blocks(ImportState& state, Socket& socket, const KvHeaderFrame& header, bool in_shm,
                            Deadline deadline, StagedKv& kv) {
    while (true) {
        auto frame = read_frame(socket, deadline);
        if (!frame.ok()) return from_socket(frame.error(), "receiving the KV");
        if (frame->type == FrameType::Reject) return rejected(frame.value());
        if (frame->type == FrameType::Done) break;
        if (frame->type != FrameType::KvBlocks)
            return protocol(std::string("unexpected ") + frame_type_name(frame->type));
        auto blocks = decode_kv_blocks(frame->payload);
        if (!blocks.ok()) return protocol(blocks.error().message);
        if (static_cast<int64_t>(kv.blocks.size() + blocks->blocks.size()) > header.block_count) {
            return protocol("more blocks than the KV header announced (" + std::to_string(header.block_count) + ")");
        }
        size_t expected_bytes = in_shm ? 0 : blocks->blocks.size() * static_cast<size_t>(header.block_bytes);
        if (blocks->bytes.size() != expected_bytes) {
            return protocol("a KV_BLOCKS frame holds " + std::to_string(blocks->bytes.size()) + " bytes, expected " +
                            std::to_string(expected_bytes));
        }
        for (const StagedKvBlock& block : blocks->blocks) {
            if (auto status = check_tag(state, header, block); !status.ok()) return status;
            kv.blocks.push_back(block);
        }
        kv.bytes.insert(kv.bytes.end(), blocks->bytes.begin(), blocks->bytes.end());
    }
    if (static_cast<int64_t>(kv.blocks.size()) != header.block_count) {
        return protocol("DONE after " + std::to_string(kv.blocks.size()) + " of " + std::to_string(header.block_count) +
                        " blocks");
    }
    return Ok{};
}

struct Imported {
    StagedKv kv;
    bool shm = false;
    double waited_seconds = 0;  // claim sent -> header: the prefill's queue and compute
    TransferClock::time_point header_at;
};

// After the header: the blocks, from shm or the socket, then the ACK.
Received<Imported> receive_kv(ImportState& state, Socket& socket, const KvHeaderFrame& header, bool accepts_shm,
                              Deadline deadline) {
    Imported imported;
    imported.shm = !header.shm_name.empty();
    StagedKv& kv = imported.kv;
    kv.first_position = header.first_position;
    kv.end_position = header.end_position;
    kv.block_bytes = header.block_bytes;
    size_t total_bytes = static_cast<size_t>(header.block_count * header.block_bytes);
    std::optional<ShmSegment> segment;
    if (imported.shm) {
        if (!accepts_shm) return protocol("the prefill sent a shared-memory segment this server did not ask for");
        // Only this room's segment ("/tempered-kv-<pid>-<room>"): never another transfer's, which we would unlink.
        const std::string suffix = "-" + std::to_string(state.room);
        if (header.shm_name.rfind("/tempered-kv-", 0) != 0 || header.shm_name.size() <= suffix.size() ||
            header.shm_name.compare(header.shm_name.size() - suffix.size(), suffix.size(), suffix) != 0)
            return protocol("a shared-memory name not of this room's KV transfer: " + header.shm_name);
        auto opened = ShmSegment::open(header.shm_name, total_bytes);
        if (!opened.ok()) return protocol(opened.error().message);
        segment.emplace(std::move(opened.value()));
        segment->unlink_on_close();  // whatever happens next: the prefill unlinks it too, after the ACK or on failure
    } else {
        kv.bytes.reserve(total_bytes);
    }
    if (auto status = receive_blocks(state, socket, header, imported.shm, deadline, kv); !status.ok())
        return status.error();
    if (segment) kv.bytes.assign(segment->bytes().begin(), segment->bytes().end());
    auto acked = socket.send_all(encode_empty(FrameType::Ack), deadline);
    if (!acked.ok()) return from_socket(acked.error(), "sending the ACK");
    return imported;
}

Received<Imported> receive(ImportState& state, Deadline deadline) {
    auto connected = Socket::connect(state.host, state.port, deadline, &state.cancelled);
    if (!connected.ok()) {
        bool timed_out = connected.error().message.find("timed out") != std::string::npos;
        return ReceiveFailure{timed_out ? TransferFailureReason::Timeout : TransferFailureReason::PeerClosed,
                              "cannot connect: " + connected.error().message};
    }
    Socket& socket = connected.value();
    state.attach(&socket);
    struct Detach {
        ImportState& state;
        ~Detach() { state.attach(nullptr); }
    } detach{state};

    const KvTransferConfig& config = state.config;
    bool accepts_shm =
        config.path == TransferPath::Shm || (config.path == TransferPath::Auto && socket.peer_is_loopback());
    ClaimFrame claim{state.room,
                     config.layout,
                     static_cast<int64_t>(state.prompt.size()),
                     prompt_hash(state.prompt),
                     state.cached_positions,
                     accepts_shm};
    auto sent = socket.send_all(encode_claim(claim), deadline);
    if (!sent.ok()) return from_socket(sent.error(), "sending the claim");
    const auto claimed_at = TransferClock::now();
    auto frame = read_frame(socket, deadline, kMaxClaimPayload);  // a KV_HEADER or a REJECT: small
    if (!frame.ok()) return from_socket(frame.error(), "waiting for the KV");
    if (frame->type == FrameType::Reject) return rejected(frame.value());
    if (frame->type != FrameType::KvHeader)
        return protocol(std::string("expected KV_HEADER, got ") + frame_type_name(frame->type));
    auto header = decode_kv_header(frame->payload);
    if (!header.ok()) return protocol(header.error().message);
    if (auto status = check_header(state, header.value()); !status.ok()) return status.error();
    const auto header_at = TransferClock::now();
    auto imported = receive_kv(state, socket, header.value(), accepts_shm, deadline);
    if (imported.ok()) {
        imported->waited_seconds = std::chrono::duration<double>(header_at - claimed_at).count();
        imported->header_at = header_at;
    }
    return imported;
}

}  // namespace

void run_import(ImportState& state) {
    TransferMetrics& metrics = state.metrics;
    auto started = TransferClock::now();
    metrics.room_opened(TransferRole::Decode);
    auto received = receive(state, started + state.config.timeout);
    if (received.ok()) {
        metrics.add_bytes(TransferRole::Decode, received->shm, received->kv.byte_count());
        metrics.observe_wait(TransferRole::Decode, received->waited_seconds);
        metrics.observe_seconds(TransferRole::Decode,
                                std::chrono::duration<double>(TransferClock::now() - received->header_at).count());
        metrics.room_finished(TransferRole::Decode);
        state.set_result(std::move(received->kv));
        return;
    }
    ReceiveFailure failure = received.error();
    if (state.cancelled) failure = {TransferFailureReason::Cancelled, "cancelled"};
    metrics.failure(TransferRole::Decode, failure.reason);
    metrics.room_finished(TransferRole::Decode);
    state.set_result(Error{"KV transfer of " + state.where() + ": " + failure.message});
}

}  // namespace tempered
