// The KV transfer's wire format and what both ends check: frames round trip, and the decoder refuses
// truncated, oversized and foreign input without allocating what a length claims.
#include <gtest/gtest.h>

#include <cstring>

#include "disagg/frames.h"
#include "disagg/kv_layout.h"
#include "disagg/kv_transfer_config.h"

namespace tempered {
namespace {
namespace disagg_frames_test {

KvLayout sample_layout() {
    KvCacheShape shape;
    shape.layer_count = 4;
    shape.kv_head_count = 2;
    shape.head_dim = 8;
    shape.block_size = 16;
    shape.type = DType::F16;
    return kv_layout_of(shape, 0xfeedbeefULL);
}

std::span<const uint8_t> payload_of(const std::vector<uint8_t>& frame) {
    return std::span<const uint8_t>(frame).subspan(kFrameHeaderBytes);
}

FrameHeader header_of(const std::vector<uint8_t>& frame) {
    auto header = decode_frame_header(std::span<const uint8_t>(frame).first(kFrameHeaderBytes));
    EXPECT_TRUE(header.ok()) << header.error().message;
    return header.value();
}

TEST(DisaggFrames, ClaimRoundTrips) {
    ClaimFrame claim{0x0123456789abcdefULL, sample_layout(), 77, 0x5555aaaa5555aaaaULL, 32, true};
    auto frame = encode_claim(claim);
    EXPECT_EQ(header_of(frame).type, FrameType::Claim);
    EXPECT_EQ(header_of(frame).payload_bytes, frame.size() - kFrameHeaderBytes);
    auto decoded = decode_claim(payload_of(frame));
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(decoded->room, claim.room);
    EXPECT_EQ(decoded->layout, claim.layout);
    EXPECT_EQ(decoded->prompt_length, 77);
    EXPECT_EQ(decoded->prompt_hash, claim.prompt_hash);
    EXPECT_EQ(decoded->cached_positions, 32);
    EXPECT_TRUE(decoded->accepts_shm);
}

TEST(DisaggFrames, OtherFramesRoundTrip) {
    auto reject = encode_reject("KV dtype differs");
    EXPECT_EQ(decode_reject(payload_of(reject)).value(), "KV dtype differs");

    KvHeaderFrame header{16, 40, 2048, 6, "/tempered-kv-1-2"};
    auto decoded_header = decode_kv_header(payload_of(encode_kv_header(header)));
    ASSERT_TRUE(decoded_header.ok()) << decoded_header.error().message;
    EXPECT_EQ(decoded_header->first_position, 16);
    EXPECT_EQ(decoded_header->end_position, 40);
    EXPECT_EQ(decoded_header->block_bytes, 2048);
    EXPECT_EQ(decoded_header->block_count, 6);
    EXPECT_EQ(decoded_header->shm_name, "/tempered-kv-1-2");

    std::vector<StagedKvBlock> blocks = {{0, 1}, {3, 2}};
    std::vector<uint8_t> bytes = {1, 2, 3, 4, 5, 6};
    auto blocks_frame = encode_kv_blocks(blocks, bytes);
    EXPECT_EQ(blocks_frame.size(), kFrameHeaderBytes + kv_blocks_payload_bytes(2, 6));
    auto decoded_blocks = decode_kv_blocks(payload_of(blocks_frame));
    ASSERT_TRUE(decoded_blocks.ok()) << decoded_blocks.error().message;
    ASSERT_EQ(decoded_blocks->blocks.size(), 2u);
    EXPECT_EQ(decoded_blocks->blocks[1].group, 3);
    EXPECT_EQ(decoded_blocks->blocks[1].index, 2);
    EXPECT_EQ(std::vector<uint8_t>(decoded_blocks->bytes.begin(), decoded_blocks->bytes.end()), bytes);

    auto done = encode_empty(FrameType::Done);
    EXPECT_EQ(done.size(), kFrameHeaderBytes);
    EXPECT_EQ(header_of(done).type, FrameType::Done);
}

TEST(DisaggFrames, HeaderRefusesUnknownTypesAndOversizedLengths) {
    auto header = [](uint8_t type, uint32_t length) {
        std::vector<uint8_t> bytes(kFrameHeaderBytes);
        bytes[0] = type;
        std::memcpy(bytes.data() + 1, &length, 4);
        return decode_frame_header(bytes);
    };
    EXPECT_TRUE(header(static_cast<uint8_t>(FrameType::KvBlocks), kMaxKvBlocksPayload).ok());
    auto too_big = header(static_cast<uint8_t>(FrameType::KvBlocks), 0xffffffffu);
    ASSERT_FALSE(too_big.ok());
    EXPECT_NE(too_big.error().message.find("exceeds its limit"), std::string::npos) << too_big.error().message;
    EXPECT_FALSE(header(static_cast<uint8_t>(FrameType::Claim), 1u << 20).ok());
    EXPECT_FALSE(header(static_cast<uint8_t>(FrameType::Ack), 1).ok());
    EXPECT_FALSE(header(static_cast<uint8_t>(FrameType::Reject), 1u << 30).ok());
    EXPECT_FALSE(header(0, 0).ok());
    EXPECT_FALSE(header(42, 0).ok());
    std::vector<uint8_t> short_header = {1, 0, 0};
    EXPECT_FALSE(decode_frame_header(short_header).ok());
}

TEST(DisaggFrames, EveryTruncatedPayloadIsRefused) {
    auto claim = encode_claim(ClaimFrame{1, sample_layout(), 10, 2, 0, false});
    auto claim_payload = payload_of(claim);
    for (size_t length = 0; length < claim_payload.size(); ++length) {
        EXPECT_FALSE(decode_claim(claim_payload.first(length)).ok()) << "claim cut to " << length;
    }
    auto header = encode_kv_header(KvHeaderFrame{0, 16, 64, 1, "/x"});
    for (size_t length = 0; length < payload_of(header).size(); ++length) {
        EXPECT_FALSE(decode_kv_header(payload_of(header).first(length)).ok()) << "header cut to " << length;
    }
    auto reject = encode_reject("gone");
    for (size_t length = 0; length < payload_of(reject).size(); ++length) {
        EXPECT_FALSE(decode_reject(payload_of(reject).first(length)).ok()) << "reject cut to " << length;
    }
    std::vector<StagedKvBlock> tags = {{0, 0}, {0, 1}};
    auto blocks = encode_kv_blocks(tags, {});
    for (size_t length = 0; length < payload_of(blocks).size(); ++length) {
        EXPECT_FALSE(decode_kv_blocks(payload_of(blocks).first(length)).ok()) << "blocks cut to " << length;
    }
}

TEST(DisaggFrames, ClaimRefusesForeignMagicAndVersion) {
    auto frame = encode_claim(ClaimFrame{1, sample_layout(), 10, 2, 0, false});
    std::vector<uint8_t> payload(frame.begin() + kFrameHeaderBytes, frame.end());
    auto bad_magic = payload;
    bad_magic[0] ^= 0xff;
    auto magic = decode_claim(bad_magic);
    ASSERT_FALSE(magic.ok());
    EXPECT_NE(magic.error().message.find("bad magic"), std::string::npos) << magic.error().message;
    auto bad_version = payload;
    bad_version[4] = 99;
    auto version = decode_claim(bad_version);
    ASSERT_FALSE(version.ok());
    EXPECT_NE(version.error().message.find("protocol version 99"), std::string::npos) << version.error().message;
    // HTTP sent to the bootstrap port by mistake is not a claim either.
    std::string http = "GET / HTTP/1.1\r\n";
    auto http_claim = decode_claim({reinterpret_cast<const uint8_t*>(http.data()), http.size()});
    EXPECT_FALSE(http_claim.ok());
}

TEST(DisaggFrames, CountsThatExceedTheBytesPresentAreRefused) {
    // A KV_BLOCKS payload claiming 2^32-1 tags in 4 bytes: refused before any vector is sized.
    std::vector<uint8_t> huge_count = {0xff, 0xff, 0xff, 0xff};
    auto blocks = decode_kv_blocks(huge_count);
    ASSERT_FALSE(blocks.ok());
    EXPECT_NE(blocks.error().message.find("block tags"), std::string::npos) << blocks.error().message;
    // A REJECT whose message length says more than is there.
    std::vector<uint8_t> long_reject = {0x00, 0x00, 0x10, 0x00, 'a'};
    EXPECT_FALSE(decode_reject(long_reject).ok());
    // A KV_HEADER with a shm name longer than NAME_MAX.
    auto header = encode_kv_header(KvHeaderFrame{0, 16, 64, 1, std::string(300, 'x')});
    EXPECT_FALSE(decode_kv_header(payload_of(header)).ok());
    // Negative counts and cached positions beyond the prompt.
    EXPECT_FALSE(decode_kv_header(payload_of(encode_kv_header(KvHeaderFrame{0, 16, 64, -1, ""}))).ok());
    EXPECT_FALSE(decode_claim(payload_of(encode_claim(ClaimFrame{1, sample_layout(), 10, 2, 11, false}))).ok());
}

TEST(DisaggLayout, MismatchNamesTheFirstFieldWithBothValues) {
    KvLayout prefill = sample_layout();
    EXPECT_FALSE(describe_mismatch(prefill, prefill).has_value());
    KvLayout decode = prefill;
    decode.dtype = DType::F32;
    decode.head_dim = 16;
    EXPECT_EQ(describe_mismatch(prefill, decode).value(), "KV dtype differs: prefill f16, decode f32");
    decode = prefill;
    decode.block_size = 32;
    EXPECT_EQ(describe_mismatch(prefill, decode).value(), "KV block size differs: prefill 16, decode 32");
    decode = prefill;
    decode.model_fingerprint = 1;
    EXPECT_NE(describe_mismatch(prefill, decode).value().find("model fingerprint"), std::string::npos);

    KvCacheShape windowed;
    windowed.layer_count = 4;
    windowed.kv_head_count = 2;
    windowed.head_dim = 8;
    windowed.layer_windows = {8, 8, 8, 0};
    EXPECT_NE(describe_mismatch(prefill, kv_layout_of(windowed, prefill.model_fingerprint)).value().find("windows"),
              std::string::npos);
}

TEST(DisaggConfig, FaultAndPathStrings) {
    auto pause = parse_transfer_fault("pause_after_blocks:3:1.5");
    ASSERT_TRUE(pause.ok()) << pause.error().message;
    EXPECT_EQ(pause->kind, TransferFault::Kind::PauseAfterBlocks);
    EXPECT_EQ(pause->after_blocks, 3);
    EXPECT_EQ(pause->pause.count(), 1500);
    auto abort = parse_transfer_fault("abort_after_blocks:0");
    ASSERT_TRUE(abort.ok());
    EXPECT_EQ(abort->kind, TransferFault::Kind::AbortAfterBlocks);
    EXPECT_EQ(abort->after_blocks, 0);
    for (const char* bad :
         {"", "abort_after_blocks", "abort_after_blocks:-1", "abort_after_blocks:2:3", "pause_after_blocks:2",
          "pause_after_blocks:x:1", "pause_after_blocks:1:soon", "explode_after_blocks:1"}) {
        auto parsed = parse_transfer_fault(bad);
        ASSERT_FALSE(parsed.ok()) << bad;
        EXPECT_NE(parsed.error().message.find("--disaggregation-fault"), std::string::npos);
    }
    EXPECT_EQ(parse_transfer_path("shm").value(), TransferPath::Shm);
    EXPECT_FALSE(parse_transfer_path("rdma").ok());
}

}  // namespace disagg_frames_test
}  // namespace
}  // namespace tempered
