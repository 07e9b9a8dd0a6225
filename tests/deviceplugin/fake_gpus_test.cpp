#include "deviceplugin/fake_gpus.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace vgpu::deviceplugin {
namespace {

using namespace std::chrono_literals;

TEST(ParseFakeGpus, Valid) {
  auto g = ParseFakeGpus("count=2,memory=40960,model=NVIDIA A100, PCIe,numa=1", "n1");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ(g->size(), 2u);
  EXPECT_EQ((*g)[0].uuid, "GPU-fake-n1-0");
  EXPECT_EQ((*g)[1].index, 1);
  EXPECT_EQ((*g)[1].model, "NVIDIA A100, PCIe");  // commas inside a value survive
  EXPECT_EQ((*g)[1].memory_mib, 40960);
  EXPECT_EQ((*g)[1].numa, 1);

  auto u = ParseFakeGpus("uuids=GPU-x;GPU-y;GPU-z", "n1");
  ASSERT_TRUE(u.ok());
  ASSERT_EQ(u->size(), 3u);
  EXPECT_EQ((*u)[2].uuid, "GPU-z");
  EXPECT_EQ((*u)[2].memory_mib, 81559);
  EXPECT_EQ((*u)[2].model, "NVIDIA H100 80GB HBM3");
}

TEST(ParseFakeGpuSpec, Topology) {
  auto none = ParseFakeGpuSpec("count=2", "n1");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->topology.has_value());  // no topology: no pair scores

  // The topology's commas do not end the value; a later key still does.
  auto f = ParseFakeGpuSpec("count=4,topology=0-2=node+nv4,1-3=single,*=system,numa=1", "n1");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ(f->gpus.size(), 4u);
  EXPECT_EQ(f->gpus[3].numa, 1);
  ASSERT_TRUE(f->topology.has_value());
  const codec::DevicePairScores s = codec::ScoreTopology(*f->topology);
  EXPECT_EQ(s[0].uuid, "GPU-fake-n1-0");
  EXPECT_EQ(s[0].scores.at("GPU-fake-n1-2"), 420);
  EXPECT_EQ(s[1].scores.at("GPU-fake-n1-3"), 50);
  EXPECT_EQ(s[0].scores.at("GPU-fake-n1-1"), 10);

  auto d = ParseFakeGpuSpec("uuids=GPU-a;GPU-b,topology=default", "n1");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(codec::ScoreTopology(*d->topology)[1].scores.at("GPU-a"), 420);

  auto bad = ParseFakeGpuSpec("count=2,topology=0-5=node", "n1");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("beyond the 2 GPUs"), std::string::npos)
      << bad.status().ToString();
}

TEST(ParseFakeGpus, InvalidSpecsNameTheProblem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "count"},
      {"count=0", "count"},
      {"count=x", "count: 'x' is not a whole number"},
      // Past int64: too large, never "not a non-negative integer".
      {"count=1,memory=99999999999999999999", "memory: '99999999999999999999' is too large"},
      {"count=2,uuids=GPU-a", "1 uuids"},
      {"count=1,colour=red", "colour"},
      {"count=1,memory=0", "memory"},
      {"count", "key=value"},
      {"count=1,faults=relative/dir", "absolute folder"},
      {"count=1,faults=", "absolute folder"},
  };
  for (const auto& [spec, fragment] : cases) {
    auto g = ParseFakeGpus(spec, "n");
    ASSERT_FALSE(g.ok()) << spec;
    EXPECT_NE(g.status().message().find(fragment), std::string::npos)
        << spec << ": " << g.status().message();
  }
}

TEST(FakeGpuBackend, DeliversInjectedXidsAndResponsiveness) {
  FakeGpuBackend b(*ParseFakeGpus("count=1", "n"));
  auto none = b.WaitXid(1ms);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  b.InjectXid({"GPU-fake-n-0", 79});
  auto got = b.WaitXid(1ms);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->xid, 79u);
  EXPECT_TRUE(b.Responds("GPU-fake-n-0"));
  b.SetResponding("GPU-fake-n-0", false);
  EXPECT_FALSE(b.Responds("GPU-fake-n-0"));
}

// A file named after a GPU in the faults folder silences just that GPU, for as long as it exists.
TEST(FakeGpuBackend, FaultsFolderSilencesAGpuWhileItsFileExists) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("vgpu-fake-faults-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  Result<FakeGpus> spec = ParseFakeGpuSpec("count=2,faults=" + dir.string() + ",numa=0", "n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->faults_dir, dir.string());
  FakeGpuBackend b(std::move(*spec));
  // No folder yet: every GPU answers.
  EXPECT_TRUE(b.Responds("GPU-fake-n-0"));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "GPU-fake-n-0").put('\n');
  EXPECT_FALSE(b.Responds("GPU-fake-n-0"));
  EXPECT_TRUE(b.Responds("GPU-fake-n-1"));
  std::filesystem::remove(dir / "GPU-fake-n-0");
  EXPECT_TRUE(b.Responds("GPU-fake-n-0"));
  // The folder does not override a GPU silenced by the test hook.
  b.SetResponding("GPU-fake-n-1", false);
  EXPECT_FALSE(b.Responds("GPU-fake-n-1"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace vgpu::deviceplugin
