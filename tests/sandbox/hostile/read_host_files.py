# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: OK
# Why: tries to read files outside what Python needs (the test binary, the host's
# /etc/hostname, /root, /home, /work, another process's /proc entry, the server's command
# line, /dev/shm): with Landlock confining reads none can be opened, so it returns [].
# Requires: landlock (otherwise the verdict differs; the e2e test skips it).

import os

def solve():
    readable = []
    for path in ["/proc/self/exe", "/etc/hostname", "/proc/1/cmdline",
                 "/proc/%d/cmdline" % os.getppid(), "/proc/%d/environ" % os.getppid()]:
        try:
            with open(path, "rb") as f:
                f.read(1)
            readable.append(path)
        except OSError:
            pass
    for path in ["/root", "/home", "/work", "/dev/shm", "/"]:
        try:
            os.listdir(path)
            readable.append(path)
        except OSError:
            pass
    return readable
