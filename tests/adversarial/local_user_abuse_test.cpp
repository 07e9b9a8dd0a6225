// The other local user and the careless operator against the `vgpu` CLI.
//
// `vgpu run` limits one process tree on a bare host, where any other local user is untrusted: it
// must not be able to open the run's region (truncate it: the command dies of SIGBUS; fill its
// counters: the command is refused memory; hold its lock: the command hangs), to plant a file or
// a link where a --region names one, or to make the command run without libvgpu. An operator's
// mistakes (a --lib that is not libvgpu.so, a set-user-ID command, `vgpu sim` given /dev/zero or
// two billion nodes) must be clear errors that run nothing and hold memory bounded.
//
// The other user is played by a forked child that drops to nobody (65534) when the suite runs as
// root; otherwise those cases check what they can (modes, owners, links) and say so.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "process_runner.h"
#include "report.h"
#include "run_cli.h"

namespace {

namespace fs = std::filesystem;
using vgpu::adversarial::MiB;
using vgpu::adversarial::Report;
using vgpu::adversarial::RssKib;
using vgpu::testing::Child;
using vgpu::testing::RunProcess;
using vgpu::testing::RunResult;

constexpr uid_t kNobody = 65534;

std::string Errno(int err) {
  return err == 0 ? std::string("allowed") : std::string(strerrorname_np(err));
}

// Runs `attack` in a child process as another user (nobody); returns what it returned, or -1 when
// this process cannot switch users (not root).
int AsOtherUser(const std::function<int()>& attack) {
  if (geteuid() != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(kNobody) != 0 || setuid(kNobody) != 0) _exit(250);
    _exit(attack());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 251;
}

class LocalUserAbuse : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* base = getenv("VGPU_TEST_TMP");
    std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/local_user_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = fs::canonical(tmpl).string();
    // A directory like /tmp: everyone may create entries (sticky). The runs' TMPDIR, where the
    // other user plants what it can. Only its parents' modes keep the rest of the machine out.
    shared_tmp_ = dir_ + "/tmp";
    ASSERT_EQ(mkdir(shared_tmp_.c_str(), 01777), 0);
    ASSERT_EQ(chmod(shared_tmp_.c_str(), 01777), 0);
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
    fs::create_directories(dir_ + "/fake");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The environment of a `vgpu run` on this host: the fake driver, libvgpu.so, TMPDIR shared.
  std::map<std::string, std::string> Env() const {
    return {{"LD_LIBRARY_PATH", VGPU_FAKE_DIR},
            {"VGPU_FAKE_STATE_DIR", dir_ + "/fake"},
            {"VGPU_FAKE_GPU_MEMORY", "16g"},
            {"VGPU_FAKE_CONTEXT_MEMORY", "0"},
            {"VGPU_FAKE_MODULE_MEMORY", "0"},
            {"VGPU_LIBRARY", VGPU_TEST_LIBVGPU},
            {"TMPDIR", shared_tmp_}};
  }
  static std::string Describe(const RunResult& r) {
    return "status " + std::to_string(r.status) + "\nstdout:\n" + r.out + "stderr:\n" + r.err;
  }
  static int ExitCode(const RunResult& r) {
    return WIFEXITED(r.status) ? WEXITSTATUS(r.status) : 128 + WTERMSIG(r.status);
  }

  std::string dir_;
  std::string shared_tmp_;
};

// The other user goes after the region of a running `vgpu run` (a command holding GPU memory):
// before, the region was a 0666 file in TMPDIR; it could open, truncate or lock it.
TEST_F(LocalUserAbuse, AnotherUserCannotReachTheRegionOfARunningCommand) {
  const std::string where = dir_ + "/region-path";
  Child run({VGPU_BINARY, "run", "--gpumem", "64", "--", "/bin/sh", "-c",
             "echo \"$CUDA_DEVICE_MEMORY_SHARED_CACHE\" > " + where + "; exec " VGPU_PROBE " hold"},
            Env(), /*pipe_stdin=*/true);
  std::string line;
  ASSERT_TRUE(run.ReadLineWithin(20000, &line)) << run.ReadAllStderr();
  ASSERT_EQ(line, "holding");
  const long rss_before = RssKib(run.pid());
  std::string region;
  std::getline(std::ifstream(where), region);
  ASSERT_FALSE(region.empty());
  const std::string region_dir = fs::path(region).parent_path().string();

  // Private by default: the file 0600 and the directory 0700, both the caller's, made for the run.
  struct stat file {
  }, folder{};
  ASSERT_EQ(lstat(region.c_str(), &file), 0);
  ASSERT_EQ(lstat(region_dir.c_str(), &folder), 0);
  EXPECT_TRUE(S_ISREG(file.st_mode));
  EXPECT_EQ(file.st_uid, geteuid());
  EXPECT_EQ(folder.st_uid, geteuid());
  EXPECT_EQ(folder.st_mode & 07777, 0700u) << region_dir;
  EXPECT_EQ(region_dir.rfind(shared_tmp_ + "/vgpu-run-", 0), 0u) << region;
  // libvgpu may widen the file's own mode (it fchmods regions 0666 for containers' users); the
  // directory keeps everyone else out whatever the file's mode is.
  const unsigned file_mode = file.st_mode & 07777;

  // The other user: open it to write (fill counters), to read (flock needs no more: hold the
  // lock), truncate it (SIGBUS), list the directory. Each result: 0 allowed, else its errno.
  int results[4] = {-1, -1, -1, -1};
  for (int i = 0; i < 4; ++i) {
    results[i] = AsOtherUser([&, i]() -> int {
      errno = 0;
      switch (i) {
        case 0:
          return open(region.c_str(), O_RDWR) >= 0 ? 0 : errno;
        case 1:
          return open(region.c_str(), O_RDONLY) >= 0 ? 0 : errno;
        case 2:
          return truncate(region.c_str(), 0) == 0 ? 0 : errno;
        default:
          return open(region_dir.c_str(), O_RDONLY | O_DIRECTORY) >= 0 ? 0 : errno;
      }
    });
  }
  const bool other_user = results[0] != -1;
  if (other_user) {
    EXPECT_EQ(results[0], EACCES) << "open O_RDWR as nobody";
    EXPECT_EQ(results[1], EACCES) << "open O_RDONLY as nobody";
    EXPECT_EQ(results[2], EACCES) << "truncate as nobody";
    EXPECT_EQ(results[3], EACCES) << "open the directory as nobody";
  }
  // The command was not disturbed: it ends as it meant to.
  const long rss_after = RssKib(run.pid());
  run.CloseStdin();
  const int status = run.Wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  struct stat gone;
  EXPECT_NE(lstat(region_dir.c_str(), &gone), 0) << "the run's directory is removed";

  std::ostringstream figures;
  figures << "region dir mode " << std::oct << (folder.st_mode & 07777) << ", file mode "
          << file_mode << std::dec << ", owner uid " << file.st_uid << "; ";
  if (other_user) {
    figures << "as uid 65534: open rw " << Errno(results[0]) << ", open ro (flock) "
            << Errno(results[1]) << ", truncate " << Errno(results[2]) << ", list dir "
            << Errno(results[3]);
  } else {
    figures << "not root: no second uid, modes checked only";
  }
  figures << "; command exit " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1)
          << "; vgpu run's RSS " << MiB(rss_before) << " -> " << MiB(rss_after);
  Report("another local user", "open/truncate/lock the region of a running `vgpu run`",
         "region private (0700 directory made for the run); the command held its memory and "
         "exited 0",
         figures.str());
}

// The other user plants a link, or a file of its own, where a victim's --region will be.
// Before: libvgpu opened the link with O_CREAT and laid its region out over the target.
TEST_F(LocalUserAbuse, PlantedRegionLinkOrFileIsRefused) {
  const std::string victim = dir_ + "/precious";
  std::ofstream(victim) << "precious\n";
  const std::string link = shared_tmp_ + "/team.cache";
  // Planted by the other user when possible, else by us: refused either way, never followed.
  if (AsOtherUser([&] { return symlink(victim.c_str(), link.c_str()) == 0 ? 0 : 1; }) != 0) {
    ASSERT_EQ(symlink(victim.c_str(), link.c_str()), 0);
  }
  RunResult r = RunProcess(
      {VGPU_BINARY, "run", "--region", link, "--gpumem", "16", "--", VGPU_PROBE, "usage"}, Env());
  EXPECT_EQ(ExitCode(r), 125) << Describe(r);
  EXPECT_EQ(r.out, "") << "the command must not run";
  EXPECT_NE(r.err.find("vgpu run: --region: " + link + " is a symbolic link"), std::string::npos)
      << r.err;
  std::string content;
  std::getline(std::ifstream(victim), content);
  EXPECT_EQ(content, "precious");
  EXPECT_EQ(fs::file_size(victim), 9u);

  // A file of the other user's own, open to it: refused as well.
  std::string planted_figure = "not root: planted file not tried";
  const std::string planted = shared_tmp_ + "/other.cache";
  if (AsOtherUser([&] {
        const int fd = open(planted.c_str(), O_RDWR | O_CREAT | O_EXCL, 0666);
        return fd >= 0 && fchmod(fd, 0666) == 0 ? 0 : 1;
      }) == 0) {
    RunResult p = RunProcess(
        {VGPU_BINARY, "run", "--region", planted, "--gpumem", "16", "--", VGPU_PROBE, "usage"},
        Env());
    EXPECT_EQ(ExitCode(p), 125) << Describe(p);
    EXPECT_EQ(p.out, "");
    EXPECT_NE(p.err.find(planted + " is open to every user (mode 0666)"), std::string::npos)
        << p.err;
    planted_figure = "planted 0666 file of uid 65534: exit " + std::to_string(ExitCode(p));
  }
  Report(
      "another local user",
      "plants a symlink (to the victim's file) or its own file at a --region path",
      "refused with exit 125, nothing run, the link's target untouched",
      "symlink: exit " + std::to_string(ExitCode(r)) + ", target still 9 bytes; " + planted_figure);
}

// The careless operator: a --lib that is not libvgpu.so. Before: the loader printed one line and
// ignored it, and the command ran without limits with exit 0.
TEST_F(LocalUserAbuse, NonLibraryLibFailsClosed) {
  const std::string text = dir_ + "/libnot.so";
  std::ofstream(text) << "not a library\n";
  const std::string marker = dir_ + "/ran";
  struct Case {
    std::string lib;
    std::string why;
  } const cases[] = {
      {"/bin/ls", "not a loadable library"},
      {text, "not a loadable library"},
      {std::string(VGPU_FAKE_DIR) + "/libcuda.so.1", "does not define dlsym: not libvgpu.so"},
  };
  std::string figures;
  for (const Case& c : cases) {
    RunResult r = RunProcess({VGPU_BINARY, "run", "--lib", c.lib, "--gpumem", "16", "--", "/bin/sh",
                              "-c", "touch " + marker},
                             Env());
    EXPECT_EQ(ExitCode(r), 125) << c.lib << ": " << Describe(r);
    EXPECT_FALSE(fs::exists(marker)) << c.lib << ": the command ran";
    EXPECT_NE(r.err.find(c.why), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("the command was not run"), std::string::npos) << r.err;
    figures += fs::path(c.lib).filename().string() + ": exit " + std::to_string(ExitCode(r)) + "; ";
  }
  // A set-user-ID command: the loader drops LD_PRELOAD for it and all it starts.
  if (geteuid() == 0) {
    const std::string suid = dir_ + "/suid-sh";
    fs::copy_file(fs::canonical("/bin/sh"), suid);
    ASSERT_EQ(chown(suid.c_str(), kNobody, kNobody), 0);
    ASSERT_EQ(chmod(suid.c_str(), 04755), 0);
    RunResult r = RunProcess({VGPU_BINARY, "run", "--", suid, "-c", "touch " + marker}, Env());
    EXPECT_EQ(ExitCode(r), 125) << Describe(r);
    EXPECT_FALSE(fs::exists(marker));
    EXPECT_NE(r.err.find("is set-user-ID (owner uid 65534): the loader drops LD_PRELOAD"),
              std::string::npos)
        << r.err;
    figures += "set-user-ID command: exit " + std::to_string(ExitCode(r));
  }
  // The real library still runs the command.
  RunResult ok = RunProcess(
      {VGPU_BINARY, "run", "--gpumem", "16", "--", "/bin/sh", "-c", "touch " + marker}, Env());
  EXPECT_EQ(ExitCode(ok), 0) << Describe(ok);
  EXPECT_TRUE(fs::exists(marker));
  Report("careless operator",
         "`vgpu run --lib` a non-library, a plain text file, libcuda; a set-user-ID command",
         "exit 125, the command not run (it would have run without limits)", figures);
}

// The careless operator against `vgpu sim`: endless files, huge and negative counts. Each is a
// one-line error (exit 2) within a second and the process's memory does not grow. Before:
// /dev/zero grew to 3.3 GiB in 8 s, --nodes 2000000000 died of ASan's out-of-memory,
// --kubelet-workers 100000 aborted, --nodes -3 ran the demo with exit 0.
TEST_F(LocalUserAbuse, SimRefusesEndlessFilesAndHugeCountsWithBoundedMemory) {
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string big = dir_ + "/big.yaml";
  {
    std::ofstream out(big);
    out << "# " << std::string(5u << 20, 'x') << "\n";
  }
  // Counts within each entry's own bound that add up beyond the scenario's.
  const std::string many = dir_ + "/many.yaml";
  {
    std::ofstream out(many);
    out << "nodes:\n";
    for (int i = 0; i < 100; ++i) {
      out << "  - {name: n" << i << ", count: 10000, gpus: [{model: m, memory: 1, count: 64}]}\n";
    }
  }
  struct Case {
    std::vector<std::string> args;
    std::string error;
  } const cases[] = {
      {{"sim", "--scenario", "/dev/zero"},
       "scenario file /dev/zero is a character device, not a regular file"},
      {{"sim", "--scenario", fifo}, "is a FIFO, not a regular file"},
      {{"sim", "--scenario", big}, "too large (max 4194304)"},
      {{"sim", "--scenario", many}, "more than 100000 GPUs in the scenario"},
      {{"sim", "--nodes", "2000000000", "--pods", "1"},
       "--nodes: '2000000000' is too large (max 10000)"},
      {{"sim", "--nodes", "1", "--pods", "2000000000"},
       "--pods: '2000000000' is too large (max 100000)"},
      {{"sim", "--nodes", "1", "--pods", "1", "--gpus-per-node", "2000000000"},
       "--gpus-per-node: '2000000000' is too large (max 64)"},
      {{"sim", "--kubelet-workers", "100000"}, "--kubelet-workers: '100000' is too large (max 64)"},
      {{"sim", "--nodes", "-3"}, "--nodes: '-3' is too small (min 1)"},
      {{"sim", "--nodes", "3"}, "--nodes requires --pods"},
  };
  const long rss_before = RssKib();
  double worst_ms = 0;
  for (const Case& c : cases) {
    const auto start = std::chrono::steady_clock::now();
    const auto r = vgpu::cli::testing::RunVgpu(c.args);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    worst_ms = std::max(worst_ms, ms);
    EXPECT_EQ(r.rc, 2) << c.args[1] << " " << c.args[2] << ": " << r.err;
    EXPECT_NE(r.err.find(c.error), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_LT(ms, 5000) << c.args[2];  // generous: a refusal reads nothing large
  }
  const long rss_after = RssKib();
  // The 4 MiB cap and the refusals before any allocation: growth stays far below the old GiBs.
  EXPECT_LT(rss_after - rss_before, 64 * 1024) << MiB(rss_before) << " -> " << MiB(rss_after);
  char slowest[32];
  (void)std::snprintf(slowest, sizeof slowest, "%.0f ms", worst_ms);
  Report(
      "careless operator",
      "`vgpu sim` with /dev/zero, a FIFO, a 5 MiB file, 6.4M GPUs by counts, 2e9 nodes/pods/GPUs, "
      "100,000 kubelet workers, --nodes -3, --nodes alone",
      "one-line error naming the flag or file and the bound, exit 2, nothing run",
      "RSS " + MiB(rss_before) + " -> " + MiB(rss_after) + "; slowest refusal " + slowest);
}

}  // namespace
