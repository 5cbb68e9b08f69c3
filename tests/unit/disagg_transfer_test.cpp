// A real prefill KvTransferServer and decode KvTransferClient over loopback (port 0: the kernel picks):
// the KV arrives byte for byte over TCP and shared memory, only the blocks the decode lacks move, both
// orders of claim and export work, every mismatch and failure reaches both sides as a sentence naming
// it, and after each case the rooms_waiting gauges are back to 0 and no shm segment is left behind.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <random>
#include <thread>

#include "disagg/frame_stream.h"
#include "disagg/kv_transfer_client.h"
#include "disagg/kv_transfer_server.h"
#include "kv/kv_block_pool.h"
#include "metrics/metrics.h"

namespace tempered {
namespace {
namespace disagg_transfer_test {

using namespace std::chrono_literals;

KvCacheShape test_shape(DType type = DType::F16) {
    KvCacheShape shape;
    shape.layer_count = 2;
    shape.kv_head_count = 2;
    shape.head_dim = 8;
    shape.block_size = 16;
    shape.type = type;
    return shape;
}

constexpr uint64_t kFingerprint = 0xabcdef12345ULL;

// Blocks for positions [first, end) in every group, random bytes.
StagedKv random_kv(const KvLayout& layout, int64_t first, int64_t end, uint32_t seed) {
    StagedKv kv;
    kv.first_position = first;
    kv.end_position = end;
    kv.block_bytes = layout.pool_block_bytes;
    std::mt19937 random(seed);
    for (int64_t index = first / layout.block_size; index * layout.block_size < end; ++index) {
        for (int32_t group = 0; group < layout.group_count; ++group) kv.blocks.push_back({group, index});
    }
    kv.bytes.resize(kv.blocks.size() * static_cast<size_t>(kv.block_bytes));
    for (uint8_t& byte : kv.bytes) byte = static_cast<uint8_t>(random());
    return kv;
}

std::vector<int32_t> prompt_of(int32_t length, int32_t offset = 0) {
    std::vector<int32_t> prompt;
    for (int32_t i = 0; i < length; ++i) prompt.push_back(100 + i + offset);
    return prompt;
}

template <class Poll>
auto wait_for_news(Poll poll) {
    auto deadline = std::chrono::steady_clock::now() + 3s;
    while (true) {
        auto news = poll();
        if (news || std::chrono::steady_clock::now() > deadline) return news;
        std::this_thread::sleep_for(1ms);
    }
}

bool eventually(const std::function<bool()>& condition) {
    auto deadline = std::chrono::steady_clock::now() + 3s;
    while (!condition()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(1ms);
    }
    return true;
}

int shm_segments_of_this_process() {
    std::string prefix = "tempered-kv-" + std::to_string(::getpid()) + "-";
    int count = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
        if (entry.path().filename().string().rfind(prefix, 0) == 0) ++count;
    }
    return count;
}

class DisaggTransfer : public ::testing::Test {
protected:
    void SetUp() override {
        server_config.layout = kv_layout_of(test_shape(), kFingerprint);
        server_config.timeout = 2000ms;
        client_config = server_config;
    }
    void TearDown() override {
        server.reset();
        EXPECT_EQ(metrics.rooms_waiting(TransferRole::Prefill), 0);
        EXPECT_EQ(metrics.rooms_waiting(TransferRole::Decode), 0);
        EXPECT_EQ(shm_segments_of_this_process(), 0);
    }
    void start_server() {
        auto started = KvTransferServer::start("127.0.0.1", 0, server_config, metrics);
        ASSERT_TRUE(started.ok()) << started.error().message;
        server = std::move(started.value());
        ASSERT_GT(server->port(), 0);
        client = std::make_unique<KvTransferClient>(client_config, metrics);
    }
    std::shared_ptr<KvImport> import(uint64_t room) { return client->open_import("127.0.0.1", server->port(), room); }

    // Both sides' outcomes for a prompt delivered after the import started.
    struct Outcome {
        std::optional<Result<StagedKv>> imported;
        std::optional<Status> exported;
    };
    Outcome run(uint64_t room, const std::vector<int32_t>& decode_prompt, const std::vector<int32_t>& prefill_prompt,
                int64_t cached, const StagedKv& kv) {
        auto exporter = server->open_export(room);
        auto importer = import(room);
        importer->start(decode_prompt, cached, [] {});
        exporter->deliver(prefill_prompt, kv, [] {});
        Outcome outcome;
        outcome.imported = wait_for_news([&] { return importer->poll(); });
        outcome.exported = wait_for_news([&] { return exporter->poll(); });
        return outcome;
    }

    metrics::Registry registry;
    TransferMetrics metrics{registry};
    KvTransferConfig server_config;
    KvTransferConfig client_config;
    std::unique_ptr<KvTransferServer> server;
    std::unique_ptr<KvTransferClient> client;
};

void expect_same_kv(const StagedKv& got, const StagedKv& sent) {
    EXPECT_EQ(got.first_position, sent.first_position);
    EXPECT_EQ(got.end_position, sent.end_position);
    EXPECT_EQ(got.block_bytes, sent.block_bytes);
    ASSERT_EQ(got.blocks.size(), sent.blocks.size());
    for (size_t i = 0; i < got.blocks.size(); ++i) {
        EXPECT_EQ(got.blocks[i].group, sent.blocks[i].group);
        EXPECT_EQ(got.blocks[i].index, sent.blocks[i].index);
    }
    EXPECT_TRUE(got.bytes == sent.bytes);
}

TEST_F(DisaggTransfer, TcpMovesEveryBlockByteForByte) {
    server_config.path = TransferPath::Tcp;
    client_config.path = TransferPath::Tcp;
    start_server();
    StagedKv kv = random_kv(server_config.layout, 0, 40, 1);
    auto outcome = run(11, prompt_of(40), prompt_of(40), 0, kv);
    ASSERT_TRUE(outcome.imported && outcome.imported->ok()) << outcome.imported->error().message;
    ASSERT_TRUE(outcome.exported && outcome.exported->ok()) << outcome.exported->error().message;
    expect_same_kv(outcome.imported->value(), kv);
    EXPECT_EQ(metrics.bytes(TransferRole::Decode, false), static_cast<double>(kv.byte_count()));
    EXPECT_EQ(metrics.bytes(TransferRole::Prefill, false), static_cast<double>(kv.byte_count()));
    EXPECT_EQ(metrics.bytes(TransferRole::Decode, true), 0);
    EXPECT_NE(registry.render().find("tempered:kv_transfer_seconds_count{role=\"decode\"} 1"), std::string::npos);
}

TEST_F(DisaggTransfer, SharedMemoryMovesEveryBlockAndLeavesNoSegment) {
    client_config.path = TransferPath::Shm;
    start_server();
    StagedKv kv = random_kv(server_config.layout, 0, 50, 2);
    auto outcome = run(12, prompt_of(50), prompt_of(50), 0, kv);
    ASSERT_TRUE(outcome.imported->ok()) << outcome.imported->error().message;
    ASSERT_TRUE(outcome.exported->ok()) << outcome.exported->error().message;
    expect_same_kv(outcome.imported->value(), kv);
    EXPECT_EQ(metrics.bytes(TransferRole::Decode, true), static_cast<double>(kv.byte_count()));
    EXPECT_EQ(metrics.bytes(TransferRole::Decode, false), 0);
}

TEST_F(DisaggTransfer, AutoTakesSharedMemoryOnLoopbackUnlessThePrefillSaysTcp) {
    start_server();  // both auto
    StagedKv kv = random_kv(server_config.layout, 0, 20, 3);
    auto outcome = run(13, prompt_of(20), prompt_of(20), 0, kv);
    ASSERT_TRUE(outcome.imported->ok()) << outcome.imported->error().message;
    EXPECT_EQ(metrics.bytes(TransferRole::Decode, true), static_cast<double>(kv.byte_count()));

    server.reset();
    server_config.path = TransferPath::Tcp;
    start_server();
    outcome = run(14, prompt_of(20), prompt_of(20), 0, kv);
    ASSERT_TRUE(outcome.imported->ok()) << outcome.imported->error().message;
    expect_same_kv(outcome.imported->value(), kv);
    EXPECT_EQ(metrics.bytes(TransferRole::Decode, false), static_cast<double>(kv.byte_count()));
}

TEST_F(DisaggTransfer, CachedPositionsSkipTheLeadingBlocks) {
    start_server();
    StagedKv kv = random_kv(server_config.layout, 0, 70, 4);  // staged before the claim said 32
    auto exporter = server->open_export(15);
    auto importer = import(15);
    importer->start(prompt_of(70), 32, [] {});
    ASSERT_TRUE(eventually([&] { return exporter->claimed_cached_positions() == 32; }));
    exporter->deliver(prompt_of(70), kv, [] {});
    auto imported = wait_for_news([&] { return importer->poll(); });
    ASSERT_TRUE(imported && imported->ok()) << imported->error().message;
    const StagedKv& got = imported->value();
    EXPECT_EQ(got.first_position, 32);
    EXPECT_EQ(got.end_position, 70);
    ASSERT_EQ(got.blocks.size(), 3u);  // positions 32..79 in blocks 2, 3, 4 (one group)
    for (size_t i = 0; i < got.blocks.size(); ++i) EXPECT_EQ(got.blocks[i].index, static_cast<int64_t>(2 + i));
    size_t skipped = 2 * static_cast<size_t>(kv.block_bytes);
    EXPECT_TRUE(std::equal(got.bytes.begin(), got.bytes.end(), kv.bytes.begin() + static_cast<ptrdiff_t>(skipped)));
    EXPECT_TRUE(wait_for_news([&] { return exporter->poll(); })->ok());
}

TEST_F(DisaggTransfer, ClaimBeforeExportAndExportBeforeClaim) {
    start_server();
    StagedKv kv = random_kv(server_config.layout, 0, 30, 5);

    auto early_importer = import(16);
    early_importer->start(prompt_of(30), 16, [] {});
    ASSERT_TRUE(eventually([&] { return metrics.rooms_waiting(TransferRole::Prefill) == 1; }));  // the claim's room
    auto late_exporter = server->open_export(16);
    EXPECT_EQ(late_exporter->claimed_cached_positions(), 16);
    late_exporter->deliver(prompt_of(30), kv, [] {});
    auto imported = wait_for_news([&] { return early_importer->poll(); });
    ASSERT_TRUE(imported->ok()) << imported->error().message;
    EXPECT_EQ(imported->value().first_position, 16);
    EXPECT_TRUE(wait_for_news([&] { return late_exporter->poll(); })->ok());

    auto early_exporter = server->open_export(17);
    early_exporter->deliver(prompt_of(30), kv, [] {});
    std::this_thread::sleep_for(30ms);
    auto late_importer = import(17);
    late_importer->start(prompt_of(30), 0, [] {});
    imported = wait_for_news([&] { return late_importer->poll(); });
    ASSERT_TRUE(imported->ok()) << imported->error().message;
    expect_same_kv(imported->value(), kv);
    EXPECT_TRUE(wait_for_news([&] { return early_exporter->poll(); })->ok());
}

void expect_both_fail(const std::optional<Result<StagedKv>>& imported, const std::optional<Status>& exported,
                      const std::string& needle) {
    ASSERT_TRUE(imported.has_value());
    ASSERT_FALSE(imported->ok());
    EXPECT_NE(imported->error().message.find(needle), std::string::npos) << imported->error().message;
    ASSERT_TRUE(exported.has_value());
    ASSERT_FALSE(exported->ok());
    EXPECT_NE(exported->error().message.find(needle), std::string::npos) << exported->error().message;
}

TEST_F(DisaggTransfer, LayoutMismatchNamesTheDtypeOnBothSides) {
    client_config.layout = kv_layout_of(test_shape(DType::F32), kFingerprint);
    start_server();
    auto outcome = run(18, prompt_of(20), prompt_of(20), 0, random_kv(server_config.layout, 0, 20, 6));
    expect_both_fail(outcome.imported, outcome.exported, "KV dtype differs: prefill f16, decode f32");
    EXPECT_EQ(metrics.failures(TransferRole::Prefill, TransferFailureReason::Mismatch), 1);
    EXPECT_EQ(metrics.failures(TransferRole::Decode, TransferFailureReason::Rejected), 1);
}

TEST_F(DisaggTransfer, FingerprintMismatchIsRefused) {
    client_config.layout.model_fingerprint = kFingerprint + 1;
    start_server();
    auto outcome = run(19, prompt_of(20), prompt_of(20), 0, random_kv(server_config.layout, 0, 20, 7));
    expect_both_fail(outcome.imported, outcome.exported, "model fingerprint");
}

TEST_F(DisaggTransfer, PromptMismatchIsRefused) {
    start_server();
    auto outcome = run(20, prompt_of(20, 1), prompt_of(20), 0, random_kv(server_config.layout, 0, 20, 8));
    expect_both_fail(outcome.imported, outcome.exported, "the prompt of room 20 differs");
}

TEST_F(DisaggTransfer, AnExportNobodyClaimsTimesOut) {
    server_config.timeout = 300ms;
    start_server();
    auto exporter = server->open_export(21);
    // The room's result is set under its lock and the callback runs after, on the rooms' thread: poll() may see
    // the result a moment before the callback has run.
    std::atomic<bool> ready_called{false};
    exporter->deliver(prompt_of(20), random_kv(server_config.layout, 0, 20, 9), [&] { ready_called = true; });
    auto exported = wait_for_news([&] { return exporter->poll(); });
    ASSERT_TRUE(exported && !exported->ok());
    EXPECT_EQ(exported->error().message, "no decode server claimed room 21 within 0.3s");
    EXPECT_TRUE(eventually([&] { return ready_called.load(); }));
    EXPECT_EQ(metrics.failures(TransferRole::Prefill, TransferFailureReason::Timeout), 1);
}

TEST_F(DisaggTransfer, AbortMidTransferFailsBothSides) {
    server_config.path = TransferPath::Tcp;
    server_config.fault = parse_transfer_fault("abort_after_blocks:1").value();
    start_server();
    auto outcome = run(22, prompt_of(40), prompt_of(40), 0, random_kv(server_config.layout, 0, 40, 10));
    ASSERT_TRUE(outcome.imported && !outcome.imported->ok());
    EXPECT_NE(outcome.imported->error().message.find("room 22 from 127.0.0.1:"), std::string::npos);
    EXPECT_NE(outcome.imported->error().message.find("closed the connection"), std::string::npos)
        << outcome.imported->error().message;
    ASSERT_TRUE(outcome.exported && !outcome.exported->ok());
    EXPECT_NE(outcome.exported->error().message.find("aborted after 1 blocks"), std::string::npos)
        << outcome.exported->error().message;
    EXPECT_EQ(metrics.failures(TransferRole::Decode, TransferFailureReason::PeerClosed), 1);
}

TEST_F(DisaggTransfer, APauseDelaysButDoesNotBreakTheTransfer) {
    server_config.path = TransferPath::Tcp;
    server_config.fault = parse_transfer_fault("pause_after_blocks:1:0.05").value();
    start_server();
    StagedKv kv = random_kv(server_config.layout, 0, 40, 11);
    auto started = std::chrono::steady_clock::now();
    auto outcome = run(23, prompt_of(40), prompt_of(40), 0, kv);
    ASSERT_TRUE(outcome.imported->ok()) << outcome.imported->error().message;
    expect_same_kv(outcome.imported->value(), kv);
    EXPECT_GE(std::chrono::steady_clock::now() - started, 50ms);
}

TEST_F(DisaggTransfer, CancellingTheExportRejectsAWaitingClaim) {
    start_server();
    auto exporter = server->open_export(24);
    auto importer = import(24);
    importer->start(prompt_of(40), 16, [] {});
    ASSERT_TRUE(eventually([&] { return exporter->claimed_cached_positions() == 16; }));
    exporter->cancel();
    auto imported = wait_for_news([&] { return importer->poll(); });
    ASSERT_TRUE(imported && !imported->ok());
    EXPECT_NE(imported->error().message.find("the prefill request for room 24 ended"), std::string::npos)
        << imported->error().message;
    ASSERT_TRUE(eventually([&] { return metrics.rooms_waiting(TransferRole::Prefill) == 0; }));
    EXPECT_EQ(metrics.failures(TransferRole::Prefill, TransferFailureReason::Cancelled), 1);
    exporter->cancel();  // idempotent
}

TEST_F(DisaggTransfer, CancellingTheImportEndsItPromptly) {
    start_server();
    auto exporter = server->open_export(25);  // never delivered: the claim waits
    auto importer = import(25);
    bool ready_called = false;
    importer->start(prompt_of(40), 0, [&] { ready_called = true; });
    ASSERT_TRUE(eventually([&] { return metrics.rooms_waiting(TransferRole::Decode) == 1; }));
    auto cancelled_at = std::chrono::steady_clock::now();
    importer->cancel();
    auto imported = wait_for_news([&] { return importer->poll(); });
    ASSERT_TRUE(imported && !imported->ok());
    EXPECT_LT(std::chrono::steady_clock::now() - cancelled_at, 500ms);
    EXPECT_NE(imported->error().message.find("cancelled"), std::string::npos);
    EXPECT_FALSE(ready_called);
    exporter->cancel();
}

TEST_F(DisaggTransfer, NoServerAtTheAddressIsAClearError) {
    start_server();
    int port = server->port();
    server.reset();
    auto importer = client->open_import("127.0.0.1", port, 26);
    importer->start(prompt_of(20), 0, [] {});
    auto imported = wait_for_news([&] { return importer->poll(); });
    ASSERT_TRUE(imported && !imported->ok());
    EXPECT_NE(imported->error().message.find("KV transfer of room 26 from 127.0.0.1:" + std::to_string(port) +
                                             ": cannot connect"),
              std::string::npos)
        << imported->error().message;
}

TEST_F(DisaggTransfer, StoppingTheServerFailsItsOpenRooms) {
    start_server();
    auto exporter = server->open_export(27);
    server.reset();
    auto exported = exporter->poll();
    ASSERT_TRUE(exported && !exported->ok());
    EXPECT_NE(exported->error().message.find("stopped"), std::string::npos);
}

}  // namespace disagg_transfer_test
}  // namespace
}  // namespace tempered

namespace tempered {
namespace {
namespace disagg_transfer_test {

TEST_F(DisaggTransfer, AClaimAfterTheExportEndedHearsWhyAtOnce) {
    start_server();
    auto exporter = server->open_export(28);
    exporter->cancel();
    auto importer = import(28);
    auto started = std::chrono::steady_clock::now();
    importer->start(prompt_of(20), 0, [] {});
    auto imported = wait_for_news([&] { return importer->poll(); });
    ASSERT_TRUE(imported && !imported->ok());
    EXPECT_NE(imported->error().message.find("the prefill request for room 28 ended: cancelled"), std::string::npos)
        << imported->error().message;
    EXPECT_LT(std::chrono::steady_clock::now() - started, server_config.timeout);
}

// A decode that reads the header and leaves: the prefill's export fails naming the closed connection.
TEST_F(DisaggTransfer, ADecodeThatLeavesMidTransferFailsTheExport) {
    server_config.path = TransferPath::Tcp;
    start_server();
    auto exporter = server->open_export(29);
    exporter->deliver(prompt_of(40), random_kv(server_config.layout, 0, 40, 12), [] {});
    {
        auto deadline = std::chrono::steady_clock::now() + 1s;
        auto peer = Socket::connect("127.0.0.1", server->port(), deadline);
        ASSERT_TRUE(peer.ok()) << peer.error().message;
        auto prompt = prompt_of(40);
        ClaimFrame claim{29, server_config.layout, 40, prompt_hash(prompt), 0, false};
        ASSERT_TRUE(peer->send_all(encode_claim(claim), deadline).ok());
        auto header = read_frame(peer.value(), deadline);
        ASSERT_TRUE(header.ok());
        EXPECT_EQ(header->type, FrameType::KvHeader);
    }  // closed without ACK
    auto exported = wait_for_news([&] { return exporter->poll(); });
    ASSERT_TRUE(exported && !exported->ok());
    EXPECT_NE(exported->error().message.find("the decode server closed the connection"), std::string::npos)
        << exported->error().message;
    EXPECT_EQ(metrics.failures(TransferRole::Prefill, TransferFailureReason::PeerClosed), 1);
}

// A peer that announces a 4 GiB frame is refused before anything is allocated, and its room never opens.
TEST_F(DisaggTransfer, AHostileFrameIsRefusedWithAReject) {
    start_server();
    auto deadline = std::chrono::steady_clock::now() + 1s;
    auto peer = Socket::connect("127.0.0.1", server->port(), deadline);
    ASSERT_TRUE(peer.ok());
    std::vector<uint8_t> huge = {static_cast<uint8_t>(FrameType::Claim), 0xff, 0xff, 0xff, 0xff};
    ASSERT_TRUE(peer->send_all(huge, deadline).ok());
    auto reply = read_frame(peer.value(), deadline);
    ASSERT_TRUE(reply.ok()) << reply.error().message;
    ASSERT_EQ(reply->type, FrameType::Reject);
    auto message = decode_reject(reply->payload);
    ASSERT_TRUE(message.ok());
    EXPECT_NE(message.value().find("exceeds its limit"), std::string::npos) << message.value();
    EXPECT_EQ(metrics.rooms_waiting(TransferRole::Prefill), 0);
    EXPECT_EQ(metrics.failures(TransferRole::Prefill, TransferFailureReason::Protocol), 1);
}

}  // namespace disagg_transfer_test
}  // namespace
}  // namespace tempered

namespace tempered {
namespace {
namespace disagg_transfer_test {

TEST_F(DisaggTransfer, CachedPositionsInsideABlockAreRefused) {
    start_server();
    auto outcome = run(30, prompt_of(40), prompt_of(40), 20, random_kv(server_config.layout, 0, 40, 13));
    expect_both_fail(outcome.imported, outcome.exported, "not a multiple of the block size 16");
}

}  // namespace disagg_transfer_test
}  // namespace
}  // namespace tempered

namespace tempered {
namespace {
namespace disagg_transfer_test {

// A first frame announcing a large KV_BLOCKS payload: refused from its header, before anything is
// allocated for it, so 1024 such connections cost nothing.
TEST_F(DisaggTransfer, AFirstFrameLargerThanAClaimIsRefusedFromItsHeader) {
    start_server();
    auto deadline = std::chrono::steady_clock::now() + 1s;
    auto peer = Socket::connect("127.0.0.1", server->port(), deadline);
    ASSERT_TRUE(peer.ok());
    const uint32_t announced = 60u << 20;  // under the KV_BLOCKS limit, far over a claim's
    std::vector<uint8_t> header = {static_cast<uint8_t>(FrameType::KvBlocks), static_cast<uint8_t>(announced),
                                   static_cast<uint8_t>(announced >> 8), static_cast<uint8_t>(announced >> 16),
                                   static_cast<uint8_t>(announced >> 24)};
    ASSERT_TRUE(peer->send_all(header, deadline).ok());
    auto reply = read_frame(peer.value(), deadline);
    ASSERT_TRUE(reply.ok()) << reply.error().message;
    ASSERT_EQ(reply->type, FrameType::Reject);
    auto message = decode_reject(reply->payload);
    ASSERT_TRUE(message.ok());
    EXPECT_NE(message.value().find("were expected"), std::string::npos) << message.value();
    EXPECT_EQ(metrics.failures(TransferRole::Prefill, TransferFailureReason::Protocol), 1);
}

}  // namespace disagg_transfer_test
}  // namespace
}  // namespace tempered
