// The checks of every `vgpu` flag's value: the pure parsers (tables), then each subcommand's flags
// through the command line in process, where a bad value must be a one-line usage error (exit 2)
// naming the flag, the value and what is accepted, before anything runs.
#include "cli/flag_values.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "run_cli.h"

namespace vgpu::cli {
namespace {

using testing::CliResult;
using testing::RunVgpu;

TEST(ParseWholeNumber, Table) {
  struct Case {
    std::string text;
    int64_t min, max;
    std::optional<int64_t> want;
    std::string error;  // the message, when an error is wanted
  } const cases[] = {
      {"1", 1, 100, 1, ""},
      {"100", 1, 100, 100, ""},
      {"007", 1, 100, 7, ""},
      {"0", 0, 100, 0, ""},
      {"-0", 0, 100, 0, ""},
      {"0", 1, 100, std::nullopt, "'0' is too small (min 1)"},
      {"-3", 1, 20000, std::nullopt, "'-3' is too small (min 1)"},
      {"101", 1, 100, std::nullopt, "'101' is too large (max 100)"},
      // Beyond int64: still "too large", never a wrapped or negative value.
      {"99999999999999999999", 1, 100, std::nullopt,
       "'99999999999999999999' is too large (max 100)"},
      {"-99999999999999999999", 1, 100, std::nullopt,
       "'-99999999999999999999' is too small (min 1)"},
      {"1.5", 1, 100, std::nullopt, "'1.5' is not a whole number (accepted: 1..100)"},
      {"1e3", 1, 100, std::nullopt, "'1e3' is not a whole number (accepted: 1..100)"},
      {"0x10", 1, 100, std::nullopt, "'0x10' is not a whole number (accepted: 1..100)"},
      {"+5", 1, 100, std::nullopt, "'+5' is not a whole number (accepted: 1..100)"},
      {" 5", 1, 100, std::nullopt, "' 5' is not a whole number (accepted: 1..100)"},
      {"-", 1, 100, std::nullopt, "'-' is not a whole number (accepted: 1..100)"},
      {"abc", 1, 100, std::nullopt, "'abc' is not a whole number (accepted: 1..100)"},
      {"", 1, 100, std::nullopt, "empty value (accepted: 1..100)"},
  };
  for (const Case& c : cases) {
    auto got = ParseWholeNumber(c.text, c.min, c.max);
    if (c.want) {
      ASSERT_TRUE(got.ok()) << c.text << ": " << got.status().message();
      EXPECT_EQ(*got, *c.want) << c.text;
    } else {
      ASSERT_FALSE(got.ok()) << c.text;
      EXPECT_EQ(got.status().message(), c.error) << c.text;
    }
  }
}

TEST(ParseMemoryMiB, PlainMiBAndTheUnitsLibvgpuReads) {
  constexpr uint64_t kMax = uint64_t{1} << 30;
  struct Case {
    std::string text;
    uint64_t want;
  } const ok[] = {
      {"4096", 4096},   {"1", 1},        {"3000m", 3000},  {"3000M", 3000},      {"3000MiB", 3000},
      {"3000MB", 3000}, {"3g", 3072},    {"3G", 3072},     {"3Gi", 3072},        {"3GiB", 3072},
      {"3gb", 3072},    {"1t", 1048576}, {"1Ti", 1048576}, {"1073741824", kMax},
  };
  for (const Case& c : ok) {
    auto got = ParseMemoryMiB(c.text, kMax);
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.status().message();
    EXPECT_EQ(*got, c.want) << c.text;
  }
  struct Bad {
    std::string text;
    std::string error_start;
  } const bad[] = {
      {"0", "'0' is too small (min 1 MiB)"},
      {"0g", "'0g' is too small (min 1 MiB)"},
      {"1073741825", "'1073741825' is too large (max 1073741824 MiB)"},
      {"1025t", "'1025t' is too large (max 1073741824 MiB)"},
      {"99999999999999999999", "'99999999999999999999' is too large (max 1073741824 MiB)"},
      {"99999999999999999999g", "'99999999999999999999g' is too large (max 1073741824 MiB)"},
      {"-1", "'-1' is negative"},
      {"1.5g", "'1.5g' is not a whole number of units"},
      {"3k", "'3k' has an unknown unit 'k'"},
      {"3gg", "'3gg' has an unknown unit 'gg'"},
      {"3 g", "'3 g' has an unknown unit ' g'"},
      {"0x10", "'0x10' has an unknown unit 'x10'"},
      {"g", "'g' is not a size"},
      {"", "empty value"},
  };
  for (const Bad& c : bad) {
    auto got = ParseMemoryMiB(c.text, kMax);
    ASSERT_FALSE(got.ok()) << c.text;
    EXPECT_EQ(got.status().message().rfind(c.error_start, 0), 0u) << got.status().message();
    // Every refusal says which forms are accepted.
    if (c.error_start.find("too") == std::string::npos) {
      EXPECT_NE(got.status().message().find("accepted: MiB as a whole number"), std::string::npos)
          << got.status().message();
    }
  }
}

// One bad value on the command line: exit 2, one line on stderr, naming the flag and the value.
void ExpectUsageError(const std::vector<std::string>& args, const std::string& want) {
  std::string joined;
  for (const auto& a : args) joined += a + " ";
  const CliResult r = RunVgpu(args);
  EXPECT_EQ(r.rc, 2) << joined << ": " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << joined << ": " << r.err;
  EXPECT_NE(r.err.find(want), std::string::npos) << joined << ": " << r.err;
  EXPECT_EQ(r.out, "") << joined;
}

TEST(FlagValues, SimFlagsAreBoundedAndNamed) {
  const struct {
    std::vector<std::string> args;
    std::string want;
  } cases[] = {
      // Before: `--nodes -3` ran the built-in demo with exit 0.
      {{"sim", "--nodes", "-3"}, "--nodes: '-3' is too small (min 1)"},
      {{"sim", "--nodes", "-3", "--pods", "5"}, "--nodes: '-3' is too small (min 1)"},
      {{"sim", "--nodes", "0", "--pods", "5"}, "--nodes: '0' is too small (min 1)"},
      {{"sim", "--nodes", "", "--pods", "5"}, "--nodes: empty value (accepted: 1..10000)"},
      {{"sim", "--nodes", "1.5", "--pods", "5"}, "--nodes: '1.5' is not a whole number"},
      {{"sim", "--nodes", "2000000000", "--pods", "5"},
       "--nodes: '2000000000' is too large (max 10000)"},
      {{"sim", "--nodes", "99999999999999999999", "--pods", "5"}, "is too large (max 10000)"},
      {{"sim", "--nodes", "3", "--pods", "2000000000"},
       "--pods: '2000000000' is too large (max 100000)"},
      {{"sim", "--nodes", "3", "--pods", "x"}, "--pods: 'x' is not a whole number"},
      {{"sim", "--nodes", "3", "--pods", "3", "--gpus-per-node", "0"},
       "--gpus-per-node: '0' is too small (min 1)"},
      {{"sim", "--nodes", "3", "--pods", "3", "--gpus-per-node", "2000000000"},
       "--gpus-per-node: '2000000000' is too large (max 64)"},
      {{"sim", "--nodes", "3", "--pods", "3", "--seed", "-1"}, "--seed: '-1' is too small (min 0)"},
      // Before: 100,000 kubelet workers aborted the process (std::system_error from std::thread).
      {{"sim", "--kubelet-workers", "100000"}, "--kubelet-workers: '100000' is too large (max 64)"},
      {{"sim", "--kubelet-workers", "0"}, "--kubelet-workers: '0' is too small (min 1)"},
      {{"sim", "--kubelet-workers", "-1"}, "--kubelet-workers: '-1' is too small (min 1)"},
      {{"sim", "--max-rows", "-1"}, "--max-rows: '-1' is too small (min 0)"},
      {{"sim", "--plugins", "grpcx"},
       "--plugins: 'grpcx' is not one of grpc, inprocess, allocator, auto"},
      {{"sim", "--async-bind", ""}, "--async-bind: '' is not one of on, off, auto"},
      {{"sim", "--node-policy", "tightest"},
       "--node-policy: 'tightest' is not a node policy (binpack or spread)"},
      {{"sim", "--gpu-policy", ""}, "--gpu-policy: '' is not a GPU policy"},
      {{"sim", "--topology", ""}, "--topology: empty value"},
      {{"sim", "--scenario", ""}, "--scenario: empty value"},
      // Conflicting or incomplete: before, --scenario silently won over --nodes and --nodes alone
      // or --gpus-per-node alone ran the demo.
      {{"sim", "--nodes", "3"}, "--nodes requires --pods"},
      {{"sim", "--pods", "3"}, "--pods requires --nodes"},
      {{"sim", "--gpus-per-node", "4"}, "--gpus-per-node requires --nodes"},
      {{"sim", "--seed", "4"}, "--seed requires --nodes"},
      {{"sim", "--scenario", "x.yaml", "--nodes", "3", "--pods", "3"},
       "--scenario excludes --nodes"},
      {{"sim", "--nodes", "3", "--nodes", "4", "--pods", "3"}, "--nodes"},
  };
  for (const auto& c : cases) ExpectUsageError(c.args, c.want);
}

TEST(FlagValues, RunFlagsAreBoundedAndNamed) {
  const struct {
    std::vector<std::string> args;
    std::string want;
  } cases[] = {
      // Before: "Value 3g not in range 1 to 1099511627776", though 3g is what users type.
      {{"run", "--gpumem", "3k", "--", "true"},
       "--gpumem: '3k' has an unknown unit 'k' (accepted: MiB"},
      {{"run", "--gpumem", "0", "--", "true"}, "--gpumem: '0' is too small (min 1 MiB)"},
      {{"run", "--gpumem", "-5", "--", "true"}, "--gpumem: '-5' is negative"},
      {{"run", "--gpumem", "99999999999999999999", "--", "true"},
       "--gpumem: '99999999999999999999' is too large (max 1073741824 MiB)"},
      // Before: 0x10 was read as hex, 16 MiB.
      {{"run", "--gpumem", "0x10", "--", "true"}, "--gpumem: '0x10' has an unknown unit"},
      {{"run", "--gpumem", "", "--", "true"}, "--gpumem: empty value"},
      {{"run", "--gpumem-percent", "0", "--", "true"},
       "--gpumem-percent: '0' is too small (min 1)"},
      {{"run", "--gpumem-percent", "101", "--", "true"},
       "--gpumem-percent: '101' is too large (max 100)"},
      {{"run", "--gpumem-percent", "50.5", "--", "true"},
       "--gpumem-percent: '50.5' is not a whole number (accepted: 1..100)"},
      {{"run", "--gpucores", "-1", "--", "true"}, "--gpucores: '-1' is too small (min 0)"},
      {{"run", "--gpucores", "99999999999", "--", "true"},
       "--gpucores: '99999999999' is too large (max 100)"},
      {{"run", "--gpumem", "1g", "--gpumem-percent", "5", "--", "true"},
       "--gpumem excludes --gpumem-percent"},
      // Before: an empty --gpus meant every GPU, an empty --region or --lib the default.
      {{"run", "--gpus", "", "--", "true"}, "--gpus: empty value"},
      {{"run", "--region", "", "--", "true"}, "--region: empty value"},
      {{"run", "--lib", "", "--", "true"}, "--lib: empty value"},
      {{"run", "--region-group", "", "--", "true"}, "--region-group: empty value"},
  };
  for (const auto& c : cases) ExpectUsageError(c.args, c.want);
}

TEST(FlagValues, TopFlagsAreBoundedAndNamed) {
  ExpectUsageError({"top", "--width", "5"}, "--width: '5' is too small (min 20)");
  ExpectUsageError({"top", "--width", "99999999999999999999"},
                   "--width: '99999999999999999999' is too large (max 1000)");
  ExpectUsageError({"top", "--width", "-1"}, "--width: '-1' is too small (min 20)");
  ExpectUsageError({"top", "--url", ""}, "--url: empty value");
  ExpectUsageError({"top", "--file", ""}, "--file: empty value");
}

}  // namespace
}  // namespace vgpu::cli
