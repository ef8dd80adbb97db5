#!/usr/bin/env python3
"""oci-bundle.py BUNDLE ROOTFS PROBES DATA WORKSPACE CGROUP MEM PIDS DISK TIMEOUT HOSTID -- ARGS...

Writes BUNDLE/config.json: the spec containerd gives a container by default
(root inside with the runtimes' default capabilities, no no_new_privs, its
default mounts, masked and read-only paths, new pid, ipc, uts, mount and
network namespaces), running ARGS in ROOTFS with the probes bound read-only
at /probes, the runner's data at /data and a read-write workspace at
/workspace, its limits as resources and fluebox annotations. The escape
probes then run in it under `fluebox oci` (tests/probes/run.sh, mode oci)."""
import json, sys

(bundle, rootfs, probes, data, ws, cgroup, mem, pids, disk, timeout, hostid) = sys.argv[1:12]
args = sys.argv[13:]
caps = ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
        "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
        "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"]
spec = {
    "ociVersion": "1.0.2",
    "process": {
        "args": args, "cwd": "/workspace", "user": {"uid": 0, "gid": 0},
        "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
        "capabilities": {"bounding": caps, "effective": caps, "permitted": caps},
        "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
    },
    "root": {"path": rootfs},
    "hostname": "probe",
    "mounts": [
        {"destination": "/proc", "type": "proc", "source": "proc", "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
         "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
        {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
         "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
        {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
         "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
        {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue", "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
        {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
         "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]},
        {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "size=" + disk]},
        {"destination": "/probes", "type": "bind", "source": probes, "options": ["rbind", "ro"]},
        {"destination": "/data", "type": "bind", "source": data, "options": ["rbind", "ro"]},
        {"destination": "/workspace", "type": "bind", "source": ws, "options": ["rbind", "rw"]},
    ],
    "annotations": {"run.fluebox.disk": disk, "run.fluebox.timeout": timeout},
    "linux": {
        "namespaces": [{"type": t} for t in ("pid", "ipc", "uts", "mount", "network")],
        "cgroupsPath": cgroup,
        "resources": {"memory": {"limit": int(mem)}, "pids": {"limit": int(pids)}},
        "maskedPaths": ["/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
                        "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware",
                        "/proc/scsi"],
        "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"],
    },
}
if hostid != "-":
    spec["annotations"]["run.fluebox.host-id"] = hostid
with open(bundle + "/config.json", "w") as f:
    json.dump(spec, f, indent=1)
