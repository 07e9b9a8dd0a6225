"""A native process that attaches CUPTI's activity API and detaches it again (cuptiFinalize), with no
libvgpu: what a limited process goes through at its start and around each calibration window.
Whether launches after the detach cost what they cost before any attach is what a native process
with this cycle, taking turns beside a plain native one (ovh_turns.py --cupti-cycle-config), shows.

  with cupti_cycle.Attached():   # kernel records on for what runs inside
      ...                        # records are dropped; on exit: flush, disable, cuptiFinalize

libcupti: the one already loaded (a framework's), else VGPU_CUPTI_LIBRARY, else the library path,
else the toolkit's: the order libvgpu uses (libvgpu/src/sm/kernel_records.cpp)."""
import ctypes
import os

CONCURRENT_KERNEL = 10  # CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL (cupti_activity.h)
SONAMES = ("libcupti.so.13", "libcupti.so.12", "libcupti.so")
TOOLKIT = ("/usr/local/cuda/lib64/libcupti.so.13", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
           "/usr/local/cuda/lib64/libcupti.so", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so")
BUFFER_BYTES = 1 << 20

_REQUEST = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                            ctypes.POINTER(ctypes.c_size_t))
_COMPLETE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t,
                             ctypes.c_size_t)


def _open():
    for name in SONAMES:
        try:
            return ctypes.CDLL(name, mode=os.RTLD_NOW | os.RTLD_NOLOAD)
        except OSError:
            pass
    configured = os.environ.get("VGPU_CUPTI_LIBRARY")
    for path in ([configured] if configured else []) + list(SONAMES) + list(TOOLKIT):
        try:
            return ctypes.CDLL(path, mode=os.RTLD_NOW)
        except OSError:
            pass
    raise RuntimeError("cupti_cycle: libcupti not found (set VGPU_CUPTI_LIBRARY)")


class Attached:
    """Kernel records on inside the block; CUPTI finalized (detached) after it."""

    def __init__(self):
        self.lib = _open()
        self.buffers = {}  # address -> buffer: alive until CUPTI hands it back
        self.records_bytes = 0
        self._request = _REQUEST(self._on_request)
        self._complete = _COMPLETE(self._on_complete)

    def _on_request(self, buffer, size, max_records):
        b = ctypes.create_string_buffer(BUFFER_BYTES + 8)
        addr = (ctypes.addressof(b) + 7) & ~7
        self.buffers[addr] = b
        buffer[0] = addr
        size[0] = BUFFER_BYTES
        max_records[0] = 0

    def _on_complete(self, ctx, stream, buffer, size, valid):
        self.records_bytes += valid
        self.buffers.pop(buffer, None)

    def _call(self, name, *args):
        rc = getattr(self.lib, name)(*args)
        if rc != 0:
            raise RuntimeError("cupti_cycle: %s returned %d" % (name, rc))

    def __enter__(self):
        self._call("cuptiActivityRegisterCallbacks", self._request, self._complete)
        self._call("cuptiActivityEnable", ctypes.c_int(CONCURRENT_KERNEL))
        return self

    def __exit__(self, *exc):
        self._call("cuptiActivityDisable", ctypes.c_int(CONCURRENT_KERNEL))
        self._call("cuptiActivityFlushAll", ctypes.c_uint32(0))
        self._call("cuptiFinalize")
        return False
