// `vgpu run`'s files and other local users: the judgements (tables), the region it makes, a
// --region FILE, libvgpu.so's path, the preload probe and the set-user-ID check, on real files.
#include "cli/run_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "cli/preload_check.h"

namespace vgpu::run {
namespace {

using Kind = FileFacts::Kind;
constexpr uint32_t kMe = 1000;
constexpr uint32_t kOther = 1001;

FileFacts Facts(Kind kind, uint32_t mode, uint32_t uid, uint32_t gid = 100) {
  return FileFacts{kind, mode, uid, gid};
}

TEST(JudgeDirectory, Table) {
  struct Case {
    FileFacts facts;
    std::string error;  // "" = accepted
  } const cases[] = {
      {Facts(Kind::kDirectory, 0755, kMe), ""},
      {Facts(Kind::kDirectory, 0755, 0), ""},
      {Facts(Kind::kDirectory, 01777, 0), ""},    // /tmp: sticky
      {Facts(Kind::kDirectory, 01777, kMe), ""},  // a sticky directory of one's own
      {Facts(Kind::kDirectory, 0700, kOther), "/d belongs to uid 1001, another user"},
      {Facts(Kind::kDirectory, 0777, 0),
       "/d is writable by other users (mode 0777, no sticky bit)"},
      {Facts(Kind::kDirectory, 0775, kMe),
       "/d is writable by other users (mode 0775, no sticky bit)"},
      {Facts(Kind::kDirectory, 01777, kOther), "/d belongs to uid 1001"},
      {Facts(Kind::kSymlink, 0777, kMe), "/d is not a directory"},
  };
  for (const Case& c : cases) {
    const Status s = JudgeDirectory("/d", c.facts, kMe);
    if (c.error.empty()) {
      EXPECT_TRUE(s.ok()) << s.message();
    } else {
      EXPECT_EQ(s.message().rfind(c.error, 0), 0u) << s.message();
    }
  }
}

TEST(JudgeRegionFile, Table) {
  const Caller alone{kMe, std::nullopt};
  const Caller team{kMe, 200};
  struct Case {
    FileFacts facts;
    Caller caller;
    std::string error;  // the start of the message; "" = accepted
  } const cases[] = {
      {Facts(Kind::kRegular, 0600, kMe), alone, ""},
      {Facts(Kind::kRegular, 0400, kMe), alone, ""},
      // The old default, 0666: anyone can truncate it (SIGBUS) or hold its lock.
      {Facts(Kind::kRegular, 0666, kMe), alone, "/r is open to every user (mode 0666)"},
      {Facts(Kind::kRegular, 0604, kMe), alone, "/r is open to every user (mode 0604)"},
      {Facts(Kind::kRegular, 0660, kMe), alone, "/r is open to group 100 (mode 0660)"},
      {Facts(Kind::kRegular, 0640, kMe), alone,
       "/r is open to group 100"},  // flock needs read only
      {Facts(Kind::kRegular, 0600, kOther), alone, "/r belongs to uid 1001, another user"},
      {Facts(Kind::kRegular, 0600, 0), alone, "/r belongs to root, another user"},
      {Facts(Kind::kSymlink, 0777, kMe), alone, "/r is a symbolic link"},
      {Facts(Kind::kOther, 0600, kMe), alone, "/r is not a regular file"},
      {Facts(Kind::kDirectory, 0700, kMe), alone, "/r is not a regular file"},
      // --region-group 200: the group's file, the group's members accepted; others still not.
      {Facts(Kind::kRegular, 0660, kMe, 200), team, ""},
      {Facts(Kind::kRegular, 0660, kOther, 200), team, ""},
      {Facts(Kind::kRegular, 0660, kOther, 100), team, "/r belongs to uid 1001, another user"},
      {Facts(Kind::kRegular, 0666, kMe, 200), team, "/r is open to every user"},
      {Facts(Kind::kSymlink, 0660, kMe, 200), team, "/r is a symbolic link"},
  };
  for (const Case& c : cases) {
    const Status s = JudgeRegionFile("/r", c.facts, c.caller);
    if (c.error.empty()) {
      EXPECT_TRUE(s.ok()) << s.message();
    } else {
      EXPECT_EQ(s.message().rfind(c.error, 0), 0u) << s.message();
    }
  }
}

TEST(JudgeLibraryFile, Table) {
  EXPECT_TRUE(JudgeLibraryFile("/l.so", Facts(Kind::kRegular, 0755, 0), kMe).ok());
  EXPECT_TRUE(JudgeLibraryFile("/l.so", Facts(Kind::kRegular, 0755, kMe), kMe).ok());
  EXPECT_EQ(JudgeLibraryFile("/l.so", Facts(Kind::kRegular, 0755, kOther), kMe).message(),
            "/l.so belongs to uid 1001, another user, who could change the code the command runs");
  EXPECT_EQ(JudgeLibraryFile("/l.so", Facts(Kind::kRegular, 0757, 0), kMe).message(),
            "/l.so is writable by other users (mode 0757): they could change the code the command "
            "runs");
  EXPECT_FALSE(JudgeLibraryFile("/l.so", Facts(Kind::kRegular, 0775, kMe), kMe).ok());
  EXPECT_FALSE(JudgeLibraryFile("/l.so", Facts(Kind::kOther, 0755, kMe), kMe).ok());
}

// A scratch directory of the test's own (0700), removed afterwards.
class RunFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* base = getenv("VGPU_TEST_TMP");
    std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/run_files_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    char real[PATH_MAX];
    ASSERT_NE(realpath(tmpl.c_str(), real), nullptr);
    dir_ = real;
  }
  void TearDown() override { (void)!system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string Write(const std::string& name, const std::string& text, mode_t mode) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    chmod(path.c_str(), mode);
    return path;
  }
  static struct stat Stat(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
    return st;
  }
  Caller Me() const { return Caller{static_cast<uint32_t>(geteuid()), std::nullopt}; }
  std::string dir_;
};

TEST_F(RunFilesTest, FreshRegionIsPrivateAndRemoved) {
  std::string dir, file;
  {
    auto region = PrivateRegion::Create(dir_, Me());
    ASSERT_TRUE(region.ok()) << region.status().message();
    dir = region->dir();
    file = region->path();
    EXPECT_EQ(dir.rfind(dir_ + "/vgpu-run-", 0), 0u) << dir;
    const struct stat d = Stat(dir);
    const struct stat f = Stat(file);
    EXPECT_EQ(d.st_mode & 07777, 0700u);
    EXPECT_EQ(f.st_mode & 07777, 0600u);
    EXPECT_TRUE(S_ISREG(f.st_mode));
    EXPECT_EQ(f.st_uid, geteuid());
    EXPECT_EQ(f.st_size, 0);  // libvgpu lays it out
  }
  struct stat st;
  EXPECT_NE(lstat(file.c_str(), &st), 0);
  EXPECT_NE(lstat(dir.c_str(), &st), 0);
}

TEST_F(RunFilesTest, FreshRegionSharedWithAGroupIsTheGroups) {
  auto region = PrivateRegion::Create(dir_, Caller{static_cast<uint32_t>(geteuid()), getegid()});
  ASSERT_TRUE(region.ok()) << region.status().message();
  EXPECT_EQ(Stat(region->dir()).st_mode & 07777, 0710u);
  EXPECT_EQ(Stat(region->path()).st_mode & 07777, 0660u);
  EXPECT_EQ(Stat(region->path()).st_gid, getegid());
}

TEST_F(RunFilesTest, FreshRegionRefusesATmpdirOthersCanWrite) {
  const std::string open_dir = dir_ + "/open";
  ASSERT_EQ(mkdir(open_dir.c_str(), 0777), 0);
  ASSERT_EQ(chmod(open_dir.c_str(), 0777), 0);  // no sticky bit
  auto region = PrivateRegion::Create(open_dir, Me());
  ASSERT_FALSE(region.ok());
  EXPECT_NE(region.status().message().find("cannot make the region in TMPDIR " + open_dir + ": " +
                                           open_dir + " is writable by other users (mode 0777"),
            std::string::npos)
      << region.status().message();
  ASSERT_EQ(chmod(open_dir.c_str(), 01777), 0);  // sticky, like /tmp: fine
  EXPECT_TRUE(PrivateRegion::Create(open_dir, Me()).ok());
}

TEST_F(RunFilesTest, UserRegionIsCreatedPrivateOrJudged) {
  // Missing: created 0600 with O_EXCL.
  const std::string fresh = dir_ + "/team.cache";
  auto made = PrepareUserRegion(fresh, Me());
  ASSERT_TRUE(made.ok()) << made.status().message();
  EXPECT_EQ(*made, fresh);
  EXPECT_EQ(Stat(fresh).st_mode & 07777, 0600u);
  // Existing and private: accepted as it is (runs naming it share one limit).
  EXPECT_TRUE(PrepareUserRegion(fresh, Me()).ok());
  // Open to everyone: refused, with the reason and the way out.
  ASSERT_EQ(chmod(fresh.c_str(), 0666), 0);
  auto open = PrepareUserRegion(fresh, Me());
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.status().message().find("is open to every user (mode 0666): any local user could "
                                         "truncate it (the command dies of SIGBUS)"),
            std::string::npos)
      << open.status().message();
  // A link (planted, or one's own): refused, never followed.
  const std::string link = dir_ + "/link.cache";
  ASSERT_EQ(symlink("/etc/passwd", link.c_str()), 0);
  auto linked = PrepareUserRegion(link, Me());
  ASSERT_FALSE(linked.ok());
  EXPECT_EQ(linked.status().message(),
            "--region: " + link +
                " is a symbolic link: give the file itself (a link can be turned to another file "
                "after this check)");
  // A FIFO, a directory.
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(PrepareUserRegion(fifo, Me()).status().message().find("is not a regular file"),
            std::string::npos);
  EXPECT_NE(PrepareUserRegion(dir_ + "/", Me()).status().message().find("names a directory"),
            std::string::npos);
  // A path through a link to a directory is handed on resolved.
  const std::string dir_link = dir_ + "/dirlink";
  ASSERT_EQ(symlink(dir_.c_str(), dir_link.c_str()), 0);
  ASSERT_EQ(chmod(fresh.c_str(), 0600), 0);
  auto resolved = PrepareUserRegion(dir_link + "/team.cache", Me());
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  EXPECT_EQ(*resolved, fresh);
}

TEST_F(RunFilesTest, UserRegionInADirectoryOthersCanWriteIsRefused) {
  const std::string open_dir = dir_ + "/open";
  ASSERT_EQ(mkdir(open_dir.c_str(), 0777), 0);
  ASSERT_EQ(chmod(open_dir.c_str(), 0777), 0);
  auto r = PrepareUserRegion(open_dir + "/r.cache", Me());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(open_dir + " is writable by other users"), std::string::npos)
      << r.status().message();
}

TEST_F(RunFilesTest, UserRegionOfAnotherUserIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user";
  const std::string theirs = Write("theirs.cache", "", 0600);
  ASSERT_EQ(chown(theirs.c_str(), 4242, 4242), 0);
  auto r = PrepareUserRegion(theirs, Me());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("belongs to uid 4242, another user"), std::string::npos)
      << r.status().message();
  // Shared on purpose through a group: accepted with --region-group of that group.
  ASSERT_EQ(chmod(theirs.c_str(), 0660), 0);
  EXPECT_TRUE(PrepareUserRegion(theirs, Caller{0, 4242}).ok());
}

TEST_F(RunFilesTest, RegionPathLongerThanLibvgpuReadsIsRefused) {
  EXPECT_TRUE(CheckRegionPathLength(std::string(511, 'a')).ok());
  const Status s = CheckRegionPathLength(std::string(512, 'a'));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("is 512 bytes; libvgpu reads at most 511"), std::string::npos);
}

TEST_F(RunFilesTest, LibraryPathMustBeWritableOnlyByRootOrTheCaller) {
  const std::string lib = Write("libvgpu.so", "x", 0755);
  auto ok = CheckLibraryPath(lib, geteuid());
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(*ok, lib);
  ASSERT_EQ(chmod(lib.c_str(), 0777), 0);
  EXPECT_NE(CheckLibraryPath(lib, geteuid()).status().message().find("is writable by other users"),
            std::string::npos);
  ASSERT_EQ(chmod(lib.c_str(), 0755), 0);
  ASSERT_EQ(chmod(dir_.c_str(), 0777), 0);  // its directory: anyone could swap the file
  EXPECT_NE(
      CheckLibraryPath(lib, geteuid()).status().message().find(dir_ + " is writable by other"),
      std::string::npos);
  ASSERT_EQ(chmod(dir_.c_str(), 0700), 0);
  // LD_PRELOAD splits at spaces and colons.
  const std::string spaced = Write("lib vgpu.so", "x", 0755);
  EXPECT_NE(CheckLibraryPath(spaced, geteuid()).status().message().find("splits paths"),
            std::string::npos);
  // Reached through a link: the link's target is what is checked and handed on.
  const std::string link = dir_ + "/link.so";
  ASSERT_EQ(symlink(lib.c_str(), link.c_str()), 0);
  EXPECT_EQ(*CheckLibraryPath(link, geteuid()), lib);
}

TEST_F(RunFilesTest, ProbeTellsLibvgpuFromOtherFiles) {
  // Before: `vgpu run --lib /bin/ls` ran the command unlimited with exit 0.
  const Status exe = ProbePreloadLibrary("/bin/ls");
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.message().find("/bin/ls: not a loadable library: "), std::string::npos)
      << exe.message();
  const Status text = ProbePreloadLibrary(Write("text.so", "hello\n", 0644));
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.message().find("not a loadable library"), std::string::npos) << text.message();
  // A real library that is not libvgpu: libc has dlsym but no CUDA hooks.
  const Status libc = ProbePreloadLibrary("libc.so.6");
  ASSERT_FALSE(libc.ok());
  EXPECT_NE(libc.message().find("does not define cuInit: not libvgpu.so"), std::string::npos)
      << libc.message();
#ifdef VGPU_TEST_FAKE_LIBCUDA
  // The CUDA driver itself (here the fake): the hooks' names, but not the dlsym override.
  const Status cuda = ProbePreloadLibrary(VGPU_TEST_FAKE_LIBCUDA);
  ASSERT_FALSE(cuda.ok());
  EXPECT_NE(cuda.message().find("does not define dlsym: not libvgpu.so"), std::string::npos)
      << cuda.message();
#endif
#ifdef VGPU_TEST_LIBVGPU
  const Status ours = ProbePreloadLibrary(VGPU_TEST_LIBVGPU);
  EXPECT_TRUE(ours.ok()) << ours.message();
#endif
}

TEST_F(RunFilesTest, SetUserIdCommandLosesThePreloadAndIsRefused) {
  EXPECT_EQ(ResolveCommand("sh", "/nonexistent:/bin:/usr/bin"), "/bin/sh");
  EXPECT_EQ(ResolveCommand("./x", "/bin"), "./x");
  EXPECT_EQ(ResolveCommand("no-such-program-here", "/bin"), "");
  EXPECT_TRUE(CheckKeepsPreload("/bin/sh").ok());
  EXPECT_TRUE(CheckKeepsPreload("").ok());
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make a set-user-ID program of another user";
  const std::string prog = dir_ + "/suid-true";
  ASSERT_EQ(system(("cp /bin/true '" + prog + "'").c_str()), 0);
  ASSERT_EQ(chown(prog.c_str(), 4242, 4242), 0);
  ASSERT_EQ(chmod(prog.c_str(), 04755), 0);
  const Status s = CheckKeepsPreload(prog);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(prog + " is set-user-ID (owner uid 4242): the loader drops "
                                    "LD_PRELOAD for it and for everything it starts"),
            std::string::npos)
      << s.message();
  // Set-user-ID to oneself changes nothing: accepted.
  ASSERT_EQ(chown(prog.c_str(), 0, 0), 0);
  ASSERT_EQ(chmod(prog.c_str(), 04755), 0);
  EXPECT_TRUE(CheckKeepsPreload(prog).ok());
}

}  // namespace
}  // namespace vgpu::run
