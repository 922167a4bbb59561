#!/usr/bin/env python3
"""bookmarks: a bookmark store on SQLite, with a Machine Mode (AOI-CLI v1.0-alpha) interface.

The tool is in ``bookmarks_app.py``; this launcher is what a console-script entry point of an
installed package does. Python byte-compiles an imported module once and keeps it, but
compiles a script on every start (10 ms for the 560 lines of the tool here), and start-up is
what an agent pays on every discovery call.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))

from bookmarks_app import tool

if __name__ == "__main__":
    tool.main()
