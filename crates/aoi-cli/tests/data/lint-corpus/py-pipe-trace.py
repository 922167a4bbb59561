#!/usr/bin/env python3
"""py-minitool with the fault "pipe-trace" (see minitool.py)."""

import os
import sys

sys.dont_write_bytecode = True

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import minitool  # noqa: E402

sys.exit(minitool.main("pipe-trace"))
