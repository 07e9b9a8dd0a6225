/* The one way libvgpu prints (docs/libvgpu.md, "Logging"): one line on stderr, written in a
 * single write(2), "[vgpu <LEVEL>(pid <n>)]: <message>", printed when its level is at most
 * LIBCUDA_LOG_LEVEL (0 errors ... 4 debug; default 1: errors and warnings). Nothing is printed on
 * success paths at the default level. The SM limiter's C++ (src/sm/) calls it too, hence the C
 * linkage. */
#ifndef VGPU_LOG_H_
#define VGPU_LOG_H_

#ifdef __cplusplus
extern "C" {
#endif

enum { VGPU_LOG_ERROR = 0, VGPU_LOG_WARN = 1, VGPU_LOG_INFO = 2, VGPU_LOG_DEBUG = 4 };

void vgpu_log(int level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif

#define VGPU_ERROR(...) vgpu_log(VGPU_LOG_ERROR, __VA_ARGS__)
#define VGPU_WARN(...) vgpu_log(VGPU_LOG_WARN, __VA_ARGS__)
#define VGPU_INFO(...) vgpu_log(VGPU_LOG_INFO, __VA_ARGS__)
#define VGPU_DEBUG(...) vgpu_log(VGPU_LOG_DEBUG, __VA_ARGS__)

#endif
