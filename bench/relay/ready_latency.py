#!/usr/bin/env python3
# Times READY from the relay's process start with the second PC unreachable (20 runs).
# Usage: bench/relay/ready_latency.py RELAY MMPROJ MODEL   (make run leaves a demo mmproj in .demo/strata/models)
import subprocess, time, os, json, statistics, sys
relay = sys.argv[1]; mmproj = sys.argv[2]; model = sys.argv[3]
import tempfile
settings = os.path.join(tempfile.mkdtemp(), "settings.json")
json.dump({"vision":"remote","remote":{"host":"127.0.0.1","port":9,"user":"nobody","host_key":"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl","key_file":"/nonexistent"}}, open(settings,"w"))
env = dict(os.environ, STRATA_COMPANION_SETTINGS=settings)
ts = []
for i in range(20):
    t0 = time.perf_counter()
    p = subprocess.Popen([relay, "--mmproj", mmproj, "--model", model, "--gpu"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    line = p.stdout.readline()
    ts.append((time.perf_counter()-t0)*1000)
    assert line.startswith("READY"), line
    p.stdin.write("QUIT\n"); p.stdin.flush(); p.wait()
print("READY after process start: min %.1f ms, median %.1f ms, max %.1f ms (%s)" % (min(ts), statistics.median(ts), max(ts), line.strip()))
