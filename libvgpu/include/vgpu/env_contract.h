/* The environment contract between the device plugin (Allocate), `vgpu run` and libvgpu.so:
 * every variable name and default path, in one place (HAMi's names: docs/libvgpu.md, and
 * hami-compat.md §5–6). C99 and C++; string literals only, so that the preloaded library, the
 * device plugin and the CLI spell each name exactly once.
 *
 * Per-device variables take the device's ordinal among the devices the container sees as a suffix:
 * VGPU_ENV_SM_LIMIT "_0". The suffixed form wins over the plain one. */
#ifndef VGPU_ENV_CONTRACT_H_
#define VGPU_ENV_CONTRACT_H_

/* ---- HAMi's contract -------------------------------------------------------------------- */

/* Bytes per device; suffixes k/m/g/t (powers of 1024), or "<p>%" of the card (vgpu extension);
 * unset or 0 = unlimited. Per device: VGPU_ENV_MEMORY_LIMIT "_<i>". */
#define VGPU_ENV_MEMORY_LIMIT "CUDA_DEVICE_MEMORY_LIMIT"
/* Percent of the card's compute; unset, 0 or >= 100 = unlimited. Per device: "_<i>". */
#define VGPU_ENV_SM_LIMIT "CUDA_DEVICE_SM_LIMIT"
/* Path of the container's shared region (all its processes map it; the node monitor reads it). */
#define VGPU_ENV_SHARED_CACHE "CUDA_DEVICE_MEMORY_SHARED_CACHE"
/* default | force | disable: whether the SM limit holds while the container is alone on its GPU. */
#define VGPU_ENV_CORE_POLICY "GPU_CORE_UTILIZATION_POLICY"
/* 0 high, 1 low (default). */
#define VGPU_ENV_TASK_PRIORITY "CUDA_TASK_PRIORITY"
/* Kill the container's processes on device OOM. */
#define VGPU_ENV_OOM_KILLER "ACTIVE_OOM_KILLER"
/* Memory over-subscription was configured (informational). */
#define VGPU_ENV_OVERSUBSCRIBE "CUDA_OVERSUBSCRIBE"
/* 0 errors only … 4 debug. */
#define VGPU_ENV_LOG_LEVEL "LIBCUDA_LOG_LEVEL"
/* Set to true in a container spec: no /etc/ld.so.preload mount (opt-out of libvgpu). */
#define VGPU_ENV_DISABLE_CONTROL "CUDA_DISABLE_CONTROL"
#define VGPU_ENV_VISIBLE_DEVICES "CUDA_VISIBLE_DEVICES"
#define VGPU_ENV_NVIDIA_VISIBLE_DEVICES "NVIDIA_VISIBLE_DEVICES"

/* Values of VGPU_ENV_CORE_POLICY. */
#define VGPU_CORE_POLICY_DEFAULT "default"
#define VGPU_CORE_POLICY_FORCE "force"
#define VGPU_CORE_POLICY_DISABLE "disable"

/* ---- vgpu's extensions ------------------------------------------------------------------ */

/* The node-wide lock directory (HAMi mounts host /tmp/vgpulock into every container); the SM
 * limiter keeps one file per physical GPU there. */
#define VGPU_ENV_LOCK_DIR "VGPU_SM_PEER_DIR"
/* 1: one stderr line per limited device at exit (launches, measured/charged GPU time, waits);
 * 2: also times the launch hooks. */
#define VGPU_ENV_SM_STATS "VGPU_SM_STATS"
/* Path of libcupti.so to measure kernels with (default: the one the process already loaded, then
 * the library search path, then the CUDA toolkit's); "off" = measure with CUDA events only. */
#define VGPU_ENV_CUPTI_LIBRARY "VGPU_CUPTI_LIBRARY"
/* The pause (ms) between two long stretches of GPU work of a saturating tenant alone on its GPU:
 * long stretches keep the GPU at its sustained clock (docs/sm-limit.md, sm/budget.h; a stretch
 * lasts pause x L / (100 - L) at limit L). 0..VGPU_SM_ALONE_PAUSE_MAX_MS, default
 * VGPU_SM_ALONE_PAUSE_DEFAULT_MS; 0 = the short rhythm everywhere (waits of milliseconds, for a
 * tenant that cares more for latency than throughput). */
#define VGPU_ENV_SM_ALONE_PAUSE "VGPU_SM_ALONE_PAUSE_MS"
#define VGPU_SM_ALONE_PAUSE_DEFAULT_MS 100
#define VGPU_SM_ALONE_PAUSE_MAX_MS 1000
/* How the container shares its GPU: VGPU_SHARING_TIME_SLICE (default; libvgpu's SM limiter
 * throttles launches to CUDA_DEVICE_SM_LIMIT) or VGPU_SHARING_MPS (the process is a client of the
 * GPU's MPS control daemon, which partitions the SMs by CUDA_MPS_ACTIVE_THREAD_PERCENTAGE; libvgpu
 * still enforces and reports memory but never throttles). Unknown values refuse to start (fail
 * closed: a typo must not silently lift the compute limit). */
#define VGPU_ENV_SHARING_MODE "VGPU_SHARING_MODE"
#define VGPU_SHARING_TIME_SLICE "time-slice"
#define VGPU_SHARING_MPS "mps"
/* `vgpu run`: the libvgpu.so to preload. */
#define VGPU_ENV_LIBRARY "VGPU_LIBRARY"

/* ---- NVIDIA MPS's own contract (read by the CUDA driver of an MPS client) ------------- */

/* The control daemon's pipe directory (one daemon per GPU, so one directory per GPU). */
#define VGPU_ENV_MPS_PIPE_DIRECTORY "CUDA_MPS_PIPE_DIRECTORY"
#define VGPU_ENV_MPS_LOG_DIRECTORY "CUDA_MPS_LOG_DIRECTORY"
/* 1..100: the share of the GPU's SMs the client's contexts may use. */
#define VGPU_ENV_MPS_ACTIVE_THREAD_PERCENTAGE "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"
/* "<ordinal>=<n>M[,...]": device memory the client may pin, per device it sees. */
#define VGPU_ENV_MPS_PINNED_DEVICE_MEM_LIMIT "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"

/* ---- default paths ---------------------------------------------------------------------- */

#define VGPU_DEFAULT_SHARED_CACHE "/tmp/cudevshr.cache"
#define VGPU_DEFAULT_LOCK_DIR "/tmp/vgpulock"
#define VGPU_DEFAULT_HOOK_PATH "/usr/local"
#define VGPU_PRELOAD_FILE "/etc/ld.so.preload"
/* MPS's own default pipe directory: where an MPS client container sees its GPU's daemon. */
#define VGPU_DEFAULT_MPS_PIPE_DIRECTORY "/tmp/nvidia-mps"

#endif /* VGPU_ENV_CONTRACT_H_ */
