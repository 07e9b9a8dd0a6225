#include "cli/run_env.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace vgpu::run {
namespace {

TEST(ParseGpuList, Table) {
  struct Case {
    std::string in;
    bool ok;
    size_t count;
  } const cases[] = {
      {"0", true, 1},
      {"0,1", true, 2},
      {"GPU-8f3a2c1e-0000-0000-0000-000000000001,1", true, 2},
      {"MIG-abc", true, 1},
      {"", false, 0},
      {"0,", false, 0},
      {"a", false, 0},
      {"0,0", false, 0},
      {"-1", false, 0},
      {"0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16", false, 0},
  };
  for (const auto& c : cases) {
    auto r = ParseGpuList(c.in);
    EXPECT_EQ(r.ok(), c.ok) << c.in;
    if (c.ok && r.ok()) {
      EXPECT_EQ(r->size(), c.count) << c.in;
    }
  }
}

TEST(BuildRunEnvironment, PerVisibleDeviceLimits) {
  RunOptions o;
  o.gpus = "2,0";
  o.gpumem_mib = 4096;
  o.gpucores = 30;
  auto env = BuildRunEnvironment(o, "/lib/libvgpu.so", "/tmp/r.cache", "");
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  const EnvMap want{
      {"LD_PRELOAD", "/lib/libvgpu.so"},       {"CUDA_DEVICE_MEMORY_SHARED_CACHE", "/tmp/r.cache"},
      {"CUDA_VISIBLE_DEVICES", "2,0"},         {"NVIDIA_VISIBLE_DEVICES", "2,0"},
      {"CUDA_DEVICE_MEMORY_LIMIT_0", "4096m"}, {"CUDA_DEVICE_MEMORY_LIMIT_1", "4096m"},
      {"CUDA_DEVICE_SM_LIMIT_0", "30"},        {"CUDA_DEVICE_SM_LIMIT_1", "30"}};
  EXPECT_EQ(*env, want);
}

TEST(BuildRunEnvironment, AllDevicesPercentAndInheritedPreload) {
  RunOptions o;
  o.gpumem_percent = 50;
  o.oom_killer = true;
  auto env = BuildRunEnvironment(o, "/l.so", "/r", "/other.so");
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->at("LD_PRELOAD"), "/l.so:/other.so");  // ours first
  EXPECT_EQ(env->at("CUDA_DEVICE_MEMORY_LIMIT"), "50%");
  EXPECT_EQ(env->at("ACTIVE_OOM_KILLER"), "true");
  EXPECT_EQ(env->count("CUDA_VISIBLE_DEVICES"), 0u);
  EXPECT_EQ(env->count("CUDA_DEVICE_SM_LIMIT"), 0u);
}

// --mode mps: MPS's own variables beside libvgpu's; the share and pinned memory per visible GPU.
TEST(BuildRunEnvironment, MpsModeTable) {
  struct Case {
    const char* name;
    std::string gpus;
    std::optional<uint64_t> mib;
    std::optional<int> percent;
    std::optional<int> cores;
    const char* want_share;   // nullptr: not set
    const char* want_pinned;  // nullptr: not set
  } const cases[] = {
      {"one GPU", "", 3000, std::nullopt, 50, "50", "0=3000M"},
      {"two GPUs", "1,0", 2048, std::nullopt, 30, "30", "0=2048M,1=2048M"},
      {"whole GPU is no share", "", 1024, std::nullopt, 100, nullptr, "0=1024M"},
      {"0 cores is no share", "", std::nullopt, std::nullopt, 0, nullptr, nullptr},
      {"percent memory is libvgpu's", "", std::nullopt, 25, 70, "70", nullptr},
  };
  for (const Case& c : cases) {
    RunOptions o;
    o.gpus = c.gpus;
    o.gpumem_mib = c.mib;
    o.gpumem_percent = c.percent;
    o.gpucores = c.cores;
    o.mps = true;
    o.mps_pipe_dir = "/tmp/vgpu-mps-0/pipe";
    auto env = BuildRunEnvironment(o, "/l.so", "/r", "");
    ASSERT_TRUE(env.ok()) << c.name << ": " << env.status().ToString();
    EXPECT_EQ(env->at("VGPU_SHARING_MODE"), "mps") << c.name;
    EXPECT_EQ(env->at("CUDA_MPS_PIPE_DIRECTORY"), "/tmp/vgpu-mps-0/pipe") << c.name;
    const auto get = [&](const char* k) {
      return env->count(k) != 0 ? env->at(k) : std::string("(unset)");
    };
    EXPECT_EQ(get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"),
              c.want_share != nullptr ? c.want_share : "(unset)")
        << c.name;
    EXPECT_EQ(get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"),
              c.want_pinned != nullptr ? c.want_pinned : "(unset)")
        << c.name;
  }
  RunOptions plain;
  plain.gpucores = 50;
  auto env = BuildRunEnvironment(plain, "/l.so", "/r", "");
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->count("VGPU_SHARING_MODE"), 0u);
  EXPECT_EQ(env->count("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), 0u);
  RunOptions relative;
  relative.mps = true;
  relative.mps_pipe_dir = "pipe";
  EXPECT_FALSE(BuildRunEnvironment(relative, "/l.so", "/r", "").ok());
}

TEST(BuildRunEnvironment, RejectsBadOptions) {
  struct Case {
    RunOptions o;
    std::string message_part;
  };
  std::vector<Case> cases(5);
  cases[0].o.gpumem_mib = 1;
  cases[0].o.gpumem_percent = 1;
  cases[0].message_part = "exclude";
  cases[1].o.gpumem_percent = 0;
  cases[1].message_part = "1..100";
  cases[2].o.gpucores = 101;
  cases[2].message_part = "0..100";
  cases[3].o.gpus = "x";
  cases[3].message_part = "--gpus";
  cases[4].o.gpumem_mib = 0;
  cases[4].message_part = "at least 1";
  for (const auto& c : cases) {
    auto env = BuildRunEnvironment(c.o, "/l.so", "/r", "");
    ASSERT_FALSE(env.ok()) << c.message_part;
    EXPECT_EQ(env.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(env.status().message().find(c.message_part), std::string::npos)
        << env.status().message();
  }
}

TEST(CheckGpusPresent, IndicesAndUuids) {
  const std::vector<HostGpu> one = {{0, "GPU-0fc3eda5-1111-2222-3333-444444444444"}};
  const std::vector<HostGpu> two = {{0, "GPU-0fc3eda5-1111-2222-3333-444444444444"},
                                    {1, "GPU-0fc3eda5-9999-2222-3333-444444444444"}};
  struct Case {
    std::vector<std::string> gpus;
    const std::vector<HostGpu>* host;
    std::string error;  // empty: present
  };
  const Case cases[] = {
      {{"0"}, &one, ""},
      {{"GPU-0fc3eda5-1111-2222-3333-444444444444"}, &one, ""},
      {{"GPU-0FC3EDA5-1111-2222-3333-444444444444"}, &one, ""},  // letter case ignored
      {{"GPU-0fc3eda5-1"}, &two, ""},                            // a prefix naming one GPU
      {{"0", "1"}, &two, ""},
      {{"MIG-2f6e3a7c-0000-0000-0000-000000000000"}, &one, ""},  // not checked
      {{"5"},
       &one,
       "--gpus 5: no such GPU (this node has 1: 0 GPU-0fc3eda5-1111-2222-3333-444444444444)"},
      {{"0", "1"}, &one, "--gpus 1: no such GPU (this node has 1: 0 GPU-0fc3eda5-1111"},
      {{"GPU-deadbeef"},
       &two,
       "--gpus GPU-deadbeef: no such GPU (this node has 2: 0 GPU-0fc3eda5-1111-2222-3333-"
       "444444444444, 1 GPU-0fc3eda5-9999-2222-3333-444444444444)"},
      {{"GPU-0fc3eda5"}, &two, "--gpus GPU-0fc3eda5: names 2 GPUs; give more of the UUID"},
  };
  for (const auto& c : cases) {
    const Status st = CheckGpusPresent(c.gpus, *c.host);
    if (c.error.empty()) {
      EXPECT_TRUE(st.ok()) << c.gpus.front() << ": " << st.ToString();
    } else {
      ASSERT_FALSE(st.ok()) << c.gpus.front();
      EXPECT_EQ(st.message().rfind(c.error, 0), 0u) << st.message();
    }
  }
  const Status none = CheckGpusPresent({"0"}, {});
  EXPECT_EQ(none.message(), "--gpus 0: no such GPU (this node has no GPU)");
}

// Inherited limit variables would beat the flags (libvgpu prefers `_<i>`): they are removed, the
// rest of the environment is the caller's.
TEST(InheritedLimitsToDrop, LimitVariablesTheRunDoesNotSet) {
  const EnvMap env{{"CUDA_DEVICE_MEMORY_LIMIT", "1024m"}, {"LD_PRELOAD", "/l.so"}};
  const std::vector<std::string> inherited = {"CUDA_DEVICE_MEMORY_LIMIT",
                                              "CUDA_DEVICE_MEMORY_LIMIT_0",
                                              "CUDA_DEVICE_MEMORY_LIMIT_15",
                                              "CUDA_DEVICE_SM_LIMIT",
                                              "CUDA_DEVICE_SM_LIMIT_3",
                                              "CUDA_DEVICE_MEMORY_LIMIT_X",
                                              "CUDA_DEVICE_MEMORY_LIMIT_",
                                              "CUDA_DEVICE_MEMORY_SHARED_CACHE",
                                              "PATH",
                                              "LD_PRELOAD"};
  EXPECT_EQ(InheritedLimitsToDrop(inherited, env),
            (std::vector<std::string>{"CUDA_DEVICE_MEMORY_LIMIT_0", "CUDA_DEVICE_MEMORY_LIMIT_15",
                                      "CUDA_DEVICE_SM_LIMIT", "CUDA_DEVICE_SM_LIMIT_3"}));
}

std::set<std::string>* g_files;
bool Exists(const std::string& p) {
  return g_files->count(p) != 0;
}

// What CLI11 2.1 (positionals at the end) hands vgpu run for each way of writing the command, and
// the command that runs: in order, a "--" after the command's name kept, a flag run does not know
// before it refused by name.
TEST(CommandWords, Table) {
  using Words = std::vector<std::string>;
  struct Case {
    const char* line;  // vgpu run ...
    Words positional;
    Words remaining;
    Words command;        // empty: refused when `refused` is set, else no command
    std::string refused;  // part of the message
  } const cases[] = {
      {"-- python x.py", {"python", "x.py"}, {"--"}, {"python", "x.py"}, ""},
      {"python -v x.py --epochs 3",
       {"python", "-v", "x.py", "--epochs", "3"},
       {},
       {"python", "-v", "x.py", "--epochs", "3"},
       ""},
      {"--gpumem 1g python --flag -- x.py",
       {"python", "--flag", "--", "x.py"},
       {},
       {"python", "--flag", "--", "x.py"},
       ""},
      {"-- -- true", {"--", "true"}, {"--"}, {"--", "true"}, ""},
      {"--gpumem 1g --", {}, {"--"}, {}, ""},
      {"", {}, {}, {}, ""},
      {"--bogus -- true", {"true"}, {"--bogus", "--"}, {}, "unknown flag --bogus (see 'vgpu run"},
      {"--gpu 1 -- python x.py", {"1", "--", "python", "x.py"}, {"--gpu"}, {}, "--gpu "},
      {"--bogus=3 true", {"true"}, {"--bogus=3"}, {}, "unknown flag --bogus "},
      {"-x true", {"true"}, {"-x"}, {}, "go after --"},
  };
  for (const Case& c : cases) {
    auto got = CommandWords(c.positional, c.remaining);
    if (!c.refused.empty()) {
      ASSERT_FALSE(got.ok()) << c.line;
      EXPECT_NE(got.status().message().find(c.refused), std::string::npos)
          << c.line << ": " << got.status().message();
      continue;
    }
    ASSERT_TRUE(got.ok()) << c.line << ": " << got.status().message();
    EXPECT_EQ(*got, c.command) << c.line;
  }
}

TEST(FindLibrary, Precedence) {
  std::set<std::string> files{"/opt/x.so", "/env.so", "/usr/bin/../lib/libvgpu.so", "/build.so"};
  g_files = &files;
  EXPECT_EQ(*FindLibrary("/opt/x.so", "/env.so", "/usr/bin", "/build.so", Exists), "/opt/x.so");
  EXPECT_EQ(*FindLibrary("", "/env.so", "/usr/bin", "/build.so", Exists), "/env.so");
  EXPECT_EQ(*FindLibrary("", "", "/usr/bin", "/build.so", Exists), "/usr/bin/../lib/libvgpu.so");
  EXPECT_EQ(*FindLibrary("", "", "/elsewhere", "/build.so", Exists), "/build.so");
  auto missing = FindLibrary("", "", "/elsewhere", "", Exists);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("--lib"), std::string::npos);
  EXPECT_FALSE(FindLibrary("/nope.so", "", "", "", Exists).ok());  // an explicit path must exist
  EXPECT_FALSE(FindLibrary("", "/nope.so", "", "/build.so", Exists).ok());
}

}  // namespace
}  // namespace vgpu::run
