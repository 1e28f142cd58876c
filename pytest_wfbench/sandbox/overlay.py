"""Workspaces made of layers: the kernel's overlayfs, mounted before bubblewrap
starts, so a cell's clone costs nothing however large the repository is.

bubblewrap 0.8 (Debian 12's) has no overlay option of its own, so a command on
an :class:`Overlay` starts in a user and mount namespace of its own
(``unshare``, where the harness's user is root), which mounts the overlay in
the cell's own mount folder (its name is random), naming the layers through
links there, relative to it (the sandbox's mount table shows ``l0``, ``rw``,
no host path of a layer), and then execs bubblewrap, which binds the merged
tree at ``/workspace`` as usual. Lower layers are never written: overlayfs
writes its upper layer only, and no layer but the merged tree is in the
sandbox. The namespace, and the overlay with it, ends with the command's last
process.

Mount options: ``userxattr`` (an unprivileged overlay keeps its whiteouts as
0/0 character devices and its opaque marks as ``user.overlay.opaque``),
``redirect_dir=nofollow`` (its default with ``userxattr``: renaming a lower
directory copies it), no metacopy, no index, no xino: what the upper layer
holds is whole files, whiteouts and opaque directories, nothing else.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

OPAQUE_XATTR = "user.overlay.opaque"
"""How an unprivileged overlay marks a directory that hides what is below it."""
OVERLAY_XATTR_PREFIX = "user.overlay."
MOUNT_FAILED = 125
MOUNT_OPTIONS = "userxattr,metacopy=off,index=off,xino=off"
# Mounts the overlay at $m/ws (in the cell's mount folder, where Overlay.prefix
# links the layers under fixed names) and execs the sandbox. The layers are
# named relative to $m, so the overlay's options in the sandbox's mount table
# say l0, l1 and rw only, never a host path; the one mount process is all the
# layers cost a command (binding each layer first took a process apiece, a few
# milliseconds of every command). A mount that finds the upper layer still
# held by the previous command's namespace (torn down asynchronously) is
# retried. A failure is written to $m/failed, which no sandboxed command can
# reach (an exit status or a message of the command's own says nothing).
SCRIPT = r"""
m=$1; options=$2; shift 2
back=$PWD
cd "$m" || exit 125
tries=0
until mount -t overlay wfbench -o "$options" ws 2>error; do
  tries=$((tries+1))
  if [ "$tries" -ge 100 ]; then
    cat error > failed; exit 125
  fi
  sleep 0.05
done
cd "$back" || exit 125
exec "$@"
"""


@dataclass(frozen=True)
class Overlay:
    """A workspace of layers: read-only ``lowers`` (top first) and, for a
    writable workspace, ``rw``, a folder holding ``upper`` (what the arm
    writes) and ``work`` (the overlay's own scratch), on one file system.
    ``mount_dir`` is a folder of the cell's where the layers are mounted."""

    lowers: tuple[Path, ...]
    mount_dir: Path
    rw: Path | None = None

    @property
    def upper(self) -> Path | None:
        return None if self.rw is None else self.rw / "upper"

    @property
    def merged(self) -> Path:
        """The merged tree's path inside the command's mount namespace."""
        return self.mount_dir / "ws"

    def take_failure(self) -> str | None:
        """Why the last command's layers could not be mounted, or None (read once)."""
        failed = self.mount_dir / "failed"
        try:
            reason = failed.read_text(errors="replace").strip()
        except OSError:
            return None
        failed.unlink(missing_ok=True)
        return reason or "the overlay did not mount"

    def prefix(self, unshare: str) -> list[str]:
        """The command line that mounts the overlay and then execs what follows
        (the mount point and the links to the layers are made here, in the
        cell's mount folder)."""
        if self.rw is None and len(self.lowers) < 2:
            raise ValueError("a read-only overlay needs two lower layers")
        (self.mount_dir / "ws").mkdir(parents=True, exist_ok=True)
        links = {f"l{n}": lower for n, lower in enumerate(self.lowers)}
        options = f"lowerdir={':'.join(links)},{MOUNT_OPTIONS}"
        if self.rw is not None:
            links["rw"] = self.rw
            options += ",upperdir=rw/upper,workdir=rw/work"
        for name, target in links.items():
            _link(self.mount_dir / name, target)
        return [unshare, "--user", "--map-root-user", "--mount", "--propagation", "private",
                "/bin/sh", "-c", SCRIPT, "wfbench-overlay", str(self.mount_dir), options]


def _link(path: Path, target: Path) -> None:
    """``path`` a link to ``target`` (replaced when it points elsewhere)."""
    try:
        if os.readlink(path) == str(target):
            return
    except OSError:
        pass
    temporary = path.with_name(f".{path.name}.{os.getpid()}.new")
    temporary.unlink(missing_ok=True)
    os.symlink(target, temporary)
    os.replace(temporary, path)


def new_rw(root: Path) -> Path:
    """A writable layer folder (``upper`` and ``work``) under ``root``."""
    rw = root / "rw"
    (rw / "upper").mkdir(parents=True)
    (rw / "work").mkdir()
    return rw


def find_unshare() -> str | None:
    return shutil.which("unshare")


@functools.lru_cache(maxsize=8)
def overlay_unavailable(scratch: Path, bwrap: str) -> str | None:
    """Why writable overlays cannot be used here (in ``scratch``'s file system,
    under bubblewrap), or None: one probe per process."""
    unshare = find_unshare()
    if unshare is None:
        return "util-linux's unshare is not installed"
    probe = scratch / f"overlay-probe-{os.getpid()}"
    shutil.rmtree(probe, ignore_errors=True)
    lower = probe / "lower"
    (lower / "dir").mkdir(parents=True)
    (lower / "gone").write_text("lower\n")
    (lower / "dir" / "kept").write_text("lower\n")
    overlay = Overlay(lowers=(lower,), mount_dir=probe / "mnt", rw=new_rw(probe))
    (probe / "mnt").mkdir()
    try:
        os.setxattr(probe / "rw" / "upper", "user.wfbench-probe", b"1")
        # The capture writes layers of its own: whiteouts and opaque folders.
        (probe / "layer").mkdir()
        fd = os.open(probe / "layer", os.O_RDONLY | os.O_DIRECTORY)
        try:
            make_whiteout("gone", fd)
            make_opaque(fd)
        finally:
            os.close(fd)
    except OSError as error:
        shutil.rmtree(probe, ignore_errors=True)
        return (f"the harness cannot write an overlay layer in {scratch} (user extended "
                f"attributes, whiteouts): {error.strerror}")
    # Mounted under a tmpfs of the sandbox's own: bwrap cannot make a mount point
    # in the host's root, bound read-only (no /workspace there on most hosts).
    inner = ("rm /tmp/workspace/gone && echo new > /tmp/workspace/dir/new && "
             "test -f /tmp/workspace/dir/kept")
    command = [*overlay.prefix(unshare), bwrap, "--die-with-parent", "--unshare-all",
               "--unshare-user", "--uid", "1000", "--gid", "1000", "--cap-drop", "ALL",
               "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
               "--bind", str(overlay.merged), "/tmp/workspace", "/bin/sh", "-c", inner]
    try:
        result = subprocess.run(command, capture_output=True, timeout=60, check=False,
                                env={"PATH": "/usr/bin:/bin"})
        upper = probe / "rw" / "upper"
        if result.returncode != 0:
            reason = result.stderr.decode("utf-8", "replace").strip().splitlines()
            return f"an overlay does not mount here: {reason[-1] if reason else 'no output'}"
        gone = os.lstat(upper / "gone")
        if not is_whiteout(gone) or (upper / "dir" / "new").read_text() != "new\n" \
                or not (lower / "gone").is_file():
            return "the overlay's upper layer is not what overlayfs writes"
        return None
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"an overlay does not mount here: {error}"
    finally:
        subprocess.run(["chmod", "-R", "u+rwx", str(probe)], capture_output=True, check=False)
        shutil.rmtree(probe, ignore_errors=True)


def is_whiteout(info: os.stat_result) -> bool:
    """What overlayfs leaves in an upper layer for a deleted entry."""
    return stat.S_ISCHR(info.st_mode) and info.st_rdev == 0


def make_whiteout(name: str, dir_fd: int) -> None:
    os.mknod(name, stat.S_IFCHR | 0o600, 0, dir_fd=dir_fd)


def is_opaque(dir_fd: int) -> bool:
    try:
        return os.getxattr(dir_fd, OPAQUE_XATTR) == b"y"
    except OSError:
        return False


def make_opaque(dir_fd: int) -> None:
    os.setxattr(dir_fd, OPAQUE_XATTR, b"y")


def has_overlay_xattrs(fd: int) -> bool:
    """Whether a file carries any of overlayfs's attributes (an arm's, escaped,
    or the copy-up's origin): such a file is copied, never linked, into a layer
    the harness mounts, so nothing it carries can speak to that overlay."""
    try:
        return any(name.startswith(OVERLAY_XATTR_PREFIX) for name in os.listxattr(fd))
    except OSError:
        return True
