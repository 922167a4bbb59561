#!/usr/bin/env bash
# Runs README.md as a new user would: every ```sh and ```console block, top to bottom, in one
# shell, from the repository root, with a fresh HOME and XDG directories under a temp dir.
#
# Usage: bash .ci/readme.sh [README]    (.ci/run calls it after the tests)
#
# What runs. In a ```sh block every line is a command, except blank lines and comment-only
# lines; a line ending in `\` continues on the next. In a ```console block only the lines that
# start with `$ ` are commands (continued the same way); the rest is sample output, which is not
# compared (ids and times differ). Every block starts from the repository root; variables and
# exports (the walk-through's `export PATH=...`) carry over to the blocks after it. Commands
# read /dev/null unless they read a pipe.
#
# A command must exit 0, unless its own trailing comment says otherwise: `# ... exits 65` means
# 65 is expected, and any other status (0 included) fails.
#
# Markers, HTML comments on the lines just before a block's opening fence (invisible when the
# README is rendered):
#   <!-- readme: skip REASON -->    the block is not run here; say why (keep these few)
#   <!-- readme: in .ci/run -->     not run here because .ci/run runs it: each of the block's
#                                   commands must be a line of .ci/run, word for word
#   <!-- readme: stdout TEXT -->    what the block's commands print on stdout must contain TEXT
#                                   (repeatable; keep TEXT to what does not change between runs)
#   <!-- readme: creates PATH... --> the block writes these paths, relative to the repository
#                                   root; they must not exist before the run (nothing of yours
#                                   is overwritten) and are removed after it, with PATH-* (the
#                                   SQLite side files)
#
# The environment: CARGO_HOME and RUSTUP_HOME stay where they were (no new download of the
# toolchain or the crates), CARGO_TARGET_DIR is the repository's target/ (the README's paths
# point there), CARGO_INSTALL_ROOT is a temp dir (the README's `cargo install` commands put
# their binaries there instead of ~/.cargo/bin), and OUTLINE_* and AOI_* are unset.
#
# After the root README's blocks, `aoi` and `outline` on PATH must be this checkout's build (the
# README put them there), and the binaries the README installed are run: `--version` for both, and
# `outline capabilities --output json` checked with jq. The whole run has a deadline of
# README_SH_TIMEOUT seconds (2400: the installs are release builds).
set -u

__rm_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
__rm_readme=${1:-$__rm_root/README.md}
[[ $__rm_readme = /* ]] || __rm_readme=$PWD/$__rm_readme

# A command that never ends (a `watch` without its `| head`) must not hang CI: everything below
# runs under one deadline (timeout signals its whole process group).
if [[ -z ${__README_SH_TIMED:-} ]]; then
  __README_SH_TIMED=1 exec timeout --kill-after=30 "${README_SH_TIMEOUT:-2400}" \
    bash "${BASH_SOURCE[0]}" "$__rm_readme"
fi

__rm_fail() {
  printf 'readme.sh: %s\n' "$*" >&2
  exit 1
}

command -v jq >/dev/null 2>&1 || __rm_fail "jq is needed to check the installed binaries (.ci/run installs it)"
[[ -f $__rm_readme ]] || __rm_fail "no such file: $__rm_readme"

__rm_tmp=$(mktemp -d "${TMPDIR:-/tmp}/readme-sh.XXXXXX") || __rm_fail "mktemp failed"
__rm_plan=$__rm_tmp/plan.tsv
__rm_created=()

__rm_cleanup() {
  local p
  cd "$__rm_root" || return
  for p in "${__rm_created[@]}"; do
    rm -rf -- "./$p" ./"$p"-*
  done
  rm -rf -- "$__rm_tmp"
}
trap __rm_cleanup EXIT
trap 'exit 124' TERM
trap 'exit 130' INT

# The plan, one record a line, tab-separated:
#   block  LINE  LANG  MODE  ARG      (MODE: run, skip (ARG the reason) or ci (in .ci/run))
#   stdout LINE  TEXT
#   creates LINE  PATH...
#   cmd    LINE  COMMAND               (continuation lines joined)
awk '
  function flush_cmd() {
    if (cmd != "") { printf "cmd\t%d\t%s\n", cmd_line, cmd }
    cmd = ""
  }
  function add(text, line) {
    if (cmd == "") { cmd_line = line; cmd = text } else { cmd = cmd " " text }
    if (cmd ~ /\\$/) { sub(/[ ]*\\$/, "", cmd); cont = 1 } else { cont = 0; flush_cmd() }
  }
  /^```(sh|console)[ ]*$/ && !inblock {
    inblock = 1; lang = substr($0, 4); sub(/[ ]*$/, "", lang); cont = 0; cmd = ""
    mode = "run"; arg = ""
    for (i = 1; i <= nmarks; i++) {
      m = marks[i]
      if (m ~ /^skip( |$)/) { mode = "skip"; arg = substr(m, 6) }
      else if (m == "in .ci/run") { mode = "ci" }
    }
    printf "block\t%d\t%s\t%s\t%s\n", NR, lang, mode, arg
    for (i = 1; i <= nmarks; i++) {
      m = marks[i]
      if (m ~ /^stdout /) { printf "stdout\t%d\t%s\n", marklines[i], substr(m, 8) }
      else if (m ~ /^creates /) { printf "creates\t%d\t%s\n", marklines[i], substr(m, 9) }
      else if (m !~ /^skip( |$)/ && m != "in .ci/run") {
        printf "bad\t%d\t%s\n", marklines[i], m
      }
    }
    nmarks = 0
    next
  }
  /^```/ && inblock { flush_cmd(); inblock = 0; next }
  /^```/ { nmarks = 0; next }
  inblock && lang == "sh" {
    line = $0
    if (!cont && (line ~ /^[ \t]*$/ || line ~ /^[ \t]*#/)) next
    if (!cont) sub(/^[ \t]+/, "", line)
    add(line, NR)
    next
  }
  inblock && lang == "console" {
    line = $0
    if (cont) { sub(/^> ?/, "", line); add(line, NR); next }
    if (line ~ /^\$ /) { add(substr(line, 3), NR) }
    next
  }
  inblock { next }
  /^<!-- readme: .* -->[ ]*$/ {
    m = $0; sub(/^<!-- readme: /, "", m); sub(/ -->[ ]*$/, "", m)
    nmarks++; marks[nmarks] = m; marklines[nmarks] = NR
    next
  }
  { nmarks = 0 }
  END { if (inblock) printf "bad\t%d\tunclosed code block\n", NR }
' "$__rm_readme" >"$__rm_plan" || __rm_fail "could not read $__rm_readme"

# Check the plan before running anything: markers, the paths a block creates, the commands
# that .ci/run must run.
__rm_mode=run
while IFS=$'\t' read -r __rm_kind __rm_line __rm_a __rm_b __rm_c; do
  case $__rm_kind in
    bad) __rm_fail "README line $__rm_line: unknown marker or form: $__rm_a" ;;
    block) __rm_mode=$__rm_b ;;
    creates)
      for __rm_p in $__rm_a; do
        [[ $__rm_p != /* && $__rm_p != *..* ]] || __rm_fail "README line $__rm_line: creates takes paths inside the repository: $__rm_p"
        if [[ -e $__rm_root/$__rm_p ]]; then
          __rm_fail "README line $__rm_line: $__rm_p exists; the README creates it (remove it first)"
        fi
        __rm_created+=("$__rm_p")
      done
      ;;
    cmd)
      if [[ $__rm_mode = ci ]] && ! grep -qxF -- "$__rm_a" "$__rm_root/.ci/run"; then
        __rm_fail "README line $__rm_line: \`$__rm_a\` is marked as run by .ci/run, which does not run it"
      fi
      ;;
  esac
done <"$__rm_plan"

# A fresh machine, as far as the README can tell.
__rm_cargo_home=${CARGO_HOME:-$HOME/.cargo}
__rm_rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
[[ -d $__rm_cargo_home ]] && export CARGO_HOME=$__rm_cargo_home
[[ -d $__rm_rustup_home ]] && export RUSTUP_HOME=$__rm_rustup_home
for __rm_v in $(compgen -e); do
  case $__rm_v in OUTLINE_* | AOI_*) unset "$__rm_v" ;; esac
done
export HOME=$__rm_tmp/home
export XDG_DATA_HOME=$__rm_tmp/xdg/data XDG_CACHE_HOME=$__rm_tmp/xdg/cache
export XDG_STATE_HOME=$__rm_tmp/xdg/state XDG_CONFIG_HOME=$__rm_tmp/xdg/config
export TMPDIR=$__rm_tmp/tmp
export CARGO_TARGET_DIR=$__rm_root/target
export CARGO_INSTALL_ROOT=$__rm_tmp/cargo-install
mkdir -p "$HOME" "$TMPDIR"

__rm_failures=0
__rm_ran=0
__rm_skipped=0
__rm_out=$__rm_tmp/out
__rm_block_out=$__rm_tmp/block-out
__rm_checks=()

__rm_end_block() {
  local want
  for want in "${__rm_checks[@]}"; do
    if ! grep -qF -- "$want" "$__rm_block_out"; then
      printf '✗ the block at README line %s printed no "%s"\n' "$__rm_block_line" "$want" >&2
      __rm_failures=$((__rm_failures + 1))
    fi
  done
  __rm_checks=()
  : >"$__rm_block_out"
}

__rm_block_line=0
: >"$__rm_block_out"
# The README's commands run with a shell's default options, as in a terminal (a block may set
# its own, like `set -o pipefail`, for the blocks after it).
set +u
while IFS=$'\t' read -r -u 3 __rm_kind __rm_line __rm_a __rm_b __rm_c; do
  case $__rm_kind in
    block)
      __rm_end_block
      __rm_block_line=$__rm_line
      __rm_mode=$__rm_b
      cd "$__rm_root" || __rm_fail "cannot cd to $__rm_root"
      case $__rm_mode in
        skip) printf '\n== README line %s (%s): skipped: %s\n' "$__rm_line" "$__rm_a" "$__rm_c"
          __rm_skipped=$((__rm_skipped + 1)) ;;
        ci) printf '\n== README line %s (%s): run by .ci/run\n' "$__rm_line" "$__rm_a"
          __rm_skipped=$((__rm_skipped + 1)) ;;
        *) printf '\n== README line %s (%s)\n' "$__rm_line" "$__rm_a" ;;
      esac
      ;;
    stdout) [[ $__rm_mode = run ]] && __rm_checks+=("$__rm_a") ;;
    cmd)
      [[ $__rm_mode = run ]] || continue
      __rm_want=0
      if [[ $__rm_a =~ \#.*[^a-z]exits\ ([0-9]+) ]]; then __rm_want=${BASH_REMATCH[1]}; fi
      printf '$ %s\n' "$__rm_a"
      __rm_t0=$EPOCHREALTIME
      eval "$__rm_a" </dev/null >"$__rm_out"
      __rm_rc=$?
      __rm_t1=$EPOCHREALTIME
      cat "$__rm_out" >>"$__rm_block_out"
      __rm_n=$(wc -l <"$__rm_out")
      head -n 40 "$__rm_out" | cut -c1-300 | sed 's/^/    /'
      ((__rm_n > 40)) && printf '    ... (%d lines in all)\n' "$__rm_n"
      __rm_ms=$(( (${__rm_t1/./} - ${__rm_t0/./}) / 1000 ))
      ((__rm_ms >= 1000)) && printf '    (%d.%d s)\n' $((__rm_ms / 1000)) $((__rm_ms % 1000 / 100))
      __rm_ran=$((__rm_ran + 1))
      if [[ $__rm_rc != "$__rm_want" ]]; then
        printf '✗ README line %s exited %s, expected %s: %s\n' "$__rm_line" "$__rm_rc" "$__rm_want" "$__rm_a" >&2
        __rm_failures=$((__rm_failures + 1))
      fi
      ;;
  esac
done 3<"$__rm_plan"
__rm_end_block
cd "$__rm_root" || __rm_fail "cannot cd to $__rm_root"

# The root README's walk-through installs the tools; another README (run by the same rules)
# only runs its blocks.
if [[ $__rm_readme == "$__rm_root/README.md" ]]; then
  # What the README's walk-through put on PATH must be this checkout's build.
  for __rm_b in aoi outline; do
    __rm_p=$(command -v "$__rm_b") || { printf '✗ the README never put %s on PATH\n' "$__rm_b" >&2; __rm_failures=$((__rm_failures + 1)); continue; }
    if [[ $__rm_p != "$__rm_root"/target/* ]]; then
      printf '✗ %s on PATH is %s, not this checkout'\''s build\n' "$__rm_b" "$__rm_p" >&2
      __rm_failures=$((__rm_failures + 1))
    fi
  done

  # What the README's `cargo install` commands installed.
  printf '\n== installed binaries (%s/bin)\n' "$CARGO_INSTALL_ROOT"
  __rm_bin=$CARGO_INSTALL_ROOT/bin
  for __rm_b in aoi outline; do
    if ! __rm_v=$("$__rm_bin/$__rm_b" --version 2>&1) || [[ $__rm_v != "$__rm_b "[0-9]* ]]; then
      printf '✗ %s/%s --version: %s\n' "$__rm_bin" "$__rm_b" "${__rm_v:-no output}" >&2
      __rm_failures=$((__rm_failures + 1))
    else
      printf '%s (%s bytes)\n' "$__rm_v" "$(stat -c %s "$__rm_bin/$__rm_b")"
    fi
  done
  if "$__rm_bin/outline" capabilities --output json >"$__rm_out" \
    && jq -e '.aoi_versions == ["1.0-alpha"]
              and ([.commands[].name] | index("search") != null and index("import") != null)
              and all(.commands[]; .input_schema.type == "object")' "$__rm_out" >/dev/null; then
    printf 'outline capabilities --output json: %s commands\n' "$(jq '.commands | length' "$__rm_out")"
  else
    printf '✗ %s/outline capabilities --output json is not the manifest expected\n' "$__rm_bin" >&2
    __rm_failures=$((__rm_failures + 1))
  fi
fi

printf '\nreadme.sh: %d commands run, %d blocks not run here, %d failure(s)\n' \
  "$__rm_ran" "$__rm_skipped" "$__rm_failures"
((__rm_failures == 0))
