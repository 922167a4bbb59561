#!/usr/bin/env python3
"""py-kv-seq-gap: kvtool with fault "seq-gap" (see kvtool.py)."""

import os
import sys

sys.dont_write_bytecode = True

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import kvtool  # noqa: E402

sys.exit(kvtool.main("seq-gap"))
