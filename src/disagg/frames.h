// The KV transfer's wire format. Every frame is a type byte, a little-endian u32 payload length and the
// payload; the decode server speaks first (CLAIM, which opens with the protocol's magic and version).
//
//   decode -> prefill   CLAIM     room, KV layout (model fingerprint included), prompt length and hash,
//                                 cached positions, whether it can map shared memory
//   prefill -> decode   KV_HEADER positions, block bytes and count, and "" (bytes follow) or a shm name
//                       KV_BLOCKS a run of (group, index) tags, then their bytes (none when in shm)
//                       DONE
//   decode -> prefill   ACK
//   either way          REJECT    a message, then the sender closes
//
// Every length is bounded before anything is allocated: a frame's payload by its type's limit, a
// count by the bytes that are actually there. A hostile or confused peer gets an Error, never a huge
// allocation.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "disagg/kv_layout.h"
#include "kv/staged_kv.h"

namespace tempered {

enum class FrameType : uint8_t { Claim = 1, Reject = 2, KvHeader = 3, KvBlocks = 4, Done = 5, Ack = 6 };
const char* frame_type_name(FrameType type);

inline constexpr uint32_t kTransferMagic = 0x544b5654;  // "TVKT" on the wire
inline constexpr uint16_t kTransferProtocolVersion = 1;
inline constexpr size_t kFrameHeaderBytes = 5;              // type u8, payload length u32
inline constexpr uint32_t kMaxKvBlocksPayload = 64u << 20;  // one KV_BLOCKS frame; a run is cut to fit
inline constexpr uint32_t kMaxRejectMessageBytes = 4096;
inline constexpr uint32_t kMaxShmNameBytes = 255;        // NAME_MAX
inline constexpr uint32_t kMaxClaimPayload = 64u << 10;  // a CLAIM is ~100 bytes; a REJECT fits too
inline constexpr std::chrono::seconds kClaimReadTimeout{10};

struct FrameHeader {
    FrameType type = FrameType::Done;
    uint32_t payload_bytes = 0;
};

struct ClaimFrame {
    uint64_t room = 0;
    KvLayout layout;
    int64_t prompt_length = 0;
    uint64_t prompt_hash = 0;
    int64_t cached_positions = 0;
    bool accepts_shm = false;
};

struct KvHeaderFrame {
    int64_t first_position = 0;
    int64_t end_position = 0;
    int64_t block_bytes = 0;
    int64_t block_count = 0;
    std::string shm_name;  // empty: the bytes follow in KV_BLOCKS frames
};

struct KvBlocksFrame {
    std::vector<StagedKvBlock> blocks;
    std::span<const uint8_t> bytes;  // into the decoded payload; empty when the bytes are in shm
};

// FNV-1a over the prompt's token ids: the claim's proof that both servers hold the same prompt.
uint64_t prompt_hash(std::span<const int32_t> prompt);

// Whole frames (header and payload), ready to send.
std::vector<uint8_t> encode_claim(const ClaimFrame& claim);
std::vector<uint8_t> encode_reject(const std::string& message);  // cut to kMaxRejectMessageBytes
std::vector<uint8_t> encode_kv_header(const KvHeaderFrame& header);
// `bytes` is blocks.size() * block_bytes over TCP, empty over shm. The caller keeps the payload under
// kMaxKvBlocksPayload (kv_blocks_frame_bytes says how large a run makes it).
std::vector<uint8_t> encode_kv_blocks(std::span<const StagedKvBlock> blocks, std::span<const uint8_t> bytes);
std::vector<uint8_t> encode_empty(FrameType type);  // DONE, ACK
size_t kv_blocks_payload_bytes(size_t block_count, size_t byte_count);

// The five header bytes: a known type and a payload no longer than that type allows.
Result<FrameHeader> decode_frame_header(std::span<const uint8_t> header);
// Payloads (without the header): exact sizes, magic and version, counts within the bytes present.
Result<ClaimFrame> decode_claim(std::span<const uint8_t> payload);
Result<std::string> decode_reject(std::span<const uint8_t> payload);
Result<KvHeaderFrame> decode_kv_header(std::span<const uint8_t> payload);
Result<KvBlocksFrame> decode_kv_blocks(std::span<const uint8_t> payload);

}  // namespace tempered
