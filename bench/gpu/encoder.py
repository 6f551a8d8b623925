#!/usr/bin/env python3
"""A strata-vision stand-in that holds real VRAM, for bench/gpu.

It speaks strata-vision's protocol as the agent expects it: on --gpu it
allocates GPU_BENCH_MIB MiB (default 1383, what docs/strata.md measured for
the real encoder) on the card CUDA gives it, prints the warm-up line on
stderr and "READY 2048" on stdout, answers each "ENC <in> <out>" with a tiny
output file and "OK 1 1 1 0", and exits on QUIT or the end of its input,
which gives the VRAM back.

It allocates with the CUDA driver API (libcuda: cuInit, cuCtxCreate,
cuMemAlloc, cuMemsetD8) through ctypes, else with torch when that is
installed. --check says which one this machine has and exits (0: one works).
"""
import ctypes
import ctypes.util
import os
import sys

MIB = int(os.environ.get("GPU_BENCH_MIB", "1383"))


def libcuda():
    names = ["nvcuda.dll"] if os.name == "nt" else ["libcuda.so.1", "libcuda.so", "/usr/lib/wsl/lib/libcuda.so.1"]
    found = ctypes.util.find_library("cuda")
    if found:
        names.append(found)
    for n in names:
        try:
            return ctypes.CDLL(n), n
        except OSError:
            continue
    return None, None


def check(fn, what):
    r = fn
    if r != 0:
        raise RuntimeError("%s failed with CUDA error %d" % (what, r))


def alloc_libcuda(mib):
    lib, name = libcuda()
    if lib is None:
        raise RuntimeError("no libcuda (the NVIDIA driver's CUDA library) found")
    check(lib.cuInit(0), "cuInit")
    n = ctypes.c_int(0)
    check(lib.cuDeviceGetCount(ctypes.byref(n)), "cuDeviceGetCount")
    if n.value == 0:
        raise RuntimeError("libcuda sees no GPU")
    dev = ctypes.c_int(0)
    check(lib.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    ctx = ctypes.c_void_p()
    check(lib.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev), "cuCtxCreate")
    if mib == 0:
        return "libcuda (%s, cuMemAlloc), %d GPU(s) visible" % (name, n.value), None
    ptr = ctypes.c_uint64()
    size = ctypes.c_size_t(mib << 20)
    check(lib.cuMemAlloc_v2(ctypes.byref(ptr), size), "cuMemAlloc")
    check(lib.cuMemsetD8_v2(ptr, ctypes.c_ubyte(1), size), "cuMemsetD8")  # really touch it
    check(lib.cuCtxSynchronize(), "cuCtxSynchronize")
    return "libcuda (%s, cuMemAlloc)" % name, (lib, ctx, ptr)


def alloc_torch(mib):
    import torch  # noqa: only when libcuda is not usable

    if not torch.cuda.is_available():
        raise RuntimeError("torch %s sees no CUDA GPU" % torch.__version__)
    if mib == 0:
        return "torch %s" % torch.__version__, None
    t = torch.ones(mib << 20, dtype=torch.uint8, device="cuda:0")
    torch.cuda.synchronize()
    return "torch %s" % torch.__version__, t


def alloc(mib):
    errs = []
    for f in (alloc_libcuda, alloc_torch):
        try:
            return f(mib)
        except Exception as e:  # ImportError, OSError, RuntimeError
            errs.append("%s: %s" % (f.__name__[6:], e))
    raise RuntimeError("; ".join(errs))


def main():
    args = sys.argv[1:]
    if "--check" in args:
        try:
            how, _ = alloc(0)
        except RuntimeError as e:
            print("no way to allocate VRAM here: %s" % e)
            return 3
        print("allocator: %s" % how)
        return 0
    hold = None
    if "--gpu" in args:
        try:
            how, hold = alloc(MIB)
        except RuntimeError as e:
            print("strata-vision: failed to initialize CUDA: %s" % e, file=sys.stderr, flush=True)
            return 1
        print("strata-vision: warmed up at 1 image tokens (%d MiB held with %s)" % (MIB, how), file=sys.stderr, flush=True)
    else:
        print("strata-vision: on the CPU, 1 threads, no warm-up", file=sys.stderr, flush=True)
    print("READY 2048", flush=True)
    for line in sys.stdin:
        f = line.split()
        if not f or f[0] == "QUIT":
            break
        if f[0] == "ENC" and len(f) == 3:
            with open(f[2], "wb") as out:
                out.write(b"SVE0" + bytes(16))
            print("OK 1 1 1 0", flush=True)
        else:
            print("ERR unknown request", flush=True)
    del hold
    return 0


if __name__ == "__main__":
    sys.exit(main())
