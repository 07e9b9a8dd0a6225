#define _GNU_SOURCE
#include "region.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "mem_arith.h"

_Static_assert(sizeof(pthread_mutex_t) <= VGPU_REGION_LOCK_BYTES, "mutex does not fit the layout");

#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

static pthread_mutex_t* device_mutex(struct vgpu_region* r, int dev) {
  return (pthread_mutex_t*)(void*)r->devices[dev].lock;
}

/* The file is the container's to scribble on: what it says the device count is, never above the
 * records that exist (a count of 2^32-1 once walked past the records into the slots, took slot
 * bytes for a mutex and hung the process at exit). */
static uint32_t device_count(const struct vgpu_region* r) {
  const uint32_t n = LOAD(&r->header.device_count);
  return n < VGPU_REGION_MAX_DEVICES ? n : VGPU_REGION_MAX_DEVICES;
}

uint32_t vgpu_region_device_count(const struct vgpu_region_handle* h) {
  return h->region != NULL ? device_count(h->region) : 0;
}

static void mark_unusable(struct vgpu_region* r) {
  __atomic_fetch_or(&r->header.flags, VGPU_REGION_FLAG_UNUSABLE, __ATOMIC_ACQ_REL);
}

static void init_robust_mutex(pthread_mutex_t* m) {
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(m, &attr);
  pthread_mutexattr_destroy(&attr);
}

static void init_region(struct vgpu_region* r, int oom_killer_flag) {
  memset(r, 0, sizeof(*r));
  for (int d = 0; d < VGPU_REGION_MAX_DEVICES; ++d) init_robust_mutex(device_mutex(r, d));
  r->header.version = VGPU_REGION_VERSION;
  r->header.header_size = (uint32_t)sizeof(r->header);
  r->header.file_size = sizeof(*r);
  r->header.max_devices = VGPU_REGION_MAX_DEVICES;
  r->header.max_procs = VGPU_REGION_MAX_PROCS;
  r->header.flags = oom_killer_flag ? 1u : 0u;
  r->header.created_unix_s = (uint64_t)time(NULL);
  STORE(&r->header.magic, (uint64_t)VGPU_REGION_MAGIC);
}

/* Recomputes a device total from the slots; called with the device lock held after EOWNERDEAD
 * (a process died inside the critical section, so total and slot may disagree). */
static uint64_t add_saturated(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void recompute_total(struct vgpu_region* r, int dev) {
  uint64_t sum = 0;
  for (int s = 0; s < VGPU_REGION_MAX_PROCS; ++s) {
    sum = add_saturated(sum, LOAD(&r->procs[s].mem_used[dev]));
    sum = add_saturated(sum, LOAD(&r->procs[s].mem_overhead[dev]));
  }
  STORE(&r->devices[dev].mem_used, sum);
}

/* A device lock is held for a few instructions. Bytes that only look like a lock held by a live
 * thread (scribbled on) would block a plain lock forever: the wait is bounded (2 s for this
 * process's own counters, 100 ms when reaping someone else's slot), and what needed the lock is
 * refused (an allocation) or left to the next look (a release, a reap). After a 2-s wait that ran
 * out, the process only tries that lock for a while; a reap that waited in vain for a device skips
 * it for the rest of its pass: waits do not add up (a reap visits every device of every dead
 * slot). */
#define LOCK_WAIT_MS 2000
#define LOCK_WAIT_REAP_MS 100
#define LOCK_STUCK_S 10

static int64_t g_lock_stuck_until_s[VGPU_REGION_MAX_DEVICES]; /* CLOCK_MONOTONIC seconds */

static int64_t monotonic_s(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (int64_t)now.tv_sec;
}

static int lock_device_within(struct vgpu_region* r, int dev, int wait_ms) {
  pthread_mutex_t* m = device_mutex(r, dev);
  int rc;
  if (monotonic_s() < __atomic_load_n(&g_lock_stuck_until_s[dev], __ATOMIC_RELAXED)) {
    rc = pthread_mutex_trylock(m);
    if (rc == EBUSY) rc = ETIMEDOUT;
  } else {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
    deadline.tv_sec += wait_ms / 1000 + deadline.tv_nsec / 1000000000L;
    deadline.tv_nsec %= 1000000000L;
    rc = pthread_mutex_timedlock(m, &deadline);
    if (rc == ETIMEDOUT && wait_ms >= LOCK_WAIT_MS) {
      __atomic_store_n(&g_lock_stuck_until_s[dev], monotonic_s() + LOCK_STUCK_S, __ATOMIC_RELAXED);
      VGPU_ERROR(
          "the shared region's lock of device %d was held for over %d ms: what needs it is "
          "refused for the next %d s",
          dev, wait_ms, LOCK_STUCK_S);
    }
  }
  if (rc == EOWNERDEAD) {
    recompute_total(r, dev);
    pthread_mutex_consistent(m);
    rc = 0;
  }
  if (rc != 0 && rc != ETIMEDOUT) {
    mark_unusable(r); /* glibc refuses the lock's bytes: the region is corrupt */
  }
  return rc;
}

static int lock_device(struct vgpu_region* r, int dev) {
  return lock_device_within(r, dev, LOCK_WAIT_MS);
}

static void unlock_device(struct vgpu_region* r, int dev) {
  pthread_mutex_unlock(device_mutex(r, dev));
}

int vgpu_region_open_private(struct vgpu_region_handle* h) {
  memset(h, 0, sizeof(*h));
  h->slot = -1;
  void* p = mmap(NULL, sizeof(struct vgpu_region), PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return -1;
  h->region = (struct vgpu_region*)p;
  h->fd = -1;
  h->is_private = 1;
  init_region(h->region, 0);
  return 0;
}

static int file_size(int fd, uint64_t* out) {
  struct stat st;
  /* A raw syscall: glibc's fstat wrapper binds to GLIBC_2.33, too new for old images. */
  if (syscall(SYS_fstat, fd, &st) != 0) return -1;
  *out = (uint64_t)st.st_size;
  return 0;
}

static int flock_retry(int fd, int op) {
  int rc;
  do {
    rc = flock(fd, op);
  } while (rc != 0 && errno == EINTR);
  return rc;
}

/* Checks what a scribbled-on body would break for good: a device lock glibc refuses (every
 * admission would fail without a word) and usage totals above the card (every allocation refused
 * for the container's lifetime). 1 when usable, else 0 with `why` set. */
static int usable_body(struct vgpu_region* r, const char** why) {
  for (int d = 0; d < VGPU_REGION_MAX_DEVICES; ++d) {
    pthread_mutex_t* m = device_mutex(r, d);
    const int rc = pthread_mutex_trylock(m);
    if (rc == 0) {
      pthread_mutex_unlock(m);
    } else if (rc == EOWNERDEAD) {
      recompute_total(r, d);
      pthread_mutex_consistent(m);
      pthread_mutex_unlock(m);
    } else if (rc != EBUSY) {
      *why = "its device locks are corrupt";
      return 0;
    }
  }
  /* Managed memory can oversubscribe a card (UVM pages move to the host), so a total somewhat above
   * the card is legitimate; a scribbled counter is far beyond any oversubscription. */
  const uint64_t oversubscription = 16;
  const uint32_t count = device_count(r);
  for (uint32_t d = 0; d < count; ++d) {
    const uint64_t physical = r->devices[d].mem_physical;
    if (physical != 0 && physical < UINT64_MAX / oversubscription &&
        LOAD(&r->devices[d].mem_used) > physical * oversubscription) {
      *why = "its usage counters are corrupt (far above the card's memory)";
      return 0;
    }
  }
  return 1;
}

/* Validates or creates the file content; called with the flock held. Returns NULL with `why`
 * set when the file cannot be used. */
static struct vgpu_region* map_file(int fd, const char** why) {
  uint64_t size = 0;
  if (file_size(fd, &size) != 0) {
    *why = "cannot stat it";
    return NULL;
  }
  const uint64_t want = sizeof(struct vgpu_region);
  /* A file of another layout version is named as such, whatever its size. */
  struct vgpu_region_header head;
  if (size >= sizeof(head) && pread(fd, &head, sizeof(head), 0) == (ssize_t)sizeof(head) &&
      head.magic == VGPU_REGION_MAGIC && head.version != VGPU_REGION_VERSION) {
    *why = head.version < VGPU_REGION_VERSION
               ? "an older vgpu release created it (region layout version older than this "
                 "library's); restart the container so that all its processes use one release"
               : "a newer vgpu release created it (region layout version newer than this "
                 "library's); restart the container so that all its processes use one release";
    return NULL;
  }
  if (size == 0) {
    if (ftruncate(fd, (off_t)want) != 0) {
      *why = "cannot grow it (read-only or disk full?)";
      return NULL;
    }
  } else if (size != want) {
    *why = size < want ? "it is truncated or from another version" : "it has an unexpected size";
    return NULL;
  }
  void* p = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    *why = "cannot map it";
    return NULL;
  }
  struct vgpu_region* r = (struct vgpu_region*)p;
  const uint64_t magic = LOAD(&r->header.magic);
  if (magic == 0) {
    /* New file, or a creator died before finishing: we hold the flock, so (re)initialise. */
    init_region(r, 0);
    return r;
  }
  if (magic != VGPU_REGION_MAGIC) {
    *why = "it is not a vgpu region (bad magic)";
  } else if (r->header.version != VGPU_REGION_VERSION) {
    *why = "it has another layout version";
  } else if (r->header.header_size != sizeof(r->header) || r->header.file_size != want ||
             r->header.max_devices != VGPU_REGION_MAX_DEVICES ||
             r->header.max_procs != VGPU_REGION_MAX_PROCS ||
             LOAD(&r->header.device_count) > VGPU_REGION_MAX_DEVICES) {
    *why = "its header is corrupt";
  } else if (LOAD(&r->header.flags) & VGPU_REGION_FLAG_UNUSABLE) {
    *why = "a process of the container found it corrupt";
  } else if (!usable_body(r, why)) {
    mark_unusable(r); /* for the node monitor, and for the container's next processes */
  } else {
    return r;
  }
  munmap(p, want);
  return NULL;
}

/* 1 when `fd` is a plain file with one name; else 0 with `why` set. The path may lie in a folder
 * others can write to (the default /tmp/cudevshr.cache): a link to another file there must not
 * have that file grown, mapped and written (nor its mode changed). */
static int plain_file(int fd, const char** why) {
  struct stat st;
  /* A raw syscall: glibc's fstat wrapper binds to GLIBC_2.33, too new for old images. */
  if (syscall(SYS_fstat, fd, &st) != 0) {
    *why = "cannot stat it";
    return 0;
  }
  if (!S_ISREG(st.st_mode)) {
    *why = "it is not a regular file";
    return 0;
  }
  if (st.st_nlink != 1) {
    *why = "it has other names (a hard link to another file?)";
    return 0;
  }
  return 1;
}

static int open_file(const char* path, const char** why) {
  /* O_NOFOLLOW: a symbolic link is refused, not followed. O_NONBLOCK: a FIFO put there opens at
   * once (and is then refused as not a regular file) instead of blocking. */
  const int flags = O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  int fd = open(path, flags | O_CREAT | O_EXCL, 0666);
  if (fd >= 0) {
    /* Ours: every user of the container shares it, whatever the umask. A file someone else made
     * (`vgpu run`, the device plugin) keeps the mode they chose. */
    (void)fchmod(fd, 0666);
  } else if (errno == EEXIST) {
    fd = open(path, flags);
  }
  if (fd < 0) {
    *why = errno == ELOOP                      ? "it is a symbolic link (refused)"
           : errno == EACCES || errno == EROFS ? "it is not writable"
                                               : "it cannot be opened";
    return -1;
  }
  if (!plain_file(fd, why)) {
    close(fd);
    return -1;
  }
  return fd;
}

int vgpu_region_open(const char* path, struct vgpu_region_handle* h) {
  memset(h, 0, sizeof(*h));
  h->fd = -1;
  h->slot = -1;
  const char* why = NULL;
  int fd = open_file(path, &why);
  if (fd >= 0) {
    if (flock_retry(fd, LOCK_EX) != 0) {
      why = "it cannot be locked";
    } else {
      struct vgpu_region* r = map_file(fd, &why);
      flock_retry(fd, LOCK_UN);
      if (r != NULL) {
        h->region = r;
        h->fd = fd;
        return 0;
      }
    }
    close(fd);
  }
  if (vgpu_region_open_private(h) != 0) return -1;
  h->unusable_why = why;
  return 0;
}

const char* vgpu_region_failure(const struct vgpu_region_handle* h) {
  if (h->unusable_why != NULL) return h->unusable_why;
  const struct vgpu_region* r = h->region;
  if (r == NULL || h->is_private) return NULL;
  if (LOAD(&r->header.magic) != VGPU_REGION_MAGIC) return "its header was overwritten";
  if (LOAD(&r->header.device_count) > VGPU_REGION_MAX_DEVICES) {
    mark_unusable((struct vgpu_region*)(uintptr_t)r);
    return "its device count is corrupt";
  }
  if (LOAD(&r->header.flags) & VGPU_REGION_FLAG_UNUSABLE) {
    return "a process of the container found it corrupt";
  }
  return NULL;
}

int vgpu_region_register_device(struct vgpu_region_handle* h, const char* uuid, uint64_t physical,
                                uint64_t limit, uint32_t sm_limit, uint32_t sm_policy) {
  struct vgpu_region* r = h->region;
  if (h->fd >= 0) flock_retry(h->fd, LOCK_EX);
  int found = -1;
  const uint32_t count = device_count(r);
  for (uint32_t d = 0; d < count; ++d) {
    if (strncmp(r->devices[d].uuid, uuid, VGPU_REGION_UUID_LEN) == 0) {
      found = (int)d;
      break;
    }
  }
  if (found < 0 && count < VGPU_REGION_MAX_DEVICES) {
    struct vgpu_region_device* dev = &r->devices[count];
    snprintf(dev->uuid, sizeof(dev->uuid), "%s", uuid);
    dev->mem_physical = physical;
    dev->mem_limit = limit == VGPU_MEM_UNLIMITED ? 0 : limit;
    dev->flags = limit == 0 ? VGPU_DEVICE_FLAG_NO_MEMORY : 0u;
    dev->sm_limit = sm_limit;
    dev->sm_policy = sm_policy;
    STORE(&r->header.device_count, count + 1);
    found = (int)count;
  }
  if (found >= 0 && r->devices[found].mem_physical == 0) r->devices[found].mem_physical = physical;
  if (h->fd >= 0) flock_retry(h->fd, LOCK_UN);
  return found;
}

int vgpu_parse_stat_start_time(const char* text, uint64_t* out) {
  const char* p = strrchr(text, ')'); /* the command name may contain spaces and parentheses */
  if (p == NULL) return -1;
  ++p;
  /* After ')' come fields 3.. ; the start time is field 22, i.e. the 20th after the name. */
  for (int field = 3; field < 22; ++field) {
    while (*p == ' ') ++p;
    while (*p != ' ' && *p != '\0') ++p;
    if (*p == '\0') return -1;
  }
  while (*p == ' ') ++p;
  if (*p < '0' || *p > '9') return -1;
  uint64_t v = 0;
  for (; *p >= '0' && *p <= '9'; ++p) v = v * 10 + (uint64_t)(*p - '0');
  *out = v;
  return 0;
}

/* Start time and state letter (field 3: R, S, D, Z, X, ...) of /proc/<pid>/stat. */
static int proc_stat(int pid, uint64_t* start, char* state) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char* name_end = strrchr(buf, ')');
  if (name_end == NULL || name_end[1] != ' ' || name_end[2] == '\0') return -1;
  *state = name_end[2];
  return vgpu_parse_stat_start_time(buf, start);
}

int vgpu_proc_start_time(int pid, uint64_t* out) {
  char state = 0;
  return proc_stat(pid, out, &state);
}

/* 1 when the slot's owner is gone (dead, or its pid now belongs to another process). `start_time`
 * is the slot's, read after `pid`. */
static int slot_is_dead(const struct vgpu_region_proc* slot, int pid, uint64_t start_time,
                        int check_start_time) {
  if (pid == (int)getpid()) return 1; /* ours from before an exec(): that image is gone */
  if (kill(pid, 0) != 0 && errno == ESRCH) return 1;
  if (!check_start_time) return 0;
  const uint32_t status = LOAD(&slot->status);
  /* Still claiming: the new owner has taken `pid` but not yet written its start time (a freed
   * slot's start time is 0, see forget_owner), so the one read may be stale. */
  if (status != VGPU_SLOT_ACTIVE || start_time == 0) return 0;
  uint64_t start = 0;
  char state = 0;
  if (proc_stat(pid, &start, &state) != 0) return 1;
  /* A zombie (killed, its parent not waiting: e.g. an orphan under a container's PID 1 that
   * never reaps) holds no GPU memory any more: the driver freed it when the process exited. */
  if (state == 'Z' || state == 'X') return 1;
  return start != start_time;
}

/* Zeroes the slot's counters, subtracting them from the totals, while the slot still belongs to
 * `owner` (checked under each device lock, so a slot re-claimed meanwhile is left alone). 1 when
 * every device was done; devices in `skip` are not tried, and one whose lock did not come is added
 * to it. */
static int clear_slot_usage(struct vgpu_region* r, struct vgpu_region_proc* slot, int owner,
                            int wait_ms, uint32_t* skip) {
  const uint32_t count = device_count(r);
  int done = 1;
  for (uint32_t d = 0; d < count; ++d) {
    /* Idempotent under the lock: a reaper killed half-way leaves work the next one redoes. */
    if ((*skip & (1u << d)) != 0) {
      done = 0;
      continue;
    }
    if (lock_device_within(r, (int)d, wait_ms) != 0) {
      *skip |= 1u << d;
      done = 0;
      continue;
    }
    if (LOAD(&slot->pid) != owner) {
      unlock_device(r, (int)d);
      return 0;
    }
    const uint64_t mine = add_saturated(LOAD(&slot->mem_used[d]), LOAD(&slot->mem_overhead[d]));
    const uint64_t total = LOAD(&r->devices[d].mem_used);
    STORE(&r->devices[d].mem_used, total > mine ? total - mine : 0);
    STORE(&slot->mem_used[d], 0);
    STORE(&slot->mem_overhead[d], 0);
    STORE(&slot->sm_gpu_time_ns[d], 0);
    unlock_device(r, (int)d);
  }
  return done;
}

/* Forgets the start time of a slot about to be freed, unless the slot changed hands meanwhile
 * (then the start time is the new owner's). A freed slot thus carries start time 0 until its next
 * owner writes its own, which tells a full check that this owner is still claiming: without it, a
 * reaper could compare a live claimer's start time with its predecessor's and take its slot. */
static void forget_owner(struct vgpu_region_proc* slot, uint64_t start_time) {
  __atomic_compare_exchange_n(&slot->start_time, &start_time, 0, 0, __ATOMIC_ACQ_REL,
                              __ATOMIC_ACQUIRE);
}

/* The driver frees a process's memory some time after the process is gone (its contexts are torn
 * down): on an H100, streams of processes exiting at a 4-GiB limit left the device holding 6.7 GiB
 * for the container when dead slots were reaped at once. A dead slot's charge therefore stays
 * while the probe (NVML's process list) still shows its process on a device where it held memory,
 * for at most DRAIN_MAX_NS from when this process first saw it dead: a host PID reused by another
 * GPU process, or a probe that never stops answering "held", cannot keep the charge forever. */
#define DRAIN_MAX_NS 5000000000ull
static vgpu_region_drain_probe g_drain_probe;
static struct {
  int pid;
  uint64_t start_time;
  uint64_t first_seen_ns;
} g_draining[VGPU_REGION_MAX_PROCS]; /* this process's view; a race between threads is harmless */

int vgpu_region_draining(const struct vgpu_region_handle* h, int dev) {
  return dev >= 0 && dev < 32 && (LOAD(&h->draining) & (1u << (unsigned)dev)) != 0;
}

void vgpu_region_set_drain_probe(vgpu_region_drain_probe probe) {
  __atomic_store_n(&g_drain_probe, probe, __ATOMIC_RELEASE);
}

static uint64_t monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Devices on which the dead owner of slot `s` may still hold memory: its charge stays there. */
static uint32_t still_draining(struct vgpu_region* r, int s, int pid, uint64_t start_time) {
  const vgpu_region_drain_probe probe = __atomic_load_n(&g_drain_probe, __ATOMIC_ACQUIRE);
  if (probe == NULL) return 0;
  const struct vgpu_region_proc* slot = &r->procs[s];
  const unsigned nvml_pid = vgpu_region_nvml_pid(slot);
  const uint64_t now = monotonic_ns();
  if (LOAD(&g_draining[s].pid) != pid || LOAD(&g_draining[s].start_time) != start_time) {
    STORE(&g_draining[s].first_seen_ns, now);
    STORE(&g_draining[s].start_time, start_time);
    STORE(&g_draining[s].pid, pid);
  } else if (now - LOAD(&g_draining[s].first_seen_ns) > DRAIN_MAX_NS) {
    return 0;
  }
  uint32_t held = 0;
  const uint32_t count = device_count(r);
  for (uint32_t d = 0; d < count; ++d) {
    if (add_saturated(LOAD(&slot->mem_used[d]), LOAD(&slot->mem_overhead[d])) == 0) continue;
    char uuid[VGPU_REGION_UUID_LEN];
    memcpy(uuid, r->devices[d].uuid, sizeof uuid);
    uuid[sizeof uuid - 1] = '\0';
    if (probe(uuid, nvml_pid) == 1) held |= 1u << d;
  }
  return held;
}

int vgpu_region_reap(struct vgpu_region_handle* h, int check_start_time) {
  struct vgpu_region* r = h->region;
  int reaped = 0;
  uint32_t skip = 0;
  uint32_t draining = 0;
  for (int s = 0; s < VGPU_REGION_MAX_PROCS; ++s) {
    if (s == h->slot) continue;
    struct vgpu_region_proc* slot = &r->procs[s];
    int pid = LOAD(&slot->pid);
    if (pid == 0) continue;
    const uint64_t start_time = LOAD(&slot->start_time);
    if (!slot_is_dead(slot, pid, start_time, check_start_time)) continue;
    const uint32_t held = still_draining(r, s, pid, start_time);
    if (held != 0) {
      draining |= held;
      continue;
    }
    /* Someone else's slot: a short wait (what is not done now is done at the next look), and the
     * slot is freed only once its usage is gone from the totals. */
    if (!clear_slot_usage(r, slot, pid, LOCK_WAIT_REAP_MS, &skip)) continue;
    if (LOAD(&slot->pid) == pid) forget_owner(slot, start_time);
    /* `status` is left to the next claimer, which rewrites it after taking `pid`. */
    if (__atomic_compare_exchange_n(&slot->pid, &pid, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      ++reaped;
    }
  }
  STORE(&h->draining, draining);
  return reaped;
}

int vgpu_region_claim_slot(struct vgpu_region_handle* h, int pid, uint64_t start_time,
                           int priority) {
  struct vgpu_region* r = h->region;
  vgpu_region_reap(h, 0);
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (int s = 0; s < VGPU_REGION_MAX_PROCS; ++s) {
      struct vgpu_region_proc* slot = &r->procs[s];
      int expected = 0;
      if (LOAD(&slot->pid) != 0) continue;
      if (!__atomic_compare_exchange_n(&slot->pid, &expected, pid, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE)) {
        continue;
      }
      STORE(&slot->status, VGPU_SLOT_CLAIMING);
      STORE(&slot->start_time, start_time);
      STORE(&slot->host_start_time, 0); /* the monitor matches the new owner anew */
      STORE(&slot->host_pid, 0);
      slot->priority = priority;
      /* Leftovers of an owner reaped half-way are cleared under the device locks. */
      uint32_t skip = 0;
      (void)clear_slot_usage(r, slot, pid, LOCK_WAIT_MS, &skip);
      STORE(&slot->status, VGPU_SLOT_ACTIVE);
      h->slot = s;
      h->pid = pid;
      return 0;
    }
    vgpu_region_reap(h, 1); /* full: look for reused pids too, then try once more */
  }
  return -1;
}

void vgpu_region_release_slot(struct vgpu_region_handle* h) {
  if (h->region == NULL || h->slot < 0) return;
  struct vgpu_region_proc* slot = &h->region->procs[h->slot];
  uint32_t skip = 0;
  (void)clear_slot_usage(h->region, slot, h->pid, LOCK_WAIT_MS, &skip);
  forget_owner(slot, LOAD(&slot->start_time));
  STORE(&slot->status, VGPU_SLOT_FREE);
  STORE(&slot->pid, 0);
  h->slot = -1;
}

unsigned vgpu_region_nvml_pid(const struct vgpu_region_proc* slot) {
  const int pid = LOAD(&slot->pid);
  const uint64_t matched = __atomic_load_n(&slot->host_start_time, __ATOMIC_ACQUIRE);
  const int host = LOAD(&slot->host_pid);
  if (pid != 0 && host > 0 && matched != 0 && matched == slot->start_time) return (unsigned)host;
  return (unsigned)pid;
}

int vgpu_region_reserve(struct vgpu_region_handle* h, int dev, uint64_t bytes) {
  struct vgpu_region* r = h->region;
  struct vgpu_region_device* d = &r->devices[dev];
  if (lock_device(r, dev) != 0) return -1;
  const uint64_t used = LOAD(&d->mem_used);
  if (!vgpu_fits(used, bytes, vgpu_region_limit(d))) {
    unlock_device(r, dev);
    return -1;
  }
  STORE(&d->mem_used, used + bytes);
  if (h->slot >= 0) {
    uint64_t* mine = &r->procs[h->slot].mem_used[dev];
    STORE(mine, add_saturated(LOAD(mine), bytes));
  }
  unlock_device(r, dev);
  return 0;
}

int vgpu_region_reserve_overhead(struct vgpu_region_handle* h, int dev, uint64_t bytes) {
  struct vgpu_region* r = h->region;
  struct vgpu_region_device* d = &r->devices[dev];
  if (h->slot < 0 || lock_device(r, dev) != 0) return -1;
  const uint64_t used = LOAD(&d->mem_used);
  if (!vgpu_fits(used, bytes, vgpu_region_limit(d))) {
    unlock_device(r, dev);
    return -1;
  }
  STORE(&d->mem_used, used + bytes);
  uint64_t* mine = &r->procs[h->slot].mem_overhead[dev];
  STORE(mine, add_saturated(LOAD(mine), bytes));
  unlock_device(r, dev);
  return 0;
}

void vgpu_region_release_overhead(struct vgpu_region_handle* h, int dev, uint64_t bytes) {
  struct vgpu_region* r = h->region;
  if (h->slot < 0 || lock_device(r, dev) != 0) return;
  uint64_t* mine = &r->procs[h->slot].mem_overhead[dev];
  const uint64_t have = LOAD(mine);
  const uint64_t take = bytes < have ? bytes : have;
  STORE(mine, have - take);
  const uint64_t used = LOAD(&r->devices[dev].mem_used);
  STORE(&r->devices[dev].mem_used, used > take ? used - take : 0);
  unlock_device(r, dev);
}

/* A context larger than this is no context: a scribbled hint must not refuse every context. */
#define CONTEXT_HINT_MAX (4ull << 30)

uint64_t vgpu_region_context_hint(const struct vgpu_region_handle* h, int dev) {
  const uint64_t hint = LOAD(&h->region->devices[dev].context_bytes);
  return hint < CONTEXT_HINT_MAX ? hint : CONTEXT_HINT_MAX;
}

void vgpu_region_note_context(struct vgpu_region_handle* h, int dev, uint64_t bytes) {
  uint64_t* hint = &h->region->devices[dev].context_bytes;
  if (bytes > CONTEXT_HINT_MAX) bytes = CONTEXT_HINT_MAX;
  uint64_t old = LOAD(hint);
  while (bytes > old &&
         !__atomic_compare_exchange_n(hint, &old, bytes, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
  }
}

int vgpu_region_begin_first_context(struct vgpu_region_handle* h) {
  return h->fd >= 0 && flock_retry(h->fd, LOCK_EX) == 0;
}

void vgpu_region_end_first_context(struct vgpu_region_handle* h) {
  if (h->fd >= 0) flock_retry(h->fd, LOCK_UN);
}

uint64_t vgpu_region_slot_overhead(const struct vgpu_region_handle* h, int dev) {
  if (h->slot < 0) return 0;
  return LOAD(&h->region->procs[h->slot].mem_overhead[dev]);
}

void vgpu_region_release(struct vgpu_region_handle* h, int dev, uint64_t bytes) {
  struct vgpu_region* r = h->region;
  if (lock_device(r, dev) != 0) return;
  uint64_t take = bytes;
  if (h->slot >= 0) {
    uint64_t* mine = &r->procs[h->slot].mem_used[dev];
    const uint64_t have = LOAD(mine);
    if (take > have) take = have; /* never below zero, never someone else's bytes */
    STORE(mine, have - take);
  }
  const uint64_t used = LOAD(&r->devices[dev].mem_used);
  STORE(&r->devices[dev].mem_used, used > take ? used - take : 0);
  unlock_device(r, dev);
}

void vgpu_region_set_overhead(struct vgpu_region_handle* h, int dev, uint64_t bytes) {
  struct vgpu_region* r = h->region;
  if (h->slot < 0 || lock_device(r, dev) != 0) return;
  uint64_t* mine = &r->procs[h->slot].mem_overhead[dev];
  const uint64_t old = LOAD(mine);
  const uint64_t used = LOAD(&r->devices[dev].mem_used);
  const uint64_t next = add_saturated(used - (used > old ? old : used), bytes);
  STORE(&r->devices[dev].mem_used, next);
  STORE(mine, bytes);
  unlock_device(r, dev);
}

uint64_t vgpu_region_limit(const struct vgpu_region_device* d) {
  const uint64_t limit = LOAD(&d->mem_limit);
  if (limit != 0) return limit;
  return (LOAD(&d->flags) & VGPU_DEVICE_FLAG_NO_MEMORY) ? 0 : VGPU_MEM_UNLIMITED;
}

uint64_t vgpu_region_device_used(const struct vgpu_region_handle* h, int dev) {
  return LOAD(&h->region->devices[dev].mem_used);
}

uint64_t vgpu_region_slot_used(const struct vgpu_region_handle* h, int dev) {
  if (h->slot < 0) return 0;
  return LOAD(&h->region->procs[h->slot].mem_used[dev]) +
         LOAD(&h->region->procs[h->slot].mem_overhead[dev]);
}
