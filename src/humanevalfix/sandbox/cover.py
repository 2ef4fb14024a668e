"""What the unshare jail keeps from its candidates: it shows the host's file system, so in its own
mount namespace, before the interpreter starts, this package is bound read-only over itself (its own
judge, which every later jail binds, included), and the bundled dataset (every canonical solution
and hidden test) and the harness's caches with their sealing keys (cachedirs) are covered by an
empty read-only tmpfs. A mount that fails fails the jail (exit 126): never a jail without its cover.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).absolute().parent.parent  # humanevalfix/: its dataset covered here, hidden in bwrap

# Run first in the unshare jail's own mount namespace (then it execs the interpreter): each `ro:DIR`
# is bound read-only over itself, each other DIR covered by an empty read-only tmpfs. A mount that
# fails fails the jail (exit 126), never a jail without the cover.
COVER = (
    'while [ "$1" != -- ]; do case "$1" in '
    'ro:*) mount --bind -o ro "${1#ro:}" "${1#ro:}" || exit 126 ;; '
    '*) mount -t tmpfs -o ro,size=4k,mode=0555 hefix-covered "$1" || exit 126 ;; '
    'esac; shift; done; shift; exec "$@"'
)


def covered(argv: list[str], environ: dict[str, str] | None = None) -> list[str]:
    """`argv` run after COVER has mounted the cover."""
    return ["/bin/sh", "-c", COVER, "hefix-cover", *covered_paths(environ), "--", *argv]


def covered_paths(environ: dict[str, str] | None = None) -> list[str]:
    """What the unshare jail, which shows the host's file system, keeps from its candidates: this
    package read-only (its own judge, which later jails bind, included), and covered: the bundled
    dataset (every canonical solution and test) and the harness's caches with their sealing key
    (cachedirs; made first, so that a candidate cannot plant a key of its own where none was yet)."""
    from humanevalfix.cachedirs import seal_key, store_folders, user_cache

    env = os.environ if environ is None else environ
    stores = store_folders(env)
    for folder in stores:
        seal_key(folder)
    folders = [*stores, user_cache(env) / "humanevalfix", PACKAGE_DIR / "evaluation" / "data"]
    covered = dict.fromkeys(str(f.resolve()) for f in folders if f.is_dir())
    package = dict.fromkeys((os.path.normpath(str(PACKAGE_DIR)), str(PACKAGE_DIR.resolve())))
    return [f"ro:{d}" for d in package] + list(covered)
