#include "cli/run_files.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "env_config.h"  // libvgpu's vgpu_settings: the size of its region path buffer

namespace vgpu::run {

namespace {

std::string Octal(uint32_t mode) {
  char buf[8];
  (void)std::snprintf(buf, sizeof buf, "%04o", mode & 07777);
  return buf;
}

std::string Owner(uint32_t uid) {
  return uid == 0 ? std::string("root") : "uid " + std::to_string(uid);
}

bool Sticky(const FileFacts& f) {
  return (f.mode & S_ISVTX) != 0;
}

std::string Errno(int err) {
  return std::strerror(err);
}

std::string DirName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string Join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

Result<std::string> RealPath(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return NotFound(path + ": " + Errno(errno));
  return std::string(buf);
}

// Gives a file or directory made for the region to the shared group: group members may use it.
Status ShareWithGroup(int fd, const std::string& path, const Caller& caller, mode_t mode) {
  if (!caller.shared_gid) return Status::Ok();
  if (::fchown(fd, static_cast<uid_t>(-1), *caller.shared_gid) != 0 || ::fchmod(fd, mode) != 0) {
    return PermissionDenied("cannot give " + path + " to group " +
                            std::to_string(*caller.shared_gid) + ": " + Errno(errno) +
                            " (--region-group needs a group you are a member of)");
  }
  return Status::Ok();
}

// Creates the region file with O_EXCL|O_NOFOLLOW: a name someone planted meanwhile is an error,
// never a file of theirs that we adopt.
Status CreateRegionFile(const std::string& path, const Caller& caller) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return PermissionDenied("cannot create the region file " + path + ": " + Errno(errno));
  Status shared = ShareWithGroup(fd, path, caller, 0660);
  ::close(fd);
  if (!shared.ok()) ::unlink(path.c_str());
  return shared;
}

}  // namespace

Status JudgeDirectory(const std::string& path, const FileFacts& f, uint32_t uid) {
  if (f.kind != FileFacts::Kind::kDirectory) {
    return FailedPrecondition(path + " is not a directory (it changed while being checked?)");
  }
  if (f.uid != uid && f.uid != 0) {
    return PermissionDenied(path + " belongs to " + Owner(f.uid) +
                            ", another user, who could replace what the command opens there");
  }
  if ((f.mode & (S_IWGRP | S_IWOTH)) != 0 && !Sticky(f)) {
    return PermissionDenied(path + " is writable by other users (mode " + Octal(f.mode) +
                            ", no sticky bit): they could replace what the command opens there");
  }
  return Status::Ok();
}

Status JudgeRegionFile(const std::string& path, const FileFacts& f, const Caller& caller) {
  using Kind = FileFacts::Kind;
  if (f.kind == Kind::kSymlink) {
    return PermissionDenied(path + " is a symbolic link: give the file itself (a link can be " +
                            "turned to another file after this check)");
  }
  if (f.kind != Kind::kRegular) {
    return InvalidArgument(path + " is not a regular file (a region is a plain file)");
  }
  const bool group_shared = caller.shared_gid && f.gid == *caller.shared_gid;
  const std::string risk =
      "could truncate it (the command dies of SIGBUS), fill its counters (the command is "
      "refused memory) or hold its lock (the command hangs)";
  if ((f.mode & (S_IROTH | S_IWOTH)) != 0) {
    return PermissionDenied(path + " is open to every user (mode " + Octal(f.mode) +
                            "): any local user " + risk +
                            "; chmod o-rw it if nobody else has it open, or run without --region");
  }
  if (f.uid != caller.uid && !group_shared) {
    return PermissionDenied(path + " belongs to " + Owner(f.uid) + ", another user, who " + risk +
                            "; use a file of your own, or --region-group for a group's file");
  }
  if ((f.mode & (S_IRGRP | S_IWGRP)) != 0 && !group_shared) {
    return PermissionDenied(path + " is open to group " + std::to_string(f.gid) + " (mode " +
                            Octal(f.mode) + "), whose members " + risk +
                            "; chmod g-rw it, or accept that with --region-group " +
                            std::to_string(f.gid));
  }
  return Status::Ok();
}

Status JudgeLibraryFile(const std::string& path, const FileFacts& f, uint32_t uid) {
  if (f.kind != FileFacts::Kind::kRegular) {
    return InvalidArgument(path + " is not a regular file");
  }
  if (f.uid != uid && f.uid != 0) {
    return PermissionDenied(path + " belongs to " + Owner(f.uid) +
                            ", another user, who could change the code the command runs");
  }
  if ((f.mode & (S_IWGRP | S_IWOTH)) != 0) {
    return PermissionDenied(path + " is writable by other users (mode " + Octal(f.mode) +
                            "): they could change the code the command runs");
  }
  return Status::Ok();
}

Result<FileFacts> LstatFacts(const std::string& path) {
  struct stat st;
  FileFacts f;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return f;
    return NotFound(path + ": " + Errno(errno));
  }
  using Kind = FileFacts::Kind;
  f.kind = S_ISREG(st.st_mode)   ? Kind::kRegular
           : S_ISDIR(st.st_mode) ? Kind::kDirectory
           : S_ISLNK(st.st_mode) ? Kind::kSymlink
                                 : Kind::kOther;
  f.mode = st.st_mode & 07777;
  f.uid = st.st_uid;
  f.gid = st.st_gid;
  return f;
}

Status CheckDirectories(const std::string& real_dir, uint32_t uid) {
  if (real_dir.empty() || real_dir.front() != '/') {
    return InvalidArgument(real_dir + ": not an absolute path");
  }
  std::string path = "/";
  size_t start = 1;
  while (true) {
    auto facts = LstatFacts(path);
    if (!facts.ok()) return facts.status();
    VGPU_RETURN_IF_ERROR(JudgeDirectory(path, *facts, uid));
    if (start >= real_dir.size()) return Status::Ok();
    size_t slash = real_dir.find('/', start);
    if (slash == std::string::npos) slash = real_dir.size();
    path = real_dir.substr(0, slash);
    start = slash + 1;
  }
}

Status CheckRegionPathLength(const std::string& path) {
  constexpr size_t kMax = sizeof(vgpu_settings{}.shared_cache) - 1;
  if (path.size() > kMax) {
    return InvalidArgument("region path " + path.substr(0, 40) + "... is " +
                           std::to_string(path.size()) + " bytes; libvgpu reads at most " +
                           std::to_string(kMax) + " (use a shorter TMPDIR or --region)");
  }
  return Status::Ok();
}

Result<PrivateRegion> PrivateRegion::Create(const std::string& tmpdir, const Caller& caller) {
  const std::string where = tmpdir.empty() ? std::string("/tmp") : "TMPDIR " + tmpdir;
  auto real = RealPath(tmpdir.empty() ? "/tmp" : tmpdir);
  if (!real.ok()) return real.status().WithContext("cannot use " + where);
  if (Status safe = CheckDirectories(*real, caller.uid); !safe.ok()) {
    return safe.WithContext("cannot make the region in " + where);
  }
  std::string pattern = Join(*real, "vgpu-run-XXXXXX");
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {  // mode 0700
    return PermissionDenied("cannot create a directory in " + *real + ": " + Errno(errno));
  }
  const std::string dir = buf.data();
  PrivateRegion region(dir, Join(dir, "region.cache"));
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) return PermissionDenied("cannot open " + dir + ": " + Errno(errno));
  Status shared = ShareWithGroup(dfd, dir, caller, 0710);
  ::close(dfd);
  VGPU_RETURN_IF_ERROR(shared);
  VGPU_RETURN_IF_ERROR(CheckRegionPathLength(region.path()));
  VGPU_RETURN_IF_ERROR(CreateRegionFile(region.path(), caller));
  return region;
}

PrivateRegion::PrivateRegion(PrivateRegion&& other) noexcept
    : dir_(std::move(other.dir_)), file_(std::move(other.file_)) {
  other.dir_.clear();
  other.file_.clear();
}

PrivateRegion::~PrivateRegion() {
  if (!file_.empty()) ::unlink(file_.c_str());
  if (!dir_.empty()) ::rmdir(dir_.c_str());
}

Result<std::string> PrepareUserRegion(const std::string& given, const Caller& caller) {
  const std::string name = BaseName(given);
  if (name.empty() || name == "." || name == "..") {
    return InvalidArgument("--region " + given + ": names a directory, not a file");
  }
  auto dir = RealPath(DirName(given));
  if (!dir.ok()) return dir.status().WithContext("--region " + given + ": its directory");
  if (Status safe = CheckDirectories(*dir, caller.uid); !safe.ok()) {
    return safe.WithContext("--region " + given);
  }
  const std::string path = Join(*dir, name);
  VGPU_RETURN_IF_ERROR(CheckRegionPathLength(path));
  auto facts = LstatFacts(path);
  if (!facts.ok()) return facts.status().WithContext("--region");
  if (facts->kind == FileFacts::Kind::kMissing) {
    Status created = CreateRegionFile(path, caller);
    if (!created.ok()) return created.WithContext("--region " + given);
    return path;
  }
  if (Status ok = JudgeRegionFile(path, *facts, caller); !ok.ok()) {
    return ok.WithContext("--region");
  }
  return path;
}

Result<std::string> CheckLibraryPath(const std::string& given, uint32_t uid) {
  auto real = RealPath(given);
  if (!real.ok()) return real.status();
  if (real->find_first_of(": \t\n") != std::string::npos) {
    return InvalidArgument(*real + ": LD_PRELOAD splits paths at spaces and colons; " +
                           "install libvgpu.so under a path without them");
  }
  auto facts = LstatFacts(*real);
  if (!facts.ok()) return facts.status();
  VGPU_RETURN_IF_ERROR(JudgeLibraryFile(*real, *facts, uid));
  VGPU_RETURN_IF_ERROR(CheckDirectories(DirName(*real), uid));
  return *real;
}

}  // namespace vgpu::run
