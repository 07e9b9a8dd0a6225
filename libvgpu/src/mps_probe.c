#include "mps_probe.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "vgpu/env_contract.h"

/* The socket type of the control daemon's listener is not documented: a connect of the wrong type
 * fails with EPROTOTYPE although the daemon is there, so each type is tried in turn. */
static int connects_as(const struct sockaddr_un* addr, int type) {
  const int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int rc = connect(fd, (const struct sockaddr*)addr, sizeof(*addr));
  const int err = errno;
  close(fd);
  if (rc == 0) return 1;
  return err == EPROTOTYPE ? -1 : 0;
}

int vgpu_mps_daemon_answers(const char* pipe_dir) {
  if (pipe_dir == NULL || pipe_dir[0] == '\0') pipe_dir = VGPU_DEFAULT_MPS_PIPE_DIRECTORY;
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  if ((size_t)snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/control", pipe_dir) >=
      sizeof(addr.sun_path)) {
    return 0;
  }
  static const int kTypes[] = {SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM};
  for (size_t i = 0; i < sizeof(kTypes) / sizeof(kTypes[0]); ++i) {
    const int answer = connects_as(&addr, kTypes[i]);
    if (answer >= 0) return answer;
  }
  return 0;
}
