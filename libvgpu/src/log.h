/* One-line diagnostics on stderr, gated by LIBCUDA_LOG_LEVEL (0 errors ... 4 debug; default 1:
 * errors and warnings). Nothing is printed on success paths at the default level. */
#ifndef VGPU_LOG_H_
#define VGPU_LOG_H_

enum { VGPU_LOG_ERROR = 0, VGPU_LOG_WARN = 1, VGPU_LOG_INFO = 2, VGPU_LOG_DEBUG = 4 };

void vgpu_log(int level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

#define VGPU_ERROR(...) vgpu_log(VGPU_LOG_ERROR, __VA_ARGS__)
#define VGPU_WARN(...) vgpu_log(VGPU_LOG_WARN, __VA_ARGS__)
#define VGPU_INFO(...) vgpu_log(VGPU_LOG_INFO, __VA_ARGS__)
#define VGPU_DEBUG(...) vgpu_log(VGPU_LOG_DEBUG, __VA_ARGS__)

#endif
