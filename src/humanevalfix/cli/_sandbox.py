"""`sandbox build-image`: the Docker executor's image, built offline from this interpreter.

The first `--sandbox docker` run builds it too when it is missing; this command does it ahead (in
CI, say) and rebuilds it after the interpreter or numpy changed.
"""

from __future__ import annotations

import argparse

HELP = "build the Docker sandbox's image from this interpreter (sandbox build-image)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    build = actions.add_parser(
        "build-image",
        help="docker import this Python (standard library, numpy, pytest and their shared libraries) as "
        "humanevalfix-sandbox:<version>",
        description="Build the image `--sandbox docker` uses, offline: no registry is needed.",
    )
    build.add_argument("--tag", help="the image's name (default humanevalfix-sandbox:<this Python's version>)")


def run(args: argparse.Namespace) -> int:
    from humanevalfix.errors import ConfigError
    from humanevalfix.sandbox.docker import check_daemon, docker
    from humanevalfix.sandbox.image import build_image, default_tag

    check_daemon()
    tag = args.tag or default_tag()
    print(f"building {tag} from this Python ...", flush=True)
    try:
        built = build_image(tag)
    except (RuntimeError, OSError) as exc:
        raise ConfigError(f"sandbox build-image: {exc}") from None
    size = docker(["image", "inspect", "--format", "{{.Size}}", built.tag]).stdout.strip()
    shown = f"{int(size) / 1e6:.0f} MB" if size.isdigit() else f"{built.tar_bytes / 1e6:.0f} MB streamed"
    print(f"built {built.tag}: {built.files} files, {shown}, in {built.seconds:g} s")
    return 0
