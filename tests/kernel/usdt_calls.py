# A Python program whose static markers the usdt test counts: it waits for the file argv[2]
# (the daemon has attached by then), then calls f exactly argv[1] times, prints "done" and
# sleeps until killed. The same program with 0 calls is the baseline: the difference is the
# calls.
#
# CPython 3.11 reaches its function__entry and function__return markers only on its tracing
# path, taken while a profile or trace function is set: the profile function here is the
# builtin slice, which takes the three arguments and runs no Python code of its own.
import os
import sys
import time

count = int(sys.argv[1])
while not os.path.exists(sys.argv[2]):
    time.sleep(0.02)


def f(i):
    return i


sys.setprofile(slice)
for i in range(count):
    f(i)
sys.setprofile(None)
print("done", flush=True)
while True:
    time.sleep(1000)
