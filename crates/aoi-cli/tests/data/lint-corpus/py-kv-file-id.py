#!/usr/bin/env python3
"""py-kv-file-id: kvtool with fault "file-id" (see kvtool.py)."""

import os
import sys

sys.dont_write_bytecode = True

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import kvtool  # noqa: E402

sys.exit(kvtool.main("file-id"))
