#include "disagg/frames.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <sstream>

#include "core/fnv1a.h"

namespace tempered {

static_assert(std::endian::native == std::endian::little, "the wire format is written as the host stores it");

namespace {

constexpr size_t kLayoutBytes = 4 + 8 * 8;
constexpr size_t kClaimBytes = 4 + 2 + 8 + kLayoutBytes + 8 + 8 + 8 + 1;
constexpr size_t kKvHeaderFixedBytes = 4 * 8 + 4;  // four i64, the name's u32 length
constexpr size_t kBlockTagBytes = 4 + 8;           // group i32, index i64

// Writes a frame of a payload size known up front (growing a vector field by field trips GCC 12's
// -Wstringop-overflow false positives); writes past that size are a bug in an encoder and are dropped.
class ByteWriter {
public:
    ByteWriter(FrameType type, size_t payload_bytes) : bytes_(kFrameHeaderBytes + payload_bytes) {
        bytes_[0] = static_cast<uint8_t>(type);
        auto length = static_cast<uint32_t>(payload_bytes);
        std::memcpy(bytes_.data() + 1, &length, sizeof(length));
    }
    template <class T>
    void put(T value) {
        put_bytes({reinterpret_cast<const uint8_t*>(&value), sizeof(T)});
    }
    void put_bytes(std::span<const uint8_t> data) {
        if (data.size() > bytes_.size() - position_) return;
        std::copy(data.begin(), data.end(), bytes_.begin() + static_cast<ptrdiff_t>(position_));
        position_ += data.size();
    }
    void put_text(const std::string& text) {
        put(static_cast<uint32_t>(text.size()));
        put_bytes({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
    }
    std::vector<uint8_t> finish() && { return std::move(bytes_); }

private:
    std::vector<uint8_t> bytes_;
    size_t position_ = kFrameHeaderBytes;
};

// Reads fields in order; a read past the end leaves the value zero and marks the reader failed.
class ByteReader {
public:
    explicit ByteReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
    template <class T>
    T get() {
        T value{};
        if (!has(sizeof(T))) return value;
        std::memcpy(&value, bytes_.data() + position_, sizeof(T));
        position_ += sizeof(T);
        return value;
    }
    std::span<const uint8_t> get_bytes(size_t count) {
        if (!has(count)) return {};
        auto span = bytes_.subspan(position_, count);
        position_ += count;
        return span;
    }
    bool has(size_t count) {
        if (count > bytes_.size() - position_) failed_ = true;
        return !failed_;
    }
    bool failed() const { return failed_; }
    size_t remaining() const { return bytes_.size() - position_; }

private:
    std::span<const uint8_t> bytes_;
    size_t position_ = 0;
    bool failed_ = false;
};

uint32_t max_payload(FrameType type) {
    switch (type) {
        case FrameType::Claim: return kClaimBytes;
        case FrameType::Reject: return 4 + kMaxRejectMessageBytes;
        case FrameType::KvHeader: return kKvHeaderFixedBytes + kMaxShmNameBytes;
        case FrameType::KvBlocks: return kMaxKvBlocksPayload;
        case FrameType::Done:
        case FrameType::Ack: return 0;
    }
    return 0;
}

Error malformed(const char* frame, const std::string& what) { return Error{std::string(frame) + " frame: " + what}; }

void put_layout(ByteWriter& writer, const KvLayout& layout) {
    writer.put(static_cast<uint32_t>(layout.dtype));
    writer.put(layout.block_size);
    writer.put(layout.layer_count);
    writer.put(layout.kv_head_count);
    writer.put(layout.head_dim);
    writer.put(layout.windows_hash);
    writer.put(layout.group_count);
    writer.put(layout.pool_block_bytes);
    writer.put(layout.model_fingerprint);
}

KvLayout get_layout(ByteReader& reader) {
    KvLayout layout;
    layout.dtype = static_cast<DType>(reader.get<uint32_t>());
    layout.block_size = reader.get<int64_t>();
    layout.layer_count = reader.get<int64_t>();
    layout.kv_head_count = reader.get<int64_t>();
    layout.head_dim = reader.get<int64_t>();
    layout.windows_hash = reader.get<uint64_t>();
    layout.group_count = reader.get<int64_t>();
    layout.pool_block_bytes = reader.get<int64_t>();
    layout.model_fingerprint = reader.get<uint64_t>();
    return layout;
}

std::string hex_magic(uint64_t value) {
    std::ostringstream text;
    text << "0x" << std::hex << value;
    return text.str();
}

}  // namespace

const char* frame_type_name(FrameType type) {
    switch (type) {
        case FrameType::Claim: return "CLAIM";
        case FrameType::Reject: return "REJECT";
        case FrameType::KvHeader: return "KV_HEADER";
        case FrameType::KvBlocks: return "KV_BLOCKS";
        case FrameType::Done: return "DONE";
        case FrameType::Ack: return "ACK";
    }
    return "unknown";
}

uint64_t prompt_hash(std::span<const int32_t> prompt) {
    Fnv1a hash;
    hash.bytes(prompt.data(), prompt.size_bytes());
    return hash.hash();
}

std::vector<uint8_t> encode_claim(const ClaimFrame& claim) {
    ByteWriter writer(FrameType::Claim, kClaimBytes);
    writer.put(kTransferMagic);
    writer.put(kTransferProtocolVersion);
    writer.put(claim.room);
    put_layout(writer, claim.layout);
    writer.put(claim.prompt_length);
    writer.put(claim.prompt_hash);
    writer.put(claim.cached_positions);
    writer.put(static_cast<uint8_t>(claim.accepts_shm ? 1 : 0));
    return std::move(writer).finish();
}

std::vector<uint8_t> encode_reject(const std::string& message) {
    std::string text = message.substr(0, kMaxRejectMessageBytes);
    ByteWriter writer(FrameType::Reject, 4 + text.size());
    writer.put_text(text);
    return std::move(writer).finish();
}

std::vector<uint8_t> encode_kv_header(const KvHeaderFrame& header) {
    ByteWriter writer(FrameType::KvHeader, kKvHeaderFixedBytes + header.shm_name.size());
    writer.put(header.first_position);
    writer.put(header.end_position);
    writer.put(header.block_bytes);
    writer.put(header.block_count);
    writer.put_text(header.shm_name);
    return std::move(writer).finish();
}

size_t kv_blocks_payload_bytes(size_t block_count, size_t byte_count) {
    return 4 + block_count * kBlockTagBytes + byte_count;
}

std::vector<uint8_t> encode_kv_blocks(std::span<const StagedKvBlock> blocks, std::span<const uint8_t> bytes) {
    ByteWriter writer(FrameType::KvBlocks, kv_blocks_payload_bytes(blocks.size(), bytes.size()));
    writer.put(static_cast<uint32_t>(blocks.size()));
    for (const StagedKvBlock& block : blocks) {
        writer.put(block.group);
        writer.put(block.index);
    }
    writer.put_bytes(bytes);
    return std::move(writer).finish();
}

std::vector<uint8_t> encode_empty(FrameType type) { return ByteWriter(type, 0).finish(); }

Result<FrameHeader> decode_frame_header(std::span<const uint8_t> header) {
    if (header.size() != kFrameHeaderBytes) return Error{"frame header: truncated"};
    uint8_t type = header[0];
    if (type < static_cast<uint8_t>(FrameType::Claim) || type > static_cast<uint8_t>(FrameType::Ack)) {
        return Error{"frame header: unknown frame type " + std::to_string(type)};
    }
    FrameHeader decoded{static_cast<FrameType>(type), 0};
    std::memcpy(&decoded.payload_bytes, header.data() + 1, sizeof(uint32_t));
    if (decoded.payload_bytes > max_payload(decoded.type)) {
        return Error{std::string(frame_type_name(decoded.type)) + " frame: payload of " +
                     std::to_string(decoded.payload_bytes) + " bytes exceeds its limit of " +
                     std::to_string(max_payload(decoded.type))};
    }
    return decoded;
}

Result<ClaimFrame> decode_claim(std::span<const uint8_t> payload) {
    ByteReader reader(payload);
    // The magic and version first, so that a peer of another protocol is named as such, whatever its size.
    auto magic = reader.get<uint32_t>();
    if (reader.failed()) return malformed("CLAIM", "truncated");
    if (magic != kTransferMagic)
        return malformed("CLAIM", "bad magic " + hex_magic(magic) + " (not a tempered KV transfer)");
    auto version = reader.get<uint16_t>();
    if (reader.failed()) return malformed("CLAIM", "truncated");
    if (version != kTransferProtocolVersion) {
        return malformed("CLAIM", "protocol version " + std::to_string(version) + ", this server speaks " +
                                      std::to_string(kTransferProtocolVersion));
    }
    if (payload.size() != kClaimBytes)
        return malformed("CLAIM", std::to_string(payload.size()) + " bytes, expected " + std::to_string(kClaimBytes));
    ClaimFrame claim;
    claim.room = reader.get<uint64_t>();
    claim.layout = get_layout(reader);
    claim.prompt_length = reader.get<int64_t>();
    claim.prompt_hash = reader.get<uint64_t>();
    claim.cached_positions = reader.get<int64_t>();
    claim.accepts_shm = reader.get<uint8_t>() != 0;
    if (claim.prompt_length < 0 || claim.cached_positions < 0 || claim.cached_positions > claim.prompt_length) {
        return malformed("CLAIM", "cached positions " + std::to_string(claim.cached_positions) +
                                      " outside a prompt of " + std::to_string(claim.prompt_length));
    }
    return claim;
}

Result<std::string> decode_reject(std::span<const uint8_t> payload) {
    ByteReader reader(payload);
    auto length = reader.get<uint32_t>();
    if (reader.failed()) return malformed("REJECT", "truncated");
    if (length > kMaxRejectMessageBytes || length != reader.remaining()) {
        return malformed("REJECT", "message length " + std::to_string(length) + " does not match its " +
                                       std::to_string(reader.remaining()) + " bytes");
    }
    auto text = reader.get_bytes(length);
    return std::string(text.begin(), text.end());
}

Result<KvHeaderFrame> decode_kv_header(std::span<const uint8_t> payload) {
    ByteReader reader(payload);
    KvHeaderFrame header;
    header.first_position = reader.get<int64_t>();
    header.end_position = reader.get<int64_t>();
    header.block_bytes = reader.get<int64_t>();
    header.block_count = reader.get<int64_t>();
    auto name_length = reader.get<uint32_t>();
    if (reader.failed()) return malformed("KV_HEADER", "truncated");
    if (name_length > kMaxShmNameBytes || name_length != reader.remaining()) {
        return malformed("KV_HEADER", "shm name length " + std::to_string(name_length) + " does not match its " +
                                          std::to_string(reader.remaining()) + " bytes");
    }
    auto name = reader.get_bytes(name_length);
    header.shm_name.assign(name.begin(), name.end());
    if (header.first_position < 0 || header.end_position < header.first_position || header.block_bytes <= 0 ||
        header.block_count < 0) {
        return malformed("KV_HEADER", "positions [" + std::to_string(header.first_position) + ", " +
                                          std::to_string(header.end_position) + "), " +
                                          std::to_string(header.block_count) + " blocks of " +
                                          std::to_string(header.block_bytes) + " bytes");
    }
    return header;
}

Result<KvBlocksFrame> decode_kv_blocks(std::span<const uint8_t> payload) {
    ByteReader reader(payload);
    auto count = reader.get<uint32_t>();
    if (reader.failed()) return malformed("KV_BLOCKS", "truncated");
    if (count > reader.remaining() / kBlockTagBytes) {
        return malformed("KV_BLOCKS",
                         std::to_string(count) + " block tags in " + std::to_string(reader.remaining()) + " bytes");
    }
    KvBlocksFrame frame;
    frame.blocks.resize(count);
    for (StagedKvBlock& block : frame.blocks) {
        block.group = reader.get<int32_t>();
        block.index = reader.get<int64_t>();
    }
    frame.bytes = reader.get_bytes(reader.remaining());
    return frame;
}

}  // namespace tempered
