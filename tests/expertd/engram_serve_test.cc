// An expertd serving a model's engram tables (DeepSeek V4.1) like expert
// records, on a real daemon process: the tables in Describe, their 4 KiB
// records by key ({2^20 + layer, record}) over the fast path and gRPC, in one
// batch with experts, cached in the daemon's own engram cache, a record of no
// table or a corrupt one failing alone with a clear error; and computed's
// engram store reading rows through two daemons that split the records.

#include <fcntl.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "common/client/fanout_source.h"
#include "common/client/grpc_source.h"
#include "common/client/uds_source.h"
#include "common/format/engram_table.h"
#include "common/store/engram_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/daemon.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tiny_container.h"

namespace warp {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::warp::testing::Daemon;
using ::warp::testing::EngramRowByte;
using ::warp::testing::StatusIs;

constexpr uint64_t kRows = 40;  // 3 records of 15 rows of 264 bytes
constexpr uint32_t kRowBytes = 264;
constexpr uint32_t kPerRecord = 15;

class EngramServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WARP_ASSERT_OK(warp::testing::WriteTinyContainer(
        Model(), {.engram_layers = {1, 3}, .engram_rows = kRows}));
  }

  std::string Model() const { return (dir_.path() / "m.warp").string(); }

  // A daemon on a fast-path and a gRPC socket, with `extra` flags.
  void StartDaemon(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--model", Model(), "--listen",
                                      "fastpath:" + (dir_.path() / "fast").string(), "--listen",
                                      "unix:" + (dir_.path() / "grpc").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto daemon = Daemon::Start(args);
    WARP_ASSERT_OK(daemon);
    daemon_ = std::move(*daemon);
  }

  // Both transports' clients of the daemon.
  std::vector<std::unique_ptr<ExpertSource>> Clients() {
    std::vector<std::unique_ptr<ExpertSource>> clients;
    auto fast = UdsExpertSource::Connect({.address = daemon_->addresses().at(0)});
    EXPECT_TRUE(fast.ok()) << fast.status();
    if (fast.ok()) clients.push_back(std::move(*fast));
    auto grpc = GrpcExpertSource::Connect({.address = daemon_->addresses().at(1)});
    EXPECT_TRUE(grpc.ok()) << grpc.status();
    if (grpc.ok()) clients.push_back(std::move(*grpc));
    return clients;
  }

  uint64_t Counter(const std::string& name) {
    auto grpc = GrpcExpertSource::Connect({.address = daemon_->addresses().at(1)});
    EXPECT_TRUE(grpc.ok()) << grpc.status();
    if (!grpc.ok()) return 0;
    const std::map<std::string, uint64_t> counters = (*grpc)->Counters();
    auto it = counters.find(name);
    EXPECT_NE(it, counters.end()) << name;
    return it == counters.end() ? 0 : it->second;
  }

  // The rows of record `record` of the table of `layer`, as written.
  static void ExpectRecordRows(const ExpertRecord& record, uint32_t layer, uint64_t number) {
    ASSERT_EQ(record.record_bytes, kEngramRecordBytes);
    for (uint64_t r = 0; r < kPerRecord && number * kPerRecord + r < kRows; ++r) {
      for (uint32_t i = 0; i < kRowBytes; i += 37) {
        ASSERT_EQ(record.data[r * kRowBytes + i], EngramRowByte(layer, number * kPerRecord + r, i))
            << "layer " << layer << " record " << number << " row " << r << " byte " << i;
      }
    }
  }

  warp::testing::TempDir dir_;
  std::unique_ptr<Daemon> daemon_;
};

TEST_F(EngramServeTest, DescribeListsTheTablesAndTheirCache) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon({"--engram-cache", "64K"}));
  auto client = UdsExpertSource::Connect({.address = daemon_->addresses().at(0)});
  WARP_ASSERT_OK(client);
  const v1::DescribeReply& description = (*client)->description();
  ASSERT_EQ(description.engram_tables_size(), 2);
  EXPECT_EQ(description.engram_tables(1).layer(), 3u);
  EXPECT_EQ(description.engram_tables(1).rows(), kRows);
  EXPECT_EQ(description.engram_tables(1).row_bytes(), kRowBytes);
  EXPECT_EQ(description.engram_tables(1).records(), 3u);
  EXPECT_EQ(description.engram_cache_bytes(), 64u << 10);
}

TEST_F(EngramServeTest, RecordsComeAsWrittenOnBothTransportsInOneBatchWithExperts) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon());
  for (const auto& client : Clients()) {
    const std::vector<ExpertKey> keys = {{EngramKeyLayer(3), 2},
                                         {1, 0},
                                         {EngramKeyLayer(1), 0},
                                         {EngramKeyLayer(3), 1}};
    std::vector<absl::StatusOr<ExpertRecord>> records = client->ReadAll(keys);
    ASSERT_EQ(records.size(), keys.size());
    for (const auto& record : records) WARP_ASSERT_OK(record);
    ExpectRecordRows(*records[0], 3, 2);
    EXPECT_EQ(records[1]->data[5], warp::testing::RecordByte(1, 0, 5));  // the expert's
    ExpectRecordRows(*records[2], 1, 0);
    ExpectRecordRows(*records[3], 3, 1);
  }
  // The second client's reads were the first's, from the daemon's engram cache.
  EXPECT_EQ(Counter("expertd.engram.records_read"), 3u);
}

TEST_F(EngramServeTest, ACacheOfNothingReadsEachRequestAgain) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon({"--engram-cache", "0"}));
  for (const auto& client : Clients()) {
    auto records = client->ReadAll(std::vector<ExpertKey>{{EngramKeyLayer(1), 1}});
    WARP_ASSERT_OK(records[0]);
    ExpectRecordRows(*records[0], 1, 1);
  }
  EXPECT_EQ(Counter("expertd.engram.records_read"), 2u);
}

TEST_F(EngramServeTest, ARecordOfNoTableFailsAloneNamingIt) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon());
  for (const auto& client : Clients()) {
    auto records = client->ReadAll(std::vector<ExpertKey>{
        {EngramKeyLayer(3), 3}, {EngramKeyLayer(2), 0}, {EngramKeyLayer(3), 0}});
    EXPECT_THAT(records[0].status(),
                StatusIs(absl::StatusCode::kNotFound,
                         HasSubstr("record 3 of the engram table of layer 3: past its 3 records")));
    EXPECT_THAT(records[1].status(),
                StatusIs(absl::StatusCode::kNotFound,
                         HasSubstr("layer 1048578 expert 0: not a record of the engram tables")));
    WARP_EXPECT_OK(records[2]);
  }
}

TEST_F(EngramServeTest, ACorruptRecordIsDataLossNamingItEveryTime) {
  {  // one payload byte of record 1
    const std::string table = (dir_.path() / "m.warp" / "engram-L3.bin").string();
    const int fd = ::open(table.c_str(), O_RDWR);
    ASSERT_GE(fd, 0) << table;
    char byte = 0;
    ASSERT_EQ(::pread(fd, &byte, 1, 4200), 1);
    byte ^= 0x10;
    ASSERT_EQ(::pwrite(fd, &byte, 1, 4200), 1);
    ::close(fd);
  }
  ASSERT_NO_FATAL_FAILURE(StartDaemon());
  for (const auto& client : Clients()) {
    for (int attempt = 0; attempt < 2; ++attempt) {  // never cached: the same error again
      auto records = client->ReadAll(
          std::vector<ExpertKey>{{EngramKeyLayer(3), 1}, {EngramKeyLayer(3), 0}});
      EXPECT_THAT(records[0].status(),
                  StatusIs(absl::StatusCode::kDataLoss,
                           AllOf(HasSubstr("engram-L3.bin @4096: record 1 of the engram table of "
                                           "layer 3"),
                                 Not(HasSubstr(dir_.path().string())))));
      WARP_EXPECT_OK(records[1]);
    }
  }
}

// computed --stores: the engine's engram store reads through the daemons,
// each table's records split between the two that serve it.
TEST_F(EngramServeTest, RowsThroughTwoDaemonsSplittingTheRecords) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon());
  auto second = Daemon::Start({"--model", Model(), "--listen",
                               "unix:" + (dir_.path() / "second").string()});
  WARP_ASSERT_OK(second);
  std::vector<FanoutExpertSource::Member> members;
  auto fast = UdsExpertSource::Connect({.address = daemon_->addresses().at(0)});
  WARP_ASSERT_OK(fast);
  members.push_back({.name = "first", .source = std::move(*fast), .engram_layers = {1, 3}});
  auto grpc = GrpcExpertSource::Connect({.address = (*second)->addresses().at(0)});
  WARP_ASSERT_OK(grpc);
  members.push_back({.name = "second", .source = std::move(*grpc), .engram_layers = {3}});
  auto fanout = FanoutExpertSource::Create(std::move(members));
  WARP_ASSERT_OK(fanout);
  auto container = Container::Open(Model());
  WARP_ASSERT_OK(container);
  EngramStore store((*container)->manifest().engram, **fanout, {.cache_bytes = 1 << 20});
  std::vector<EngramRow> rows;
  for (uint64_t row : {0, 17, 39, 30}) rows.push_back({.table = 1, .row = row});
  rows.push_back({.table = 0, .row = 16});
  std::vector<std::byte> out(rows.size() * kRowBytes);
  WARP_ASSERT_OK(store.Rows(store.Fetch(rows), out));
  for (size_t r = 0; r < rows.size(); ++r) {
    const uint32_t layer = rows[r].table == 0 ? 1 : 3;
    for (uint32_t i = 0; i < kRowBytes; ++i) {
      ASSERT_EQ(out[r * kRowBytes + i], EngramRowByte(layer, rows[r].row, i)) << r << " " << i;
    }
  }
  EXPECT_EQ(store.counters().records_read, 4u);  // table 3's records 0, 1, 2; table 1's 1
  // Table 3's records 0 and 2 from the first daemon (with table 1's), 1 from the second.
  EXPECT_EQ(Counter("expertd.engram.records_read"), 3u);
}

}  // namespace
}  // namespace warp
