"""Engine processes the runner drives: one long-lived process per engine,
one command per line in, one JSON line per reply out (see
`bench/tpch/src/driver.rs` for squall's side and `peer_driver.py` for the
peers'), and the process's peak resident memory from the kernel's accounting.

Peak memory (Linux): writing `5` to /proc/PID/clear_refs resets the
process's high-water mark of resident memory (VmHWM in /proc/PID/status) to
its current resident size, so reset before a query and VmHWM after it is
the query's peak, including whatever the process already held (its data
caches, the interpreter for the Python peers).
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


class EngineDied(RuntimeError):
    pass


class EngineProcess:
    def __init__(self, name, argv, stderr_path, cwd=None):
        self.name = name
        self.argv = argv
        self._stderr = open(stderr_path, "w")
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            text=True, bufsize=1, cwd=cwd)
        try:
            self.ready = self._read()
            if not self.ready.get("ready"):
                raise EngineDied(f"{name}: unexpected first line {self.ready}")
        except BaseException:
            self.close()
            raise

    @property
    def pid(self):
        return self.proc.pid

    def _read(self):
        while True:
            line = self.proc.stdout.readline()
            if not line:
                code = self.proc.poll()
                raise EngineDied(f"{self.name} exited ({code}); see {self._stderr.name}")
            line = line.strip()
            if line.startswith("{"):
                return json.loads(line)
            # Anything else on stdout is not a reply; keep it visible.
            print(f"[{self.name}] {line}", file=sys.stderr)

    def ask(self, command):
        try:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise EngineDied(f"{self.name}: {e}") from e
        return self._read()

    def reset_peak(self):
        with open(f"/proc/{self.pid}/clear_refs", "w") as f:
            f.write("5")

    def memory_mb(self):
        """(VmRSS, VmHWM) in MiB."""
        return read_status_mb(self.pid)

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self._stderr):
            try:
                f.close()
            except OSError:
                pass


def read_status_mb(pid):
    rss = hwm = None
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024.0
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) / 1024.0
    return rss, hwm


def squall(binary, sf, data, settings, stderr_path, name="squall"):
    argv = [binary, "tpch", "driver", "--sf", str(sf), "--data", data]
    for s in settings:
        argv += ["--config", s]
    return EngineProcess(name, argv, stderr_path)


def peer(engine, data, stderr_path):
    argv = [sys.executable, os.path.join(HERE, "peer_driver.py"), "--engine", engine, "--data", data]
    return EngineProcess(engine, argv, stderr_path)
