#!/usr/bin/env bash
# BusyBox's own testsuite, run against aoi-coreutils and against this machine's GNU tools: the
# judge of issue "aoi-coreutils as a drop-in" for what agents type (human mode is GNU).
#
# Usage: bash .ci/busybox.sh            (.ci/run calls it after the tests)
#        BUSYBOX_APPLETS="grep ls" bash .ci/busybox.sh   only those applets' tests
#        BUSYBOX_REPORT=FILE bash .ci/busybox.sh   also writes the per-test table to FILE
#
# The source: Debian bookworm's busybox source package (1.35.0-4+deb12u1, pinned), fetched with
# `apt-get source` through a private deb-src list (nothing of the system's apt configuration is
# changed), kept under $COMPAT_CACHE (default /var/cache/machinemode-ci/compat). Its
# `testsuite/runtest` runs with Debian's own build configuration (debian/config/pkg/deb) as the
# `.config` that decides which optional tests apply.
#
# How: for each applet, and for each implementation (gnu: the system's coreutils, findutils and
# grep; aoi: `aoi-coreutils APPLET`), `runtest APPLET` runs with a `busybox` that is a shim
# executing that implementation for the one applet under test; every other command the test
# scripts use (their own `mkdir`, `rm`, `cmp`, `sed`) is the system's, so a test judges one
# applet only. Each test ends PASS, FAIL, SKIPPED or UNTESTED.
#
# The verdict: the tests GNU passes and aoi-coreutils fails are compared with
# crates/aoi-coreutils/compat/busybox-differences.txt, one `APPLET: TEST NAME` per line after a
# `# reason` comment. A test failing that the list does not name fails this script (a
# regression, or a difference nobody wrote down), and so does a listed test that now passes (the
# list must shrink with the work). The per-applet pass counts are printed for bench/README.md.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
aoi=${AOI_COREUTILS:-$root/target/debug/aoi-coreutils}
cache=${COMPAT_CACHE:-/var/cache/machinemode-ci/compat}
expected=$root/crates/aoi-coreutils/compat/busybox-differences.txt
version=1.35.0
debian_version=1.35.0-4+deb12u1
epoch=1:
applets=(${BUSYBOX_APPLETS:-cat cp du find grep head ls mkdir mv rm tail touch wc})

[[ -x $aoi ]] || { echo "busybox.sh: no $aoi (cargo build -p aoi-coreutils)" >&2; exit 1; }

# -- the source, once ---------------------------------------------------------------------------
src=$cache/busybox-$version
if [[ ! -f $src/.fetched ]]; then
  mkdir -p "$cache"
  source "$root/.ci/debian-source.sh"
  dl=$(mktemp -d)
  debian_sources "$dl" "busybox=$epoch$debian_version"
  rm -rf "$src" && mkdir -p "$src"
  tar xjf "$dl/busybox_$version.orig.tar.bz2" -C "$src" --strip-components=1
  tar xJf "$dl/busybox_$debian_version.debian.tar.xz" -C "$src"
  rm -rf "$dl"
  touch "$src/.fetched"
fi

# -- the runs -----------------------------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/busybox-suite.XXXXXX")
[[ -n ${BUSYBOX_KEEP:-} ]] || trap 'rm -rf "$work"' EXIT
results=$work/results.tsv   # impl, applet, outcome, test name
: >"$results"

run_one() { # impl applet
  local impl=$1 applet=$2 dir=$work/$1-$2 real
  mkdir -p "$dir"
  cp -r "$src/testsuite" "$dir/testsuite"
  mkdir -p "$dir/scripts" && cp "$src/scripts/echo.c" "$dir/scripts/"   # testing.sh builds its echo
  cp "$src/debian/config/pkg/deb" "$dir/.config"
  real=$(PATH=/usr/local/bin:/usr/bin:/bin command -v "$applet")
  {
    echo '#!/bin/sh'
    echo "applet=$applet"
    # `busybox` alone lists the applets (runtest reads it); `busybox APPLET ...` and a link
    # named APPLET run the implementation under test.
    echo 'name=${0##*/}'
    echo 'if [ "$name" = busybox ]; then'
    echo '  if [ $# -eq 0 ]; then printf "Currently defined functions:\n\t%s\n" "$applet"; exit 0; fi'
    echo '  name=$1; shift'
    echo 'fi'
    if [[ $impl == gnu ]]; then
      echo "exec $real \"\$@\""
    else
      echo "exec $aoi \"\$name\" \"\$@\""
    fi
  } >"$dir/busybox"
  chmod +x "$dir/busybox"
  (cd "$dir/testsuite" && bindir=$dir timeout 600 ./runtest "$applet" </dev/null >"$dir/log" 2>&1) || true
  grep -aE '^(PASS|FAIL|SKIPPED|UNTESTED): ' "$dir/log" \
    | sed -E "s/^([A-Z]+): (.*)$/$impl\t$applet\t\1\t\2/" >>"$results" || true
}

for applet in "${applets[@]}"; do
  run_one gnu "$applet"
  run_one aoi "$applet"
done

# -- the verdict --------------------------------------------------------------------------------
python3 - "$results" "$expected" "${BUSYBOX_REPORT:-}" "${applets[*]}" <<'EOF'
import sys
from collections import defaultdict

results, expected_path, report = sys.argv[1], sys.argv[2], sys.argv[3]
ran = set(sys.argv[4].split())
everything = ran == {"cat", "cp", "du", "find", "grep", "head", "ls", "mkdir", "mv", "rm", "tail", "touch", "wc"}
outcome = {}
for line in open(results, encoding="utf-8", errors="replace"):
    impl, applet, verdict, name = line.rstrip("\n").split("\t", 3)
    outcome[(impl, applet, name)] = verdict
tests = sorted({(a, n) for (_, a, n) in outcome})
gnu_pass = {t for t in tests if outcome.get(("gnu",) + t) == "PASS"}
aoi_pass = {t for t in tests if outcome.get(("aoi",) + t) == "PASS"}
differences = sorted(t for t in gnu_pass if t not in aoi_pass)
listed = set()
for line in open(expected_path, encoding="utf-8"):
    line = line.rstrip("\n")
    if line and not line.startswith("#"):
        applet, _, name = line.partition(": ")
        if applet in ran:
            listed.add((applet, name))

per = defaultdict(lambda: [0, 0])
for applet, name in gnu_pass:
    per[applet][0] += 1
    per[applet][1] += (applet, name) in aoi_pass
print("applet  GNU passes  aoi-coreutils passes of those")
for applet in sorted(per):
    g, a = per[applet]
    print(f"{applet:7} {g:10}  {a:4}")
g, a = sum(v[0] for v in per.values()), sum(v[1] for v in per.values())
print(f"{'all':7} {g:10}  {a:4}  ({100 * a / g:.0f}%)" if g else "no test ran")
if report:
    with open(report, "w", encoding="utf-8") as out:
        for applet, name in tests:
            out.write(f"{applet}\t{name}\t{outcome.get(('gnu', applet, name), '-')}\t"
                      f"{outcome.get(('aoi', applet, name), '-')}\n")
new = [t for t in differences if t not in listed]
fixed = sorted(t for t in listed if t not in differences)
for applet, name in new:
    print(f"✗ GNU passes and aoi-coreutils fails, not listed: {applet}: {name}")
for applet, name in fixed:
    print(f"✗ listed as a difference, and it is none now (remove it): {applet}: {name}")
if everything and g < 100:
    print(f"✗ only {g} tests passed under GNU: the suite did not run as it should")
sys.exit(1 if new or fixed or (everything and g < 100) else 0)
EOF
