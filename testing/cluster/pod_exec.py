"""Start one container's program inside its pod: the pod's network namespace, a private mount namespace whose root
mirrors the host's with the pod's volumes bound at their mount paths, then exec.

Usage (by runtime.py only, as root): python pod_exec.py SPEC.json
SPEC: {"netns": "/proc/<pid>/ns/net", "root": <empty dir>, "mounts": [[source, target, read_only], ...],
       "argv": [...], "env": {...}, "cwd": "/"}

Nothing is written on the host's paths: a mount path that does not exist on the host (Envoy Gateway's /certs, the
ServiceAccount's /var/run/secrets/kubernetes.io/serviceaccount) is made in a tmpfs that stands in for the
directory above it, inside the namespace only. The root is a tmpfs with each of the host's top-level entries bound
in (recursively), and a private /tmp. Standard library only.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(), flags,
                      data and data.encode()), f"mount {source} {target}")


def replicate(source_dir: str, target_dir: str, skip: tuple[str, ...] = ()) -> None:
    """Make ``target_dir`` (an empty tmpfs) show ``source_dir``'s entries: directories and files bound in,
    symbolic links copied."""
    for name in os.listdir(source_dir):
        if name in skip:
            continue
        source, target = os.path.join(source_dir, name), os.path.join(target_dir, name)
        if os.path.islink(source):
            os.symlink(os.readlink(source), target)
        elif os.path.isdir(source):
            os.mkdir(target)
            mount(source, target, None, MS_BIND | MS_REC)
        else:
            open(target, "w").close()
            mount(source, target, None, MS_BIND)


class Root:
    """The new root: which of its directories are ours (in a tmpfs, free to write) and which show the host's."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.ours = {"/"}
        self.shadows = 0
        mount("tmpfs", path, "tmpfs", 0, "mode=0755")
        replicate("/", path, skip=("tmp",))
        os.mkdir(os.path.join(path, "tmp"), 0o1777)
        mount("tmpfs", os.path.join(path, "tmp"), "tmpfs", 0, "mode=1777")
        self.ours.add("/tmp")

    def real(self, inside: str) -> str:
        return self.path + inside

    def shadow(self, inside: str) -> None:
        """Cover the host directory shown at ``inside`` with a tmpfs showing the same entries: now ours."""
        stash = os.path.join(self.path, f".stash-{self.shadows}")
        self.shadows += 1
        os.mkdir(stash)
        mount(self.real(inside), stash, None, MS_BIND | MS_REC)
        mount("tmpfs", self.real(inside), "tmpfs", 0, "mode=0755")
        replicate(stash, self.real(inside))
        _check(libc.umount2(stash.encode(), MNT_DETACH), f"umount {stash}")
        os.rmdir(stash)
        self.ours.add(inside)

    def make(self, target: str, is_dir: bool) -> str:
        """The mount point for ``target`` (a path inside), made where missing; returns its real path."""
        current = "/"
        parts = [p for p in target.split("/") if p]
        hops = 0
        while parts:
            part = parts.pop(0)
            candidate = os.path.join(current, part)
            real = self.real(candidate)
            if os.path.islink(real):
                hops += 1
                if hops > 40:
                    raise OSError(f"too many symbolic links under {target}")
                link = os.readlink(real)
                resolved = os.path.normpath(link if link.startswith("/") else os.path.join(current, link))
                parts = [p for p in resolved.split("/") if p] + parts
                current = "/"
                continue
            if not os.path.exists(real):
                if current not in self.ours:
                    self.shadow(current)
                if parts or is_dir:
                    os.mkdir(real, 0o755)
                else:
                    open(real, "w").close()
                self.ours.add(candidate)
            current = candidate
        return self.real(current)


def main(spec_path: str) -> None:
    with open(spec_path, encoding="utf-8") as handle:
        spec = json.load(handle)
    fd = os.open(spec["netns"], os.O_RDONLY)
    _check(libc.setns(fd, CLONE_NEWNET), "setns")
    os.close(fd)
    _check(libc.unshare(CLONE_NEWNS), "unshare")
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    root = Root(spec["root"])
    argv = spec["argv"]
    program = argv[0]
    if program.startswith("/") and os.path.exists(program) and not os.path.exists(root.real(program)):
        # The program lies under the host's /tmp, which the private /tmp hides: shown at its own path.
        mount(program, root.make(program, is_dir=False), None, MS_BIND)
    for source, target, read_only in sorted(spec["mounts"], key=lambda m: m[1].count("/")):
        real = root.make(target, os.path.isdir(source))
        mount(source, real, None, MS_BIND | MS_REC)
        if read_only:
            mount(None, real, None, MS_BIND | MS_REMOUNT | MS_RDONLY)
    os.chroot(root.path)
    os.chdir(spec.get("cwd") or "/")
    os.execvpe(argv[0], argv, spec["env"])


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except OSError as err:
        print(f"pod_exec: {err}", file=sys.stderr)
        sys.exit(127)
