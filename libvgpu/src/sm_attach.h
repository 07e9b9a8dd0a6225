/* Starts the SM limiter with libvgpu's settings and driver (sm_attach.c). */
#ifndef VGPU_SM_ATTACH_H_
#define VGPU_SM_ATTACH_H_

/* Call once the CUDA side of libvgpu is set up (vgpu_state_cuda): the settings are read and the
 * visible devices registered in the region. */
void vgpu_sm_attach(void);

#endif
