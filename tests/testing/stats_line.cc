#include "tests/testing/stats_line.h"

#include <map>
#include <regex>

namespace warp::testing {

RunStats ParseStatsLine(const std::string& output) {
  RunStats stats;
  const size_t begin = output.find("[prefill ") != std::string::npos ? output.find("[prefill ")
                                                                     : output.find("[decode ");
  if (begin == std::string::npos) return stats;
  const std::string line = output.substr(begin, output.find(']', begin) - begin);
  static const std::regex kPhase(
      R"((prefill|decode) (\d+) tokens [0-9.]+ tok/s: experts (\d+) hit / (\d+) miss \d+%)"
      R"((?:, (\d+) lookahead hits)?(?:, (\d+) certain hits)?(?:, \d+ unreported)?)"
      R"(, (?:misses )?read ([0-9.]+) (B|KiB|MiB|GiB|TiB))");
  static const std::map<std::string, double> kUnits = {{"B", 1.0},
                                                       {"KiB", 1024.0},
                                                       {"MiB", 1048576.0},
                                                       {"GiB", 1073741824.0},
                                                       {"TiB", 1099511627776.0}};
  auto number = [](const std::ssub_match& m) { return m.matched ? std::stoull(m.str()) : 0ull; };
  for (std::sregex_iterator it(line.begin(), line.end(), kPhase), end; it != end; ++it) {
    const std::smatch& m = *it;
    ++stats.phases;
    stats.tokens += number(m[2]);
    stats.hits += number(m[3]);
    stats.misses += number(m[4]);
    stats.lookahead_hits += number(m[5]);
    stats.certain_hits += number(m[6]);
    const double read = std::stod(m[7].str()) * kUnits.at(m[8].str());
    stats.read_bytes += read;
    if (m[1].str() == "decode") {
      stats.decode_read_bytes += read;
      stats.decode_tokens += number(m[2]);
      stats.decode_misses += number(m[4]);
    }
  }
  static const std::regex kWaves(R"(waves (\d+) over (\d+) layer passes)");
  if (std::smatch m; std::regex_search(line, m, kWaves)) {
    stats.waves = number(m[1]);
    stats.layer_passes = number(m[2]);
  }
  return stats;
}

}  // namespace warp::testing
