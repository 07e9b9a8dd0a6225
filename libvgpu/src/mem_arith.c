#include "mem_arith.h"

uint64_t vgpu_fake_total(uint64_t limit, uint64_t physical) {
  if (limit != VGPU_MEM_UNLIMITED && (physical == 0 || limit < physical)) return limit;
  return physical;
}

uint64_t vgpu_fake_free(uint64_t limit, uint64_t physical, uint64_t real_free, uint64_t used) {
  uint64_t cap = vgpu_fake_total(limit, physical);
  if (limit == VGPU_MEM_UNLIMITED) return real_free < cap ? real_free : cap;
  /* What the card could still give us, expressed as a ceiling on our usage. */
  const uint64_t reachable = (real_free > UINT64_MAX - used) ? UINT64_MAX : used + real_free;
  if (reachable < cap) cap = reachable;
  return cap > used ? cap - used : 0;
}

int vgpu_fits(uint64_t used, uint64_t request, uint64_t limit) {
  if (limit == VGPU_MEM_UNLIMITED) return request <= UINT64_MAX - used;
  if (request > limit) return 0;
  return used <= limit - request;
}
