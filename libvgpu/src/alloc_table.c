#include "alloc_table.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_key(int kind, uint64_t key) {
  uint64_t x = key ^ ((uint64_t)kind << 56);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

static int grow(struct vgpu_alloc_table* t) {
  const uint64_t capacity = t->capacity == 0 ? 256 : t->capacity * 2;
  struct vgpu_alloc_entry* slots = calloc(capacity, sizeof(*slots));
  if (slots == NULL) return -1;
  for (uint64_t i = 0; i < t->capacity; ++i) {
    const struct vgpu_alloc_entry* e = &t->slots[i];
    if (e->key == 0 || e->kind < 0) continue;
    uint64_t j = hash_key(e->kind, e->key) & (capacity - 1);
    while (slots[j].key != 0) j = (j + 1) & (capacity - 1);
    slots[j] = *e;
  }
  free(t->slots);
  t->slots = slots;
  t->capacity = capacity;
  t->used = t->live;
  return 0;
}

int vgpu_alloc_put(struct vgpu_alloc_table* t, int kind, uint64_t key, uint64_t size, int device,
                   uint64_t* old_size, int* old_device) {
  if (key == 0) return -1;
  if ((t->used + 1) * 4 >= t->capacity * 3 && grow(t) != 0) return -1;
  const uint64_t mask = t->capacity - 1;
  uint64_t i = hash_key(kind, key) & mask;
  int64_t reuse = -1;
  for (;; i = (i + 1) & mask) {
    struct vgpu_alloc_entry* e = &t->slots[i];
    if (e->key == 0) break;
    if (e->kind < 0) {
      if (reuse < 0) reuse = (int64_t)i;
      continue;
    }
    if (e->key == key && e->kind == kind) {
      *old_size = e->size;
      *old_device = e->device;
      e->size = size;
      e->device = device;
      return 1;
    }
  }
  struct vgpu_alloc_entry* e = &t->slots[reuse >= 0 ? (uint64_t)reuse : i];
  if (reuse < 0) ++t->used;
  e->key = key;
  e->size = size;
  e->kind = kind;
  e->device = device;
  ++t->live;
  return 0;
}

int vgpu_alloc_take(struct vgpu_alloc_table* t, int kind, uint64_t key, uint64_t* size,
                    int* device) {
  if (t->capacity == 0 || key == 0) return 0;
  const uint64_t mask = t->capacity - 1;
  for (uint64_t i = hash_key(kind, key) & mask;; i = (i + 1) & mask) {
    struct vgpu_alloc_entry* e = &t->slots[i];
    if (e->key == 0) return 0;
    if (e->kind == kind && e->key == key) {
      *size = e->size;
      *device = e->device;
      e->kind = -1; /* tombstone keeps probe chains intact */
      --t->live;
      return 1;
    }
  }
}

uint64_t vgpu_alloc_sum(const struct vgpu_alloc_table* t, int device) {
  uint64_t sum = 0;
  for (uint64_t i = 0; i < t->capacity; ++i) {
    const struct vgpu_alloc_entry* e = &t->slots[i];
    if (e->key != 0 && e->kind > 0 && e->device == device) sum += e->size;
  }
  return sum;
}

void vgpu_alloc_reset(struct vgpu_alloc_table* t) {
  if (t->slots != NULL) memset(t->slots, 0, t->capacity * sizeof(*t->slots));
  t->used = 0;
  t->live = 0;
}
