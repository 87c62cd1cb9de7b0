"""A Python process of the shared-limit scenes (demo/scenes/scene.py):
opens the semaphore with its label, asks for its permits (blocking),
prints `granted`, then releases when a line arrives on stdin (or holds
until it is killed)."""

import sys

import volt_sem

kind, name, total, label, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
if kind == "named":
    sem = volt_sem.Semaphore.open(name, total, label=label)
else:
    sem = volt_sem.Semaphore.connect(sys.argv[6], name, total, label=label, lease=2.0)
print("ready", flush=True)
sem.acquire_blocking(n)
print("granted", flush=True)
sys.stdin.readline()
sem.release(n)
print("released", flush=True)
if kind == "redis":
    sem.disconnect()
