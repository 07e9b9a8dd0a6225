/* Exported driver symbols: each is a one-instruction trampoline to its hidden hook, generated from
 * exports.def, plus the name -> hook table used by the dlsym override. */
#include <stddef.h>
#include <string.h>

#define VGPU_EXPORT(exported, hook) extern void hook(void);
#include "exports.def"
#undef VGPU_EXPORT

#if defined(__x86_64__)
#define VGPU_JUMP "jmp"
#elif defined(__aarch64__)
#define VGPU_JUMP "b"
#else
#error "libvgpu: add the tail-jump instruction of this architecture"
#endif

#define VGPU_EXPORT(exported, hook)                                                            \
  __asm__(".text\n.globl " #exported "\n.type " #exported ",@function\n.p2align 4\n" #exported \
          ":\n\t" VGPU_JUMP " " #hook "\n.size " #exported ",.-" #exported "\n");
#include "exports.def"
#undef VGPU_EXPORT

struct export_entry {
  const char* name;
  void (*hook)(void);
};

static const struct export_entry kExports[] = {
#define VGPU_EXPORT(exported, hook) {#exported, hook},
#include "exports.def"
#undef VGPU_EXPORT
};

void* vgpu_export_lookup(const char* name) {
  for (size_t i = 0; i < sizeof(kExports) / sizeof(kExports[0]); ++i) {
    if (strcmp(kExports[i].name, name) == 0) return (void*)kExports[i].hook;
  }
  return NULL;
}

/* Marker read by the portability test: the library must be an optimised build. */
#if !defined(__OPTIMIZE__)
#error "libvgpu.so must be built with optimisation (-O2)"
#endif
__asm__(".pushsection .comment\n.string \"libvgpu: optimized build\"\n.popsection\n");
