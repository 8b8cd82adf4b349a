# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: OK
# Why: installs a SIGSYS handler with the signal number's upper 32 bits set (the kernel
# reads an int): the filter compares the low 32 bits and refuses it (EINVAL), so the
# program returns "refused" (a filter comparing 64 bits would let it through: "installed").

import ctypes
import signal

class KernelSigaction(ctypes.Structure):
    _fields_ = [("handler", ctypes.c_void_p), ("flags", ctypes.c_ulong),
                ("restorer", ctypes.c_void_p), ("mask", ctypes.c_ulong)]

def solve():
    libc = ctypes.CDLL(None, use_errno=True)
    act = KernelSigaction(1, 0, None, 0)  # SIG_IGN
    rc = libc.syscall(ctypes.c_long(13), ctypes.c_long(int(signal.SIGSYS) | (1 << 32)),
                      ctypes.byref(act), None, ctypes.c_long(8))
    return "installed" if rc == 0 else "refused"
