"""Facts about the machine and the running process: a leaf module (imports nothing of `benchmarks`).

The CPU's instruction-set flags (which the default tier's backend choice and the bfloat16 cases read), the
machine's description and load for RESULTS.md, the Keras backend of a case's process and its peak memory.
"""

import importlib.metadata
import os
import platform
import resource

VERSIONED = ("keras", "keras-hub", "tensorflow", "tensorflow-text", "jax", "jaxlib", "torch", "transformers",
             "tokenizers", "numpy")


def cpu_flags():
    """The CPU's instruction-set flags, from /proc/cpuinfo; an empty set if it cannot be read."""
    try:
        with open("/proc/cpuinfo") as f:
            return set(next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), []))
    except OSError:
        return set()


def cpu_bf16_units():
    """The CPU's bfloat16 instruction flags (avx512_bf16, amx_bf16, ...), from /proc/cpuinfo; [] if none."""
    return sorted(flag for flag in cpu_flags() if "bf16" in flag or flag.startswith("amx"))


def machine_info():
    """CPU count and model, memory, Python, platform and the versions of the compared libraries."""

    def read(path):
        try:
            with open(path) as f:
                return f.read()
        except OSError:
            return ""

    cpu = next((line.split(":", 1)[1].strip() for line in read("/proc/cpuinfo").splitlines()
                if line.startswith("model name")), platform.processor() or "unknown")
    mem = next((line.split(":", 1)[1].strip() for line in read("/proc/meminfo").splitlines()
                if line.startswith("MemTotal")), "unknown")
    versions = {}
    for package in VERSIONED:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return {"nproc": os.cpu_count(), "cpu": cpu, "memory": mem, "python": platform.python_version(),
            "platform": platform.platform(), "versions": versions}


def loadavg():
    """The 1, 5 and 15 minute load averages, as /proc/loadavg writes them ("unknown" if unreadable)."""
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


def keras_backend():
    """The Keras backend of this process: KERAS_BACKEND if set (without importing Keras), else Keras' own."""
    if os.environ.get("KERAS_BACKEND"):
        return os.environ["KERAS_BACKEND"]
    import keras

    return keras.backend.backend()


def peak_rss_mb():
    """This process's peak resident set size in MB (`ru_maxrss`, framework and compilation included)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
