#include "cli/bounded_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vgpu::cli {

Result<std::string> ReadBoundedFile(const std::string& path, size_t max_bytes,
                                    const std::string& what) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer before the type check refuses it.
  const std::string named = what + " " + path;  // "scenario file /x.yaml"
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return InvalidArgument("cannot read " + named + ": " + std::strerror(errno));
  struct stat st;
  std::string text;
  Status status;
  if (::fstat(fd, &st) != 0) {
    status = InvalidArgument("cannot read " + named + ": " + std::strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    // Say what it is: "is a directory" tells the user to name a file in it.
    const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    status = InvalidArgument(named + " is " + kind + ", not a regular file: give the file itself");
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    status = InvalidArgument(named + " is " + std::to_string(st.st_size) +
                             " bytes, too large (max " + std::to_string(max_bytes) + ")");
  }
  char buf[65536];
  while (status.ok()) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status = InvalidArgument("cannot read " + named + ": " + std::strerror(errno));
    } else if (text.size() + static_cast<size_t>(n) > max_bytes) {
      status = InvalidArgument(named + " grew past " + std::to_string(max_bytes) +
                               " bytes while being read, too large");
    } else {
      text.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  if (!status.ok()) return status;
  return text;
}

}  // namespace vgpu::cli
