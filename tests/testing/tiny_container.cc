#include "tests/testing/tiny_container.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/format/container.h"
#include "absl/strings/str_cat.h"
#include "common/format/container_writer.h"
#include "common/format/engram_table.h"
#include "common/io/file.h"
#include "common/status.h"

namespace warp::testing {

std::byte RecordByte(uint32_t layer, uint32_t expert, uint64_t i) {
  return static_cast<std::byte>((layer * 31 + expert * 7 + i) & 0xff);
}

std::byte EngramRowByte(uint32_t layer, uint64_t row, uint32_t i) {
  return static_cast<std::byte>((layer * 17 + row * 13 + i) & 0xff);
}

absl::StatusOr<Manifest> WriteTinyContainer(const std::filesystem::path& dir,
                                            const TinyContainerOptions& options) {
  Manifest header;
  header.architecture = "test";
  header.config = {{"num_experts", options.num_experts}};
  header.fingerprint = options.fingerprint;
  header.source = "tests/testing/tiny_container";
  WARP_ASSIGN_OR_RETURN(auto writer, ContainerWriter::Create(dir, std::move(header), {}));
  auto fill = [](uint64_t offset, std::span<std::byte> out) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::byte>((offset + i) % 251);
  };
  WARP_RETURN_IF_ERROR(writer->AddTrunkTensor(
      {.name = "model.norm.weight", .format = TensorFormat::kF32, .shape = {32}}, fill, fill));
  WARP_RETURN_IF_ERROR(writer->AddTrunkTensor(
      {.name = "lm_head.weight", .format = TensorFormat::kQ8B32, .shape = {4, 32}}, fill, fill));
  const uint64_t rows = options.rows;
  const std::vector<TensorSpec> matrices = {
      {.name = "gate_proj", .format = TensorFormat::kF32, .shape = {rows, 32}},
      {.name = "up_proj", .format = TensorFormat::kF32, .shape = {rows, 32}},
      {.name = "down_proj", .format = TensorFormat::kF32, .shape = {32, rows}},
  };
  for (uint32_t layer = 1; layer <= options.num_layers; ++layer) {
    const BankEntry bank = LayoutBank(layer, options.num_experts, matrices);
    WARP_RETURN_IF_ERROR(writer->BeginBank(bank));
    for (uint32_t expert = 0; expert < options.num_experts; ++expert) {
      std::span<std::byte> record = writer->NextRecord();
      for (uint64_t i = 0; i < bank.payload_bytes; ++i) record[i] = RecordByte(layer, expert, i);
      writer->CommitRecord();
    }
    WARP_RETURN_IF_ERROR(writer->EndBank());
  }
  for (uint32_t layer : options.engram_layers) {
    const EngramTableEntry table{.layer = layer,
                                 .file = absl::StrCat("engram-L", layer, ".bin"),
                                 .rows = options.engram_rows,
                                 .row_bytes = 264};
    const uint32_t per_record = EngramRowsPerRecord(table.row_bytes);
    WARP_RETURN_IF_ERROR(writer->BeginEngramTable(table));
    for (uint64_t record = 0; record < EngramRecords(table); ++record) {
      std::span<std::byte> bytes = writer->NextRecord();
      std::memset(bytes.data(), 0, uint64_t{per_record} * table.row_bytes);
      for (uint64_t r = 0; r < per_record && record * per_record + r < table.rows; ++r) {
        for (uint32_t i = 0; i < table.row_bytes; ++i) {
          bytes[r * table.row_bytes + i] = EngramRowByte(layer, record * per_record + r, i);
        }
      }
      writer->CommitRecord();
    }
    WARP_RETURN_IF_ERROR(writer->EndBank());
  }
  WARP_RETURN_IF_ERROR(writer->Finish());
  return writer->manifest();
}

absl::Status FlipBankByte(const std::filesystem::path& dir, uint32_t layer, uint64_t offset) {
  const std::string path = (dir / BankFileName(layer)).string();
  const int fd = ::open(path.c_str(), O_RDWR);
  if (fd < 0) return ErrnoToStatus(errno, path);
  unsigned char byte = 0;
  bool ok = ::pread(fd, &byte, 1, offset) == 1;
  byte ^= 0x20;
  ok = ok && ::pwrite(fd, &byte, 1, offset) == 1;
  ::close(fd);
  return ok ? absl::OkStatus() : absl::DataLossError(path + ": cannot flip a byte");
}

}  // namespace warp::testing
