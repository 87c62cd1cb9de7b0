"""What both benchmark scripts record about the run (machine, commit, load)
and how they write their JSON, in one place."""

import json
import os
import platform
import re
import subprocess
import time


def command(*args):
    try:
        return subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return f"{line.split(':', 1)[1].strip()}, {os.cpu_count()} cores"
    except OSError:
        pass
    return f"{platform.machine()}, {os.cpu_count()} cores"


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run_meta():
    """Date, commit and CPU of this run (the rest of `meta` is per script)."""
    here = os.path.dirname(os.path.abspath(__file__))
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": command("git", "-C", here, "rev-parse", "--short", "HEAD"),
        "cpu": cpu_model(),
    }


def to_json(doc):
    """Indented JSON with each list of numbers on one line (readable diffs)."""
    text = json.dumps(doc, indent=1)
    return re.sub(r"\[[-\d.,\s]+\]", lambda m: re.sub(r"\s+", " ", m.group(0)), text) + "\n"
