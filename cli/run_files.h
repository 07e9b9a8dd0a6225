#pragma once

// The files `vgpu run` hands to the command — its region file and libvgpu.so — and the checks that
// keep other local users out of them (docs/libvgpu.md, "vgpu run and other local users").
//
// Any other local user is untrusted. A user who can write the region can truncate it (the
// command's next access to the mapping is SIGBUS), fill its counters (the command is refused all
// memory) or hold its lock (the command hangs); a user who can replace libvgpu.so runs code in the
// command, or leaves it unlimited. So the fresh region lives in a private directory made for the
// run, a --region FILE must be the caller's and written by nobody else, and libvgpu.so and every
// directory above it must be writable only by root or the caller.
//
// The judgements are pure (FileFacts in, Status out; table-tested in tests/cli/run_files_test.cpp);
// the functions below them do the lstat/open/mkdtemp.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "core/base/status.h"

namespace vgpu::run {

// What lstat(2) says about a path, as far as the checks need it.
struct FileFacts {
  enum class Kind { kMissing, kRegular, kDirectory, kSymlink, kOther };
  Kind kind = Kind::kMissing;
  uint32_t mode = 0;  // permission bits, sticky included (st_mode & 07777)
  uint32_t uid = 0;
  uint32_t gid = 0;
};

// Who runs `vgpu run`, and the group it shares the region with (--region-group), if any.
struct Caller {
  uint32_t uid = 0;
  std::optional<uint32_t> shared_gid;
};

// A directory on the way to a file the command will open: nobody but root or the caller may add,
// rename or remove its entries (owned by one of them; not group- or world-writable, unless sticky,
// where others cannot touch entries they do not own).
Status JudgeDirectory(const std::string& path, const FileFacts& facts, uint32_t uid);

// An existing region file (--region FILE): a regular file, not a symbolic link, owned by the
// caller and writable by nobody else; with a shared group, also one owned by another member whose
// group is that group, group-writable. Never world-writable.
Status JudgeRegionFile(const std::string& path, const FileFacts& facts, const Caller& caller);

// libvgpu.so (after its links are resolved): a regular file owned by root or the caller, writable
// by nobody else.
Status JudgeLibraryFile(const std::string& path, const FileFacts& facts, uint32_t uid);

// ---- I/O --------------------------------------------------------------------------------------

// lstat(2) of `path` as FileFacts; kMissing when it does not exist; an error for anything else.
Result<FileFacts> LstatFacts(const std::string& path);

// JudgeDirectory for every directory of an absolute, link-free path, from "/" down.
Status CheckDirectories(const std::string& real_dir, uint32_t uid);

// The fresh region of one run: <TMPDIR>/vgpu-run-XXXXXX/region.cache, the directory 0700 (0710
// with the group), the file 0600 (0660), created with O_EXCL|O_NOFOLLOW. Removed by the destructor.
class PrivateRegion {
 public:
  // `tmpdir`: $TMPDIR, or "" for /tmp; it must pass CheckDirectories once resolved.
  static Result<PrivateRegion> Create(const std::string& tmpdir, const Caller& caller);
  PrivateRegion(PrivateRegion&& other) noexcept;
  PrivateRegion& operator=(PrivateRegion&&) = delete;
  PrivateRegion(const PrivateRegion&) = delete;
  ~PrivateRegion();

  const std::string& path() const { return file_; }
  const std::string& dir() const { return dir_; }

 private:
  PrivateRegion(std::string dir, std::string file) : dir_(std::move(dir)), file_(std::move(file)) {}
  std::string dir_;
  std::string file_;
};

// A --region FILE: its directory must pass CheckDirectories (resolved), the file JudgeRegionFile;
// a missing file is created 0600 (0660 with the group) with O_EXCL|O_NOFOLLOW. Returns the path to
// hand to the command, its directory resolved, so that no link can be swapped after the check.
Result<std::string> PrepareUserRegion(const std::string& path, const Caller& caller);

// libvgpu.so: resolved (realpath), JudgeLibraryFile, its directories CheckDirectories, and no
// character that LD_PRELOAD splits on (space, colon). Returns the resolved path for LD_PRELOAD.
Result<std::string> CheckLibraryPath(const std::string& path, uint32_t uid);

// libvgpu keeps the region's path in a fixed buffer (env_config.h, vgpu_settings.shared_cache) and
// cuts a longer one; such a path is refused rather than handed on.
Status CheckRegionPathLength(const std::string& path);

}  // namespace vgpu::run
