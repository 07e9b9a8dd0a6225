/* Memory arithmetic of the faked views and of admission: pure, overflow-safe, unit-tested. */
#ifndef VGPU_MEM_ARITH_H_
#define VGPU_MEM_ARITH_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A byte limit that does not exist. Every other value, 0 included, is a limit: 0 bytes means that
 * nothing may be allocated (an explicit 0, or a limit that could not be read: fail closed). */
#define VGPU_MEM_UNLIMITED UINT64_MAX

/* Free memory to report: max(0, min(limit, physical, used + real_free) - used); without a limit
 * the card's own free memory. Never underflows. */
uint64_t vgpu_fake_free(uint64_t limit, uint64_t physical, uint64_t real_free, uint64_t used);

/* Total memory to report: the limit when there is one and it is below physical, else physical. */
uint64_t vgpu_fake_total(uint64_t limit, uint64_t physical);

/* Admission arithmetic: 1 when `used + request` fits under `limit` without overflow, else 0. */
int vgpu_fits(uint64_t used, uint64_t request, uint64_t limit);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_MEM_ARITH_H_ */
