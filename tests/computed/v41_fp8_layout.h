#pragma once

// A checkpoint in DeepSeek V4.1 Flash's FP8 layout for the converter and plan
// tests: the deepseek_v4_native fixture with every dense F8_E4M3 `X.weight`'s
// E8M0 `X.scale` re-tiled from 128x128 to 32x32 blocks (each tile its 128-block's
// exponent moved by -1, 0 or +1, so that neighbouring tiles differ) and
// quantization_config.weight_block_size [32, 32], as the release's config.json.

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace warp::computed::v41_layout {

// One tensor of a single-file safetensors checkpoint, with its bytes.
struct Tensor {
  std::string dtype;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> bytes;
};

// The tensors of `path`, by name (the header's __metadata__ is dropped).
inline std::map<std::string, Tensor> ReadSafetensors(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  std::string header(n, '\0');
  in.read(header.data(), static_cast<std::streamsize>(n));
  const std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  std::map<std::string, Tensor> tensors;
  const nlohmann::json root = nlohmann::json::parse(header);  // outlives the loop, unlike a temporary
  for (const auto& [name, entry] : root.items()) {
    if (name == "__metadata__") continue;
    const uint64_t begin = entry["data_offsets"][0], end = entry["data_offsets"][1];
    tensors[name] = {entry["dtype"], entry["shape"].get<std::vector<uint64_t>>(),
                     std::vector<uint8_t>(data.begin() + begin, data.begin() + end)};
  }
  return tensors;
}

inline void WriteSafetensors(const std::filesystem::path& path,
                             const std::map<std::string, Tensor>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    header[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');
  const uint64_t size = text.size();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(&size), 8);
  out << text;
  for (const auto& [name, t] : tensors) {
    out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
  }
}

// The scale grid of a [rows, cols] matrix in tiles of `tile`.
inline std::vector<uint64_t> Grid(const std::vector<uint64_t>& shape, uint64_t tile) {
  return {(shape[0] + tile - 1) / tile, (shape[1] + tile - 1) / tile};
}

// Copies tests/fixtures/deepseek_v4_native (`fixture`) to `to` in V4.1's layout.
// Returns the names of the re-tiled weights.
inline std::vector<std::string> WriteV41Layout(const std::filesystem::path& fixture,
                                               const std::filesystem::path& to) {
  std::filesystem::copy(fixture, to, std::filesystem::copy_options::recursive);
  std::map<std::string, Tensor> tensors = ReadSafetensors(to / "model.safetensors");
  std::vector<std::string> retiled;
  for (auto& [name, weight] : tensors) {
    if (weight.dtype != "F8_E4M3" || !name.ends_with(".weight")) continue;
    auto scale = tensors.find(name.substr(0, name.size() - 7) + ".scale");
    if (scale == tensors.end() || scale->second.shape != Grid(weight.shape, 128)) continue;
    const std::vector<uint64_t> grid = Grid(weight.shape, 32);
    std::vector<uint8_t> tiles(grid[0] * grid[1]);
    for (uint64_t i = 0; i < grid[0]; ++i) {
      for (uint64_t j = 0; j < grid[1]; ++j) {
        const int s = scale->second.bytes[(i / 4) * scale->second.shape[1] + j / 4];
        tiles[i * grid[1] + j] = static_cast<uint8_t>(s + static_cast<int>((i + 2 * j) % 3) - 1);
      }
    }
    scale->second.shape = grid;
    scale->second.bytes = std::move(tiles);
    retiled.push_back(name);
  }
  WriteSafetensors(to / "model.safetensors", tensors);
  std::ifstream in(to / "config.json");
  nlohmann::ordered_json config = nlohmann::ordered_json::parse(in);
  in.close();
  config["quantization_config"]["weight_block_size"] = {32, 32};
  std::ofstream(to / "config.json") << config.dump(2);
  return retiled;
}

}  // namespace warp::computed::v41_layout
