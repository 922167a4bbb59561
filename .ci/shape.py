"""The shape of the Rust code, checked: no import circle between files, no file too big to hold.

Usage: python3 .ci/shape.py [CRATE_DIR...]    (default: every crates/*/ and fuzz/)

Two rules, for every source file reachable from a crate's lib.rs or main.rs (.ci/run runs this
in its fmt stage; ARCHITECTURE.md says why):

1. No circle: files do not import each other in a loop, so each can be read knowing only
   what is below it. A file imports another when it names a path into it:
   `use crate::a::b::X`, `use super::X`, `self::c::Y`, or a path in code that starts with
   `crate::`, `super::`, `self::` or a module the file itself declares (`mod c;` then
   `c::f()`). A path resolves to the deepest module file it names: `crate::checks::c01::f` is
   `checks/c01.rs` when that file exists, else `checks/mod.rs`. A module that names items of
   its own submodules (`mod.rs` dispatching to its children, `lib.rs` re-exporting) contains
   them: that is not an import. A child naming its parent's items is one, so a circle is a
   way back through files that do not contain each other.
2. No file over 1,000 lines of code (blank lines, comments and the file's
   `#[cfg(test)] mod tests { .. }` block not counted; test files, `*_tests.rs` and `tests.rs`,
   not read) unless its module doc has a line that starts `//! Why this file is whole` and
   says why.

A module's own `#[cfg(test)] mod tests { .. }` block is not read by either rule: tests may
import what they test. Every circle is printed with the names that tie each file to the
next, every file too big with its count; the exit status is 1 when there is one of either.
"""

import os
import re
import sys

# Comments and literals in one pass, so that `//` in a string or `"` in a comment is read as
# what it is: raw strings, strings, byte and char literals (not lifetimes), comments.
TOKEN = re.compile(
    r'(?P<s>r(?P<h>#*)".*?"(?P=h)|b?"(?:\\.|[^"\\])*"|b?\'(?:\\.|[^\'\\])\')'
    r"|(?P<c>//[^\n]*|/\*.*?\*/)",
    re.S,
)
MOD_DECL = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)
PATH_ATTR = re.compile(r"#\[path\s*=\s*\"([^\"]+)\"\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")
USE = re.compile(r"\buse\s+([^;]+);")
PATH = re.compile(r"(?<![\w:])((?:crate|super|self|[a-z_][a-z0-9_]*)(?:::(?:\w+|\{))+)")


def strip(text, keep_strings=False):
    """The text without comments (and without string literals unless `keep_strings`); every
    newline kept, so line counts stay true."""

    def blank(m):
        if m.group("c") is None and keep_strings:
            return m.group(0)
        return ('""' if m.group("c") is None else " ") + "\n" * m.group(0).count("\n")

    return TOKEN.sub(blank, text)


def drop_test_modules(text):
    """The text without `#[cfg(test)] mod NAME { ... }` blocks."""
    out = []
    i = 0
    pattern = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{")
    while True:
        m = pattern.search(text, i)
        if not m:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i : m.start()])
        depth = 1
        j = m.end()
        while j < len(text) and depth:
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
            j += 1
        i = j


def expand_use(tree):
    """The paths one `use` tree names: `a::{b, c::{d, e}}` gives a::b, a::c::d, a::c::e."""
    tree = re.sub(r"\s+as\s+\w+", "", tree)
    tree = re.sub(r"\s+", "", tree)
    paths = []

    def walk(prefix, rest):
        depth = 0
        start = 0
        parts = []
        for k, ch in enumerate(rest):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(rest[start:k])
                start = k + 1
        parts.append(rest[start:])
        for part in parts:
            if not part:
                continue
            brace = part.find("{")
            if brace >= 0 and part.endswith("}"):
                head = part[:brace].rstrip(":")
                walk(prefix + ([head] if head else []), part[brace + 1 : -1])
            else:
                paths.append("::".join(prefix + [part]))

    walk([], tree)
    return paths


class Crate:
    """One crate root (a lib.rs, main.rs, src/bin/*.rs or examples/*.rs) and the module files
    it declares."""

    def __init__(self, top):
        # module path (tuple) -> file; file -> module path
        self.files = {}
        self.modules = {}
        self.load(top, ())

    def load(self, path, module):
        if path in self.modules or module in self.files:
            return
        self.files[module] = path
        self.modules[path] = module
        with open(path, encoding="utf-8") as f:
            text = drop_test_modules(strip(f.read()))
        base = os.path.dirname(path)
        own = os.path.basename(path) in ("lib.rs", "main.rs", "mod.rs")
        here = base if own else os.path.join(base, os.path.splitext(os.path.basename(path))[0])
        raw = open(path, encoding="utf-8").read()
        for target, name in PATH_ATTR.findall(drop_test_modules(strip(raw, keep_strings=True))):
            self.load(os.path.normpath(os.path.join(base, target)), module + (name,))
        for name in MOD_DECL.findall(text):
            if module + (name,) in self.files:
                continue
            for candidate in (os.path.join(here, name + ".rs"), os.path.join(here, name, "mod.rs")):
                if os.path.exists(candidate):
                    self.load(candidate, module + (name,))
                    break

    def children(self, module):
        n = len(module)
        return {m[n] for m in self.files if len(m) == n + 1 and m[:n] == module}

    def resolve(self, module, path):
        """The file a path names from `module`, or None (another crate, std, a local item)."""
        parts = [p for p in path.split("::") if p and p != "{"]
        if not parts:
            return None
        head = parts[0]
        if head == "crate":
            at, rest = (), parts[1:]
        elif head == "self":
            at, rest = module, parts[1:]
        elif head == "super":
            at = module
            rest = parts
            while rest and rest[0] == "super":
                at = at[:-1]
                rest = rest[1:]
        elif head in self.children(module):
            at, rest = module, parts
        else:
            return None
        for name in rest:
            if at + (name,) in self.files:
                at = at + (name,)
            else:
                break
        return self.files.get(at)

    def graph(self):
        """file -> {file: set of names}."""
        edges = {}
        for path, module in self.modules.items():
            with open(path, encoding="utf-8") as f:
                text = drop_test_modules(strip(f.read()))
            # Submodules loaded from this file (by `mod` or `#[path]`) are not read twice.
            found = []
            for tree in USE.findall(text):
                found.extend(expand_use(tree))
            code = USE.sub(" ", text)
            found.extend(PATH.findall(code))
            for p in found:
                target = self.resolve(module, p)
                if target is None or target == path:
                    continue
                if self.modules[target][: len(module)] == module:
                    # A module naming its own submodule's items (a dispatch, a re-export)
                    # holds what it names: containment, not an import.
                    continue
                edges.setdefault(path, {}).setdefault(target, set()).add(p.split("::")[-1])
        return edges


def circles(edges, nodes):
    """Strongly connected components of two or more nodes (Tarjan, iterative)."""
    index = {}
    low = {}
    on = set()
    stack = []
    out = []
    counter = [0]
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, {}))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, {})))))
                    advanced = True
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    group.append(w)
                    if w == node:
                        break
                if len(group) > 1:
                    out.append(sorted(group))
    return out


MAX_LINES = 1000
WHOLE = "//! Why this file is whole"


def roots_of(crate_dir):
    """The crate roots under a crate dir: its lib, its binaries, its examples."""
    src = os.path.join(crate_dir, "src")
    tops = [os.path.join(src, t) for t in ("lib.rs", "main.rs")]
    for folder in (os.path.join(src, "bin"), os.path.join(crate_dir, "examples")):
        if os.path.isdir(folder):
            for name in sorted(os.listdir(folder)):
                path = os.path.join(folder, name)
                tops.append(path if name.endswith(".rs") else os.path.join(path, "main.rs"))
    return [t for t in tops if os.path.isfile(t)]


def lines_of_code(path):
    """Lines that hold code: not blank, not only a comment, not in the test module."""
    with open(path, encoding="utf-8") as f:
        text = drop_test_modules(strip(f.read(), keep_strings=True))
    return sum(1 for line in text.splitlines() if line.strip())


def is_test_file(path):
    name = os.path.basename(path)
    return name == "tests.rs" or name.endswith("_tests.rs")


def main(argv):
    repo = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    dirs = argv or sorted(
        os.path.join(repo, "crates", d) for d in os.listdir(os.path.join(repo, "crates"))
    )
    rel = lambda p: os.path.relpath(p, repo)
    circled = []
    big = []
    seen = set()
    imports = 0
    for crate_dir in dirs:
        for top in roots_of(crate_dir):
            crate = Crate(top)
            edges = crate.graph()
            imports += sum(len(t) for t in edges.values())
            for group in circles(edges, crate.modules):
                circled.append(group)
                print(f"circle in {rel(crate_dir)}: {', '.join(rel(p) for p in group)}")
                for a in group:
                    for b, names in sorted(edges.get(a, {}).items()):
                        if b in group:
                            print(f"  {rel(a)} -> {rel(b)}: {', '.join(sorted(names))}")
            for path in crate.modules:
                if path in seen or is_test_file(path):
                    continue
                seen.add(path)
                count = lines_of_code(path)
                if count > MAX_LINES:
                    with open(path, encoding="utf-8") as f:
                        says_why = any(line.startswith(WHOLE) for line in f)
                    if not says_why:
                        big.append(path)
                        print(f"too big: {rel(path)}: {count} lines of code, over {MAX_LINES}, "
                              f"and its module doc has no line `{WHOLE} ...`")
    sys.stdout.flush()
    if circled:
        print("shape.py: files that import each other cannot be read one at a time; move what "
              "both need into a module below them", file=sys.stderr)
    if big:
        print("shape.py: split a file too big to hold by job, into a folder of modules, or say "
              "in its module doc why it must stay whole", file=sys.stderr)
    if circled or big:
        return 1
    print(f"shape.py: no import circle, no file over {MAX_LINES} lines of code unexplained "
          f"({len(seen)} files, {imports} file-to-file imports)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
