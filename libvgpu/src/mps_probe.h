/* Whether an NVIDIA MPS control daemon serves this process (VGPU_SHARING_MODE=mps). CUDA runs a
 * process whose pipe directory has no daemon outside MPS, silently and with every SM: libvgpu then
 * keeps its time-slice limiter (fail closed). */
#ifndef VGPU_MPS_PROBE_H_
#define VGPU_MPS_PROBE_H_

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when a daemon accepts a connection on <pipe_dir>/control, else 0. `pipe_dir` NULL or empty:
 * MPS's default, VGPU_DEFAULT_MPS_PIPE_DIRECTORY. */
int vgpu_mps_daemon_answers(const char* pipe_dir);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_MPS_PROBE_H_ */
