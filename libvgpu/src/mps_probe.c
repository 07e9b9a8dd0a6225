#include "mps_probe.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "vgpu/env_contract.h"

int vgpu_mps_daemon_answers(const char* pipe_dir) {
  if (pipe_dir == NULL || pipe_dir[0] == '\0') pipe_dir = VGPU_DEFAULT_MPS_PIPE_DIRECTORY;
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  if ((size_t)snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/control", pipe_dir) >=
      sizeof(addr.sun_path)) {
    return 0;
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  const int ok = connect(fd, (const struct sockaddr*)&addr, sizeof(addr)) == 0;
  close(fd);
  return ok;
}
