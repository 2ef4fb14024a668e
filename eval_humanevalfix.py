#!/usr/bin/env python3
"""Entry point: `python eval_humanevalfix.py --limit 10`. Everything lives in the `src` package."""

import sys

from src.cli import main

if __name__ == "__main__":
    sys.exit(main())
