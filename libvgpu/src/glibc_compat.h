/* Binds the glibc functions libvgpu uses to their oldest versions, so that the library loads into
 * images with glibc >= 2.17 (CentOS 7). Force-included (-include) into every libvgpu source.
 * Debian 12's glibc (2.36) would otherwise bind dlopen/dlvsym to GLIBC_2.34 (moved into libc) and
 * the robust-mutex calls to GLIBC_2.34; their GLIBC_2.2.5/2.12 versions are kept by glibc. */
#ifndef VGPU_GLIBC_COMPAT_H_
#define VGPU_GLIBC_COMPAT_H_

#if defined(__x86_64__)
#define VGPU_PIN(fn, ver) __asm__(".symver " #fn "," #fn "@" ver)
VGPU_PIN(dlopen, "GLIBC_2.2.5");
VGPU_PIN(dlvsym, "GLIBC_2.2.5");
VGPU_PIN(dlerror, "GLIBC_2.2.5");
VGPU_PIN(pthread_mutexattr_setrobust, "GLIBC_2.12");
VGPU_PIN(pthread_mutex_consistent, "GLIBC_2.12");
VGPU_PIN(pthread_mutexattr_setpshared, "GLIBC_2.2.5");
VGPU_PIN(pthread_mutexattr_init, "GLIBC_2.2.5");
VGPU_PIN(pthread_mutexattr_destroy, "GLIBC_2.2.5");
VGPU_PIN(pthread_mutex_init, "GLIBC_2.2.5");
VGPU_PIN(pthread_mutex_lock, "GLIBC_2.2.5");
VGPU_PIN(pthread_mutex_timedlock, "GLIBC_2.2.5");
VGPU_PIN(pthread_mutex_trylock, "GLIBC_2.2.5");
VGPU_PIN(pthread_mutex_unlock, "GLIBC_2.2.5");
VGPU_PIN(__register_atfork, "GLIBC_2.3.2");
/* The SM limiter's measuring thread (moved into libc in 2.34 too). */
VGPU_PIN(pthread_create, "GLIBC_2.2.5");
VGPU_PIN(pthread_join, "GLIBC_2.2.5");
VGPU_PIN(pthread_attr_setstacksize, "GLIBC_2.2.5");
VGPU_PIN(pthread_sigmask, "GLIBC_2.2.5");
VGPU_PIN(pthread_setname_np, "GLIBC_2.12");
/* Its count of coasted launches at a launching thread's exit (sm/limiter.cpp). */
VGPU_PIN(pthread_key_create, "GLIBC_2.2.5");
VGPU_PIN(pthread_setspecific, "GLIBC_2.2.5");
#undef VGPU_PIN
#endif

#endif
