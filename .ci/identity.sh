#!/usr/bin/env bash
# Proof that a change of code shape left every tool's machine-mode output byte-identical:
# builds BASE and HEAD, runs one fixed corpus of invocations with each build, and compares
# what each wrote, byte for byte, after replacing only the values that differ from one run to
# the next. Exits 1 if any machine-mode case differs (stdout or exit status), 0 if none does,
# 2 if something needed is missing (a build that fails, a binary that is not there, jq).
#
# Usage: bash .ci/identity.sh BASE [HEAD]    (git revisions; HEAD defaults to the working
#                                             tree of this checkout, uncommitted changes and all)
#   IDENTITY_CACHE  where BASE's (and a named HEAD's) target dirs are kept between runs, one
#                   per full commit sha (default ~/.cache/machinemode-identity), so a second
#                   run against the same BASE does not build it again
#   IDENTITY_SELF=1 compare HEAD's build with itself, BASE unused: any difference is noise the
#                   normalization below misses (the check of this script itself)
#   IDENTITY_KEEP=1 keep the temp dir (every case's raw output under base/ and head/)
#
# Builds: `cargo build --locked --workspace --bins --examples`, debug profile. BASE is checked
# out with `git worktree` under the temp dir, its files' mtimes pinned to the commit time so
# that cargo finds the cached target dir fresh; HEAD builds in this checkout's own target dir
# (${CARGO_TARGET_DIR:-target}). The binaries are hard-linked out of the target dirs before
# the corpus runs, so a build running beside this script cannot swap them mid-run.
#
# The corpus (the same case names, in the same order, for both builds):
#   scenario/   every tests/scenarios/*.json of this checkout, played by the `scenario` example
#   discovery/  for aoi, outline, aoi-coreutils and the tool examples (feed, shout, collect):
#               `schema` and `capabilities --output json`, `input-schema --command C --output
#               json` for every command C either build's capabilities lists, usage errors in
#               machine mode (an unknown flag before any command, and after each C); --help,
#               --version
#   outline/    a session on two databases: import of fixed records, create (non-ASCII,
#               U+202E, a control character), list and its cursor, search, get, update,
#               move, copy, export, import of that export into a second database, delete
#               refused without --confirm, dry runs, idempotent replay, status, doctor
#   coreutils/  ls, stat, wc, cat, head, tail, grep, find, du, and mkdir/cp/mv/rm/touch on a
#               fixture tree (names with a newline, U+202E, spaces, é; a subdir; a binary
#               file; Latin-1 bytes; a symlink; a hidden file), each in a fresh copy
#   pipeline/   shout and collect on fixed records and on feed's stream
#   verify/     `aoi verify` over every machine-mode stream above and over broken ones (the
#               last line cut, a line missing, a line that is not JSON, an empty file), some
#               with --schema; `aoi lint --transcript` over a few
# Every stream aoi verify, aoi lint and shout read is the one BASE's build wrote, for both
# builds: the consumers are compared on the same input bytes, the producers on their own.
# Each case (each outline session) runs in a fresh dir DIR, at the same path for both builds:
# cwd DIR/work, HOME DIR/home, XDG_* under DIR/xdg, NO_COLOR=1, LC_ALL=C, TZ=UTC, a fixed
# PATH, nothing else from the caller's environment; stdin /dev/null unless the case feeds a
# file; a 120 s deadline. Stdout, stderr and the exit status are kept. Machine-mode cases
# (`--output jsonl`, discovery's `--output json`) are repeated without `--output` as
# human-mode cases, whose differences are listed as informational, as are those of stderr.
#
# Normalized before comparing (regex substitutions on the raw bytes, never re-serialized JSON,
# so key order, spacing and escaping are compared exactly), and nothing else:
#   - every stream: the value of aoi.run and aoi.t (inside the `"aoi":{...}` object),
#     elapsed_ms and duration_ms, and the case's dir (replaced by $DIR);
#   - outline: its document ids are `doc_` and a ULID made of the clock and OS randomness, so
#     each id the session generated (not the fixed ones of the imported records) becomes ID1,
#     ID2, ... in order of first appearance per stream, with the ends of them that tables show;
#     created_at/updated_at values from this run's clock (not the imported ones); next_cursor
#     values (a cursor is bound to the database's random instance id), CURSOR1...; and
#     input_fingerprint where the invocation's own arguments carry such an id or cursor;
#   - coreutils: inode, changed_ms and created_ms (and stat's Inode/Change/Birth lines in
#     human mode), which a freshly written file cannot be given; every file's mtime and atime
#     are set to a fixed date, so modified and accessed are compared, except an accessed_ms
#     from this run's clock: a directory the tool itself read (find, du, grep -r walk them);
#   - human mode only: lint's wall time ("in 0.1s").
#
# Output: for each case that differs, one line naming it and what differs, then a unified diff
# of the normalized bytes (at most 40 lines; control and bidi characters shown as <U+XXXX>),
# then the summary line. Not part of .ci/run: it compares two builds of one change.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

die() {
  printf 'identity: %s\n' "$*" >&2
  exit 2
}

[[ $# -ge 1 && $# -le 2 ]] || die "usage: bash .ci/identity.sh BASE [HEAD]"
command -v jq >/dev/null 2>&1 || die "jq is needed (apt-get install jq)"
command -v python3 >/dev/null 2>&1 || die "python3 is needed"
command -v timeout >/dev/null 2>&1 || die "timeout (coreutils) is needed"

base_rev=$1
head_rev=${2:-}
base_sha=$(git rev-parse --verify --quiet "$base_rev^{commit}") || die "not a commit: $base_rev"
if [[ -n $head_rev ]]; then
  head_sha=$(git rev-parse --verify --quiet "$head_rev^{commit}") || die "not a commit: $head_rev"
fi
cache_root=${IDENTITY_CACHE:-$HOME/.cache/machinemode-identity}
# Run-varying timestamps are those at or after this instant (ms); fixtures are older.
t0_ms=$(($(date +%s) * 1000 - 60000))
started=$SECONDS

tmp=$(mktemp -d "${TMPDIR:-/tmp}/aoi-identity.XXXXXX")
worktrees=()
cleanup() {
  # Removing the checkout and pruning is quicker than `git worktree remove`, which rereads
  # every file whose mtime was pinned.
  if [[ ${#worktrees[@]} -gt 0 ]]; then
    rm -rf "${worktrees[@]}"
    git -C "$repo" worktree prune || true
  fi
  if [[ -n ${IDENTITY_KEEP:-} ]]; then
    printf 'identity: kept %s\n' "$tmp" >&2
  else
    chmod -R u+rwx "$tmp" 2>/dev/null || true
    rm -rf "$tmp"
  fi
}
trap cleanup EXIT
# Worktrees of an earlier run that was killed.
git worktree prune

# The binaries the corpus runs, relative to target/debug; each must exist in both builds.
required=(aoi outline aoi-coreutils examples/scenario examples/feed examples/shout examples/collect)

# build LABEL SRC TARGET_DIR: builds SRC into TARGET_DIR and links the binaries to $tmp/LABEL-bin.
build() {
  local label=$1 src=$2 target=$3 t=$SECONDS
  printf 'identity: building %s in %s (target dir %s)\n' "$label" "$src" "$target" >&2
  if ! (cd "$src" && CARGO_TARGET_DIR=$target nice -n 5 \
    cargo build --locked --workspace --bins --examples --quiet); then
    die "the $label build failed (see cargo's messages above)"
  fi
  printf 'identity: %s built in %d s\n' "$label" $((SECONDS - t)) >&2
  local bin=$tmp/$label-bin b
  mkdir -p "$bin/examples"
  for b in "${required[@]}"; do
    [[ -x $target/debug/$b ]] || die "the $label build has no target/debug/$b: a binary the corpus runs is missing"
    ln -f "$target/debug/$b" "$bin/$b" 2>/dev/null || cp "$target/debug/$b" "$bin/$b"
  done
}

# build_rev LABEL SHA: a worktree of SHA under $tmp, built into the cache dir of SHA.
build_rev() {
  local label=$1 sha=$2 src=$tmp/$1-src
  git worktree add --detach --quiet "$src" "$sha"
  worktrees+=("$src")
  # Pinned mtimes: the sources are not newer than the cached build, which cargo then reuses.
  local when
  when=$(git show -s --format=%ct "$sha")
  (cd "$src" && git ls-files -z | xargs -0 touch -h -d "@$when")
  mkdir -p "$cache_root/$sha"
  build "$label" "$src" "$cache_root/$sha"
}

if [[ -z ${IDENTITY_SELF:-} ]]; then
  build_rev base "$base_sha"
fi
if [[ -n $head_rev ]]; then
  build_rev head "$head_sha"
  head_label="$head_rev ($head_sha)"
else
  head_target=${CARGO_TARGET_DIR:-target}
  [[ $head_target = /* ]] || head_target=$repo/$head_target
  # What the build saw, taken before it: the tree may change while it runs.
  dirty=$(git status --porcelain --untracked-files=no | wc -l)
  head_label="the working tree ($(git rev-parse --short HEAD) + $dirty changed files, diff sha1 $(git diff HEAD | sha1sum | cut -c1-12))"
  build head "$repo" "$head_target"
fi
if [[ -n ${IDENTITY_SELF:-} ]]; then
  ln -s "$tmp/head-bin" "$tmp/base-bin"
  base_label="the same build (IDENTITY_SELF)"
else
  base_label="$base_rev ($base_sha)"
fi

# ---------------------------------------------------------------------------------------------
# Fixtures: written by this script, the same bytes for both builds.

fixtures=$tmp/fixtures
mkdir -p "$fixtures"
fixed_time=@1714564800 # 2024-05-01T12:00:00Z

# The records outline imports first: fixed ids and times, non-ASCII, bidi and control chars.
cat >"$fixtures/seed.jsonl" <<'EOF'
{"id":"doc_01hzx3t7q8w9e2r4t6y8v0j1j3","title":"Deploy runbook","body":"Run the deploy job, then watch the agents.","tags":["ops","deploy"],"collection":"runbooks","created_at":1714564800000,"updated_at":1714564800000}
{"id":"doc_01hzx3t7q8w9e2r4t6y8v0j1j4","title":"Caf\u00e9 men\u00fa \u2014 \u65e5\u672c\u8a9e \u202egnp.exe","body":"Bidi \u202eevil\u202c, a bell \u0007, a tab\there\nsecond line","tags":["food"],"collection":"inbox","created_at":1714564801000,"updated_at":1714564802000}
{"id":"doc_01hzx3t7q8w9e2r4t6y8v0j1j5","title":"Rollback plan","body":"rollback the agents quickly","tags":["ops"],"collection":"runbooks","created_at":1714564803000,"updated_at":1714564803000}
{"id":"doc_01hzx3t7q8w9e2r4t6y8v0j1j6","title":"Scratch","body":"to be deleted","collection":"tmp","created_at":1714564804000,"updated_at":1714564804000}
{"id":"doc_01hzx3t7q8w9e2r4t6y8v0j1j7","title":"Keep me","body":"idempotent delete target","tags":["keep"],"collection":"tmp","created_at":1714564805000,"updated_at":1714564805000}
EOF
seed_ids=$(jq -r .id "$fixtures/seed.jsonl" | tr '\n' ' ')
printf '%s\n' '{"title":"Bad\u0001title"}' >"$fixtures/bad-import.jsonl"

# Plain records for shout and collect.
printf '%s\n' '{"id":"a","n":1,"title":"caf\u00e9 \u202eabc"}' '{"id":"b","n":2,"title":"plain"}' \
  >"$fixtures/items.jsonl"
printf '%s\n' '{"id":"a","n":1,"title":"ok"}' '{"id":"b","n":"two","title":"bad"}' \
  >"$fixtures/items-bad.jsonl"

# make_tree DIR: the coreutils fixture tree, every mtime and atime fixed.
make_tree() {
  local d=$1
  mkdir -p "$d/notes" "$d/sub/deep"
  printf 'TODO: ship it\nfix the FIXME\nlast todo line\n' >"$d/notes/todo.txt"
  printf '# Readme\nNothing to do here.\n' >"$d/notes/readme.md"
  printf 'a TODO with spaces\n' >"$d/a file with spaces.txt"
  printf 'newline in the name\nTODO twice TODO\n' >"$d/"$'new\nline.txt'
  printf 'bidi TODO\n' >"$d/"$'evil\xe2\x80\xaetxt.exe'
  printf 'caf\xc3\xa9 TODO \xe2\x80\xae reversed\n' >"$d/"$'caf\xc3\xa9.txt'
  printf 'deep todo\nTODO again\n' >"$d/sub/deep/nested.txt"
  printf 'sub level\n' >"$d/sub/level.txt"
  printf 'bin\0TODO\0\xff\xfe\x01\x02' >"$d/blob.bin"
  printf 'latin1 caf\xe9 TODO\n' >"$d/latin1.txt"
  printf 'hidden TODO\n' >"$d/.hidden"
  ln -s notes/todo.txt "$d/link-to-todo"
  find "$d" -depth -exec touch -h -d "$fixed_time" {} +
}

# ---------------------------------------------------------------------------------------------
# Running cases.

# fresh NAME: a new case dir $D (the same path for both builds), with its env.
fresh() {
  D=$W/$1
  mkdir -p "$D/work" "$D/home" "$D/xdg/config" "$D/xdg/data" "$D/xdg/cache" "$D/xdg/state" \
    "$D/xdg/runtime"
  chmod 700 "$D/xdg/runtime"
  case_env=(PATH=/usr/local/bin:/usr/bin:/bin HOME="$D/home" XDG_CONFIG_HOME="$D/xdg/config"
    XDG_DATA_HOME="$D/xdg/data" XDG_CACHE_HOME="$D/xdg/cache" XDG_STATE_HOME="$D/xdg/state"
    XDG_RUNTIME_DIR="$D/xdg/runtime" NO_COLOR=1 LC_ALL=C TZ=UTC)
}

# run NAME MODE GROUP CMD...: one case in $D; stdin is $IN (default /dev/null), VARY=1 marks
# arguments that carry a run-varying value, IDS a file of outline ids this session generated.
run() {
  local name=$1 mode=$2 group=$3
  shift 3
  local o=$OUT/$name rc=0
  [[ ! -e $o ]] || die "corpus bug: case $name twice"
  mkdir -p "$o"
  # The braces take bash's own report of a case killed by a signal ("Aborted": feed's
  # --crash-after); the status says it.
  { (cd "$D/work" && timeout -k 5 120 env -i "${case_env[@]}" "$@" \
    <"${IN:-/dev/null}" >"$o/stdout" 2>"$o/stderr") || rc=$?; } 2>/dev/null
  printf '%s\n' "$rc" >"$o/status"
  printf 'mode=%s\ngroup=%s\ndir=%s\nvary=%s\nids=%s\n' "$mode" "$group" "$D" "${VARY:-0}" \
    "${IDS:-}" >"$o/meta"
}

# helper CMD...: the same environment, output to stdout, not a case (ids, cursors).
helper() {
  (cd "$D/work" && timeout -k 5 60 env -i "${case_env[@]}" "$@" </dev/null 2>/dev/null) || true
}

# both NAME GROUP CMD...: the case in machine mode (--output jsonl) and in human mode.
both() {
  local name=$1 group=$2
  shift 2
  run "$group/$name" machine "$group" "$@" --output jsonl
  run "$group/$name.human" human "$group" "$@"
}

# base_stream CASE: the stdout BASE's build wrote for CASE (a glob matching one case).
base_stream() {
  local found=("$tmp"/base/$1/stdout)
  [[ ${#found[@]} -eq 1 && -f ${found[0]} ]] || die "corpus bug: no single case $1 in BASE's run"
  printf '%s\n' "${found[0]}"
}

# ---------------------------------------------------------------------------------------------
# The corpus, run once per build: corpus LABEL.

corpus() {
  local label=$1
  BIN=$tmp/$label-bin
  OUT=$tmp/$label
  W=$tmp/w
  rm -rf "$W"
  mkdir -p "$OUT" "$W"
  local t=$SECONDS
  corpus_scenarios
  corpus_discovery
  corpus_outline machine
  corpus_outline human
  corpus_coreutils
  corpus_pipeline
  corpus_verify
  printf 'identity: corpus run with %s build in %d s\n' "$label" $((SECONDS - t)) >&2
}

corpus_scenarios() {
  local f n
  compgen -G "$repo/tests/scenarios/*.json" >/dev/null || die "no tests/scenarios/*.json"
  for f in "$repo"/tests/scenarios/*.json; do
    n=$(basename "$f" .json)
    fresh "scenario-$n"
    cp "$f" "$D/work/$n.json"
    run "scenario/$n" machine scenario "$BIN/examples/scenario" "$n.json"
  done
}

# The commands both builds' capabilities list for TOOL (the union, sorted).
commands_of() {
  local tool=$1 b
  for b in "$tmp/base-bin" "$tmp/head-bin"; do
    helper "$b/$tool" capabilities --output json | jq -r '.commands[]?.name' || true
  done | sort -u
}

corpus_discovery() {
  local tool slug c cmds
  for tool in aoi outline aoi-coreutils examples/feed examples/shout examples/collect; do
    slug=${tool#examples/}
    fresh "discovery-$slug"
    mapfile -t cmds < <(commands_of "$tool")
    [[ ${#cmds[@]} -gt 0 ]] || die "$tool lists no commands in either build's capabilities"
    run "discovery/$slug.schema" json discovery "$BIN/$tool" schema --output json
    run "discovery/$slug.capabilities" json discovery "$BIN/$tool" capabilities --output json
    run "discovery/$slug.capabilities-jsonl" machine discovery "$BIN/$tool" capabilities --output jsonl
    run "discovery/$slug.capabilities.human" human discovery "$BIN/$tool" capabilities
    for c in "${cmds[@]}"; do
      run "discovery/$slug.input-schema.${c// /-}" json discovery \
        "$BIN/$tool" input-schema --command "$c" --output json
    done
    run "discovery/$slug.input-schema.unknown" machine discovery \
      "$BIN/$tool" input-schema --command no-such-command --output jsonl
    run "discovery/$slug.usage-flag" machine discovery "$BIN/$tool" --output jsonl --no-such-flag
    run "discovery/$slug.usage-flag.human" human discovery "$BIN/$tool" --no-such-flag
    for c in "${cmds[@]}"; do
      [[ $c != schema && $c != input-schema && $c != capabilities ]] || continue
      # shellcheck disable=SC2086 # a command of two words ("auth login") is two arguments
      run "discovery/$slug.usage-flag.${c// /-}" machine discovery \
        "$BIN/$tool" $c --no-such-flag --output jsonl
    done
    run "discovery/$slug.help.human" human discovery "$BIN/$tool" --help
    run "discovery/$slug.version.human" human discovery "$BIN/$tool" --version
  done
}

# outline: one session per mode, in one dir: the steps depend on each other.
corpus_outline() {
  local mode=$1 s
  s=outline-$mode
  fresh "$s"
  IDS=$OUT/$s.ids
  : >"$IDS"
  local one=$D/work/one.db two=$D/work/two.db
  cp "$fixtures/seed.jsonl" "$fixtures/bad-import.jsonl" "$D/work/"
  local n=0
  # step SLUG ARGS...: one outline invocation, --output jsonl added in machine mode.
  step() {
    n=$((n + 1))
    local name
    name=$(printf 'outline/%s.%02d-%s' "$mode" "$n" "$1")
    shift
    if [[ $mode = machine ]]; then
      run "$name" machine outline "$BIN/outline" "$@" --output jsonl
    else
      run "$name" human outline "$BIN/outline" "$@"
    fi
  }
  # The ids in both databases now (helper runs, read-only), appended to $IDS.
  collect_ids() {
    local db
    for db in "$one" "$two"; do
      [[ -e $db ]] || continue
      helper "$BIN/outline" export --db "$db" --output jsonl | jq -r 'select(.type=="entry").id'
    done >>"$IDS"
  }
  # The id of the Nth document this session created in one.db (list order), not a fixed one.
  created_id() {
    helper "$BIN/outline" list --limit 1000 --db "$one" --output jsonl |
      jq -r --arg seed "$seed_ids" 'select(.type=="entry") | .id | select(. as $i | $seed | contains($i) | not)' |
      sed -n "${1}p"
  }

  step import-dry-run import --input-jsonl seed.jsonl --dry-run --db "$one"
  step get-no-db get doc_01hzx3t7q8w9e2r4t6y8v0j1j3 --db "$one"
  step import-seed import --input-jsonl seed.jsonl --db "$one"
  step import-bad import --input-jsonl bad-import.jsonl --db "$one"
  step create-utf8 create --title $'Caf\xc3\xa9 d\xc3\xa9ploy \xe2\x80\x94 \xe6\x97\xa5\xe6\x9c\xac' \
    --body $'Ship it: \xe2\x80\xaeevil\x01 done' --tag ops --tag "caf"$'\xc3\xa9' --db "$one"
  step create-bidi create --title $'Evil \xe2\x80\xaegnp.exe' --body $'line1\nline2 agents' \
    --collection work --db "$one"
  step create-control create --title $'ctl \x07 bell' --db "$one"
  step create-dry-run create --title 'Dry' --body 'not written' --dry-run --db "$one"
  collect_ids
  step list list --db "$one"
  step list-collection list --collection runbooks --db "$one"
  step list-tag list --tag ops --db "$one"
  step list-page list --limit 2 --db "$one"
  local cursor
  cursor=$(helper "$BIN/outline" list --limit 2 --db "$one" --output jsonl |
    jq -r 'select(.type=="aoi:summary").next_cursor // empty')
  VARY=1 step list-cursor list --limit 2 --cursor "$cursor" --db "$one"
  step list-cursor-bad list --cursor not-a-cursor --db "$one"
  step search search agents --db "$one"
  step search-accent search cafe --db "$one"
  step search-page search ops --limit 1 --db "$one"
  step search-none search nothing-matches-this --db "$one"
  step get-fixed get doc_01hzx3t7q8w9e2r4t6y8v0j1j4 --db "$one"
  step get-short get y8v0j1j4 --db "$one"
  VARY=1 step get-created get "$(created_id 1)" --db "$one"
  step get-truncated get doc_01hzx3t7q8w9e2r4t6y8v0j1j4 --max-bytes 10 --db "$one"
  step get-missing get doc_01hzx3t7q8w9e2r4t6y8v0j1j9 --db "$one"
  step update update doc_01hzx3t7q8w9e2r4t6y8v0j1j3 --title 'Deploy runbook v2' --if-match 1 --db "$one"
  step update-conflict update doc_01hzx3t7q8w9e2r4t6y8v0j1j3 --title 'Lost' --if-match 1 --db "$one"
  step update-dry-run update doc_01hzx3t7q8w9e2r4t6y8v0j1j5 --body 'new body' --dry-run --db "$one"
  VARY=1 step update-created update "$(created_id 2)" --body $'changed \xe2\x80\xae body' --db "$one"
  step move move doc_01hzx3t7q8w9e2r4t6y8v0j1j5 --to archive --db "$one"
  step copy copy doc_01hzx3t7q8w9e2r4t6y8v0j1j4 --db "$one"
  collect_ids
  step export export --db "$one"
  # The export this session's build wrote is what it imports (a round trip of one build).
  helper "$BIN/outline" export --db "$one" --output jsonl >"$D/work/export.jsonl"
  step import-export import --input-jsonl export.jsonl --db "$two"
  collect_ids
  step list-two list --db "$two"
  step export-two export --collection runbooks --db "$two"
  step delete-unconfirmed delete doc_01hzx3t7q8w9e2r4t6y8v0j1j6 --db "$one"
  step delete-dry-run delete doc_01hzx3t7q8w9e2r4t6y8v0j1j6 --dry-run --db "$one"
  step delete-confirmed delete doc_01hzx3t7q8w9e2r4t6y8v0j1j6 --confirm --db "$one"
  step delete-query delete --query rollback --confirm --db "$one"
  step delete-idempotent delete doc_01hzx3t7q8w9e2r4t6y8v0j1j7 --confirm --idempotency-key k1 --db "$one"
  step delete-replayed delete doc_01hzx3t7q8w9e2r4t6y8v0j1j7 --confirm --idempotency-key k1 --db "$one"
  step delete-missing delete doc_01hzx3t7q8w9e2r4t6y8v0j1j9 --confirm --db "$one"
  step list-after list --db "$one"
  step status status --db "$one"
  step doctor doctor --db "$one"
  step usage-typo serach agents --db "$one"
  unset IDS
}

corpus_coreutils() {
  local c=$BIN/aoi-coreutils
  # cu SLUG ARGS...: a fresh fixture tree, the command in machine and in human mode.
  cu() {
    local slug=$1
    shift
    fresh "coreutils-$slug"
    make_tree "$D/work"
    touch -d "$fixed_time" "$D" # `ls -a` shows it as ..
    run "coreutils/$slug" machine coreutils "$c" "$@" --output jsonl
    fresh "coreutils-$slug.human"
    make_tree "$D/work"
    touch -d "$fixed_time" "$D"
    run "coreutils/$slug.human" human coreutils "$c" "$@"
  }
  cu ls ls
  cu ls-l ls -l
  cu ls-la ls -la
  cu ls-R ls -R
  cu ls-sub ls -l sub notes
  cu ls-missing ls here-not notes
  cu stat stat notes/todo.txt $'caf\xc3\xa9.txt' sub link-to-todo $'new\nline.txt'
  cu stat-L stat -L link-to-todo
  cu stat-missing stat notes/todo.txt nope
  cu wc wc notes/todo.txt blob.bin latin1.txt $'evil\xe2\x80\xaetxt.exe'
  cu wc-l wc -l notes/todo.txt sub/deep/nested.txt
  cu wc-missing wc nope notes/todo.txt
  IN=$fixtures/seed.jsonl cu wc-stdin wc
  cu cat cat notes/todo.txt $'caf\xc3\xa9.txt'
  cu cat-binary cat blob.bin
  cu cat-latin1 cat latin1.txt
  cu cat-missing cat nope
  IN=$fixtures/items.jsonl cu cat-stdin cat -
  cu head head -n 1 notes/todo.txt sub/deep/nested.txt
  cu head-c head -c 5 notes/todo.txt
  cu tail tail -n 1 notes/todo.txt $'new\nline.txt'
  cu grep grep TODO
  cu grep-r grep -r TODO notes sub
  cu grep-c grep -c TODO
  cu grep-l grep -l TODO
  cu grep-i grep -i todo
  cu grep-n grep -rn -E 'TODO|FIXME' notes
  cu grep-binary grep TODO blob.bin latin1.txt
  cu grep-hidden grep --hidden TODO
  cu grep-none grep absent-pattern
  cu grep-bad grep '(unclosed'
  cu find find
  cu find-name find --name '*.txt'
  cu find-type find -t f
  cu find-hidden find --hidden sub
  cu du du
  cu du-s du -s
  cu du-sb du -sb notes sub
  cu mkdir mkdir -p out/a/b
  cu mkdir-dry-run mkdir -p --dry-run out/a
  cu mkdir-exists mkdir notes
  cu cp cp notes/todo.txt copy.txt
  cu cp-conflict cp notes/todo.txt notes/readme.md
  cu mv mv 'a file with spaces.txt' renamed.txt
  cu rm-unconfirmed rm notes/readme.md
  cu rm-confirmed rm --confirm notes/readme.md
  cu rm-dry-run rm -r --dry-run sub
  cu touch touch -d 2024-05-01T12:30:00Z new.txt
  cu usage ls --bogus
}

corpus_pipeline() {
  fresh pipeline
  cp "$fixtures/items.jsonl" "$fixtures/items-bad.jsonl" "$D/work/"
  both feed-list pipeline "$BIN/examples/feed" list --limit 3
  both feed-fail pipeline "$BIN/examples/feed" list --fail-after 2
  both feed-crash pipeline "$BIN/examples/feed" list --crash-after 2
  both feed-doctor pipeline "$BIN/examples/feed" doctor
  both shout-items pipeline "$BIN/examples/shout" --input-jsonl items.jsonl
  both shout-bad pipeline "$BIN/examples/shout" --input-jsonl items-bad.jsonl
  local src
  src=$(base_stream pipeline/feed-list)
  cp "$src" "$D/work/feed-list.jsonl"
  src=$(base_stream pipeline/feed-fail)
  cp "$src" "$D/work/feed-fail.jsonl"
  IN=$D/work/feed-list.jsonl both shout-upstream pipeline "$BIN/examples/shout" --input-jsonl -
  IN=$D/work/feed-fail.jsonl both shout-upstream-failed pipeline "$BIN/examples/shout" --input-jsonl -
  both collect-dry-run pipeline "$BIN/examples/collect" add --into store.jsonl --input-jsonl items.jsonl --dry-run
  both collect-add pipeline "$BIN/examples/collect" add --into store.jsonl --input-jsonl items.jsonl
  both collect-clear-unconfirmed pipeline "$BIN/examples/collect" clear --into store.jsonl
  both collect-clear pipeline "$BIN/examples/collect" clear --into store.jsonl --confirm
}

# aoi verify and aoi lint, on the streams BASE's build wrote.
corpus_verify() {
  local a=$BIN/aoi name group src schema
  # Every machine-mode stream above, in case order.
  while IFS= read -r name; do
    src=$(base_stream "$name")
    [[ -s $src ]] || continue
    group=${name%%/*}
    fresh "verify-${name//\//-}"
    cp "$src" "$D/work/stream.jsonl"
    run "verify/$name" machine verify "$a" verify stream.jsonl --output jsonl
    run "verify/$name.human" human verify "$a" verify stream.jsonl
    schema=
    case $group in
      outline) schema=discovery/outline.schema ;;
      coreutils) schema=discovery/aoi-coreutils.schema ;;
    esac
    if [[ -n $schema ]]; then
      src=$(base_stream "$schema")
      cp "$src" "$D/work/schema.json"
      run "verify/$name.schema" machine verify "$a" verify stream.jsonl --schema schema.json --output jsonl
    fi
  done < <(cd "$tmp/base" && grep -l '^mode=machine$' -r --include=meta . |
    sed 's|^\./||; s|/meta$||' | grep -v '^verify/' | sort)

  # Broken streams, cut from three of BASE's.
  local s b w list grep success
  list=$(base_stream 'outline/machine.*-list')
  grep=$(base_stream coreutils/grep)
  success=$(base_stream scenario/success)
  for s in outline-list:$list coreutils-grep:$grep scenario-success:$success; do
    src=${s#*:}
    s=${s%%:*}
    fresh "broken-$s"
    w=$D/work
    head -n -1 "$src" >"$w/cut-last-line.jsonl"
    head -c -7 "$src" >"$w/truncated.jsonl"
    sed '2d' "$src" >"$w/missing-line.jsonl"
    sed '2s/.*/{"type":"entry","aoi":{"seq":1,/' "$src" >"$w/bad-json.jsonl"
    : >"$w/empty.jsonl"
    for b in cut-last-line truncated missing-line bad-json empty; do
      run "verify/broken.$s.$b" machine verify "$a" verify "$b.jsonl" --output jsonl
      run "verify/broken.$s.$b.human" human verify "$a" verify "$b.jsonl"
    done
    IN=$w/missing-line.jsonl run "verify/broken.$s.stdin" machine verify "$a" verify --output jsonl
  done

  # aoi lint on captured streams (--output is lint's alias of --format at both revisions).
  fresh lint
  w=$D/work
  cp "$list" "$w/list.jsonl"
  cp "$grep" "$w/grep.jsonl"
  src=$(base_stream scenario/item-errors-partial)
  cp "$src" "$w/partial.jsonl"
  src=$(base_stream discovery/outline.schema)
  cp "$src" "$w/outline-schema.json"
  head -n -1 "$grep" >"$w/cut.jsonl"
  for s in list grep partial cut; do
    run "verify/lint.$s" machine verify "$a" lint --transcript "$s.jsonl" --output jsonl
    run "verify/lint.$s.human" human verify "$a" lint --transcript "$s.jsonl"
  done
  run "verify/lint.list-schema" machine verify \
    "$a" lint --transcript list.jsonl --schema outline-schema.json --output jsonl
}

corpus base
corpus head

# ---------------------------------------------------------------------------------------------
# Normalize and compare.

printf 'identity: builds and corpus took %d s\n' $((SECONDS - started))
printf 'identity: BASE %s\nidentity: HEAD %s\n' "$base_label" "$head_label"
rc=0
python3 - "$tmp/base" "$tmp/head" "$t0_ms" "$seed_ids" <<'PY' || rc=$?
import difflib
import os
import re
import sys
import unicodedata

base_root, head_root, t0_ms, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), set(sys.argv[4].split())

AOI_OBJECT = re.compile(rb'"aoi":\{[^{}]*\}')
AOI_RUN = re.compile(rb'("run":")[0-9A-HJKMNP-TV-Z]{26}(")')
AOI_T = re.compile(rb'("t":)-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?')
TIMINGS = re.compile(rb'("(?:elapsed_ms|duration_ms)":)[0-9]+(?:\.[0-9]+)?')
DOC_ID = re.compile(rb'doc_[0-9a-hjkmnp-tv-z]{26}')
CLOCK = re.compile(rb'("(?:created_at|updated_at)":)([0-9]{13,})')
CURSOR = re.compile(rb'("next_cursor":")([^"]+)(")')
HUMAN_CURSOR = re.compile(rb'(--cursor )([A-Za-z0-9_-]{16,})')
FINGERPRINT = re.compile(rb'("input_fingerprint":")[^"]*(")')
FS_FIELDS = re.compile(rb'("(?:inode|changed_ms|created_ms)":)[0-9]+')
ATIME = re.compile(rb'("accessed_ms":)([0-9]+)')
FS_HUMAN = re.compile(rb'(Inode: )[0-9]+|^((?:Change|  Birth| Birth): ).*$', re.M)
LINT_TIME = re.compile(rb'( in )[0-9]+(?:\.[0-9]+)?s\b')


def meta(case_dir):
    out = {}
    with open(os.path.join(case_dir, "meta"), encoding="utf-8") as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("=")
            out[k] = v
    return out


def ordinal(mapping, key, prefix):
    if key not in mapping:
        mapping[key] = b"%s%d" % (prefix, len(mapping) + 1)
    return mapping[key]


def normalize(data, m):
    data = data.replace(m["dir"].encode(), b"$DIR")

    def aoi(match):
        obj = AOI_RUN.sub(rb"\1RUN\2", match.group(0))
        return AOI_T.sub(rb"\1T", obj)

    data = AOI_OBJECT.sub(aoi, data)
    data = TIMINGS.sub(rb"\1N", data)
    group, human = m["group"], m["mode"] == "human"
    if group == "outline":
        generated = set()
        if m.get("ids"):
            with open(m["ids"], "rb") as f:
                generated = {l.strip() for l in f if l.strip()}
        generated |= set(DOC_ID.findall(data))
        generated -= {s.encode() for s in seed}
        ids = {}
        if generated:
            # A full id, or an end of one (6 to 25 characters, as tables and references show).
            ends = {}
            for full in generated:
                ends[full] = full
                ulid = full[4:]
                for n in range(6, len(ulid)):
                    ends.setdefault(ulid[-n:], full)
            alternation = b"|".join(re.escape(e) for e in sorted(ends, key=len, reverse=True))
            pattern = re.compile(rb"(?<![0-9a-z_])(?:" + alternation + rb")(?![0-9a-z])")
            data = pattern.sub(lambda mt: ordinal(ids, ends[mt.group(0)], b"ID"), data)
        data = CLOCK.sub(lambda mt: mt.group(1) + (b"NOW" if int(mt.group(2)) >= t0_ms else mt.group(2)), data)
        cursors = {}
        data = CURSOR.sub(lambda mt: mt.group(1) + ordinal(cursors, mt.group(2), b"CURSOR") + mt.group(3), data)
        data = HUMAN_CURSOR.sub(lambda mt: mt.group(1) + ordinal(cursors, mt.group(2), b"CURSOR"), data)
        if m.get("vary") == "1":
            data = FINGERPRINT.sub(rb"\1FINGERPRINT\2", data)
    if group == "coreutils":
        data = FS_FIELDS.sub(rb"\1N", data)
        data = ATIME.sub(lambda mt: mt.group(1) + (b"NOW" if int(mt.group(2)) >= t0_ms else mt.group(2)), data)
        data = FS_HUMAN.sub(lambda mt: (mt.group(1) or mt.group(2)) + b"N", data)
    if human:
        data = LINT_TIME.sub(rb"\1Ns", data)
    return data


def visible(line):
    text = line.decode("utf-8", "backslashreplace")
    out = []
    for ch in text:
        if ch in "\t\n" or not (unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")):
            out.append(ch)
        else:
            out.append("<U+%04X>" % ord(ch))
    return "".join(out).rstrip("\n")


def clip(line, at):
    """A long line shown around byte `at` (where it first differs from its counterpart)."""
    if len(line) <= 300:
        return line
    start = max(0, at - 100)
    return (b"..." if start else b"") + line[start:start + 240] + b"... (%d bytes, from byte %d)" % (len(line), start)


def diff(a, b, label, out):
    lines = list(difflib.diff_bytes(difflib.unified_diff, a.splitlines(True), b.splitlines(True),
                                    b"base/" + label.encode(), b"head/" + label.encode(), n=1))
    # Pair each removed line with the added line at the same place in its block, so that a
    # long line (a one-line JSON document) is shown around its first difference.
    minus = [i for i, l in enumerate(lines) if l.startswith(b"-") and not l.startswith(b"---")]
    plus = [i for i, l in enumerate(lines) if l.startswith(b"+") and not l.startswith(b"+++")]
    at = {}
    for i in minus:
        j = next((k for k in plus if k > i and k not in at), None)
        if j is not None:
            x, y = lines[i][1:], lines[j][1:]
            p = next((n for n in range(min(len(x), len(y))) if x[n] != y[n]), min(len(x), len(y)))
            at[i] = at[j] = p
    shown = [visible(l[:1] + clip(l[1:], at.get(i, 0))) for i, l in enumerate(lines[:40])]
    if len(lines) > 40:
        shown.append("... (%d more diff lines)" % (len(lines) - 40))
    for l in shown:
        out.append("    " + l)


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def cases(root):
    found = set()
    for dirpath, _, files in os.walk(root):
        if "meta" in files:
            found.add(os.path.relpath(dirpath, root))
    return found


def main():
    base_cases, head_cases = cases(base_root), cases(head_root)
    machine_total = machine_same = machine_differ = human_differ = stderr_differ = 0
    # Reported in this order: machine-mode differences, then the informational ones.
    report = {"DIFFER": [], "info (machine-mode stderr)": [], "info (human mode)": []}
    for name in sorted(base_cases | head_cases):
        if name not in base_cases or name not in head_cases:
            report["DIFFER"].append("DIFFER %s: only in %s's corpus" % (name, "BASE" if name in base_cases else "HEAD"))
            machine_total += 1
            machine_differ += 1
            continue
        bd, hd = os.path.join(base_root, name), os.path.join(head_root, name)
        bm, hm = meta(bd), meta(hd)
        machine = bm["mode"] != "human"
        parts = {}
        for part in ("status", "stdout", "stderr"):
            a, b = read(os.path.join(bd, part)), read(os.path.join(hd, part))
            if part != "status":
                a, b = normalize(a, bm), normalize(b, hm)
            parts[part] = (a, b)
        differing = [p for p, (a, b) in parts.items() if a != b]
        if machine:
            machine_total += 1
            hard = [p for p in differing if p != "stderr"]
            if hard:
                machine_differ += 1
                verdict = "DIFFER"
            else:
                machine_same += 1
                if differing:
                    stderr_differ += 1
                    verdict = "info (machine-mode stderr)"
                else:
                    continue
        else:
            if not differing:
                continue
            human_differ += 1
            verdict = "info (human mode)"
        what = []
        for p in differing:
            a, b = parts[p]
            if p == "status":
                what.append("exit status %s -> %s" % (a.decode().strip(), b.decode().strip()))
            else:
                what.append(p)
        out = report[verdict]
        out.append("%s %s: %s" % (verdict, name, ", ".join(what)))
        for p in ("stdout", "stderr"):
            if p in differing:
                diff(parts[p][0], parts[p][1], "%s/%s" % (name, p), out)

    for lines in report.values():
        for line in lines:
            print(line)

    if stderr_differ:
        print("identity: %d machine-mode cases differ on stderr only (informational)" % stderr_differ)
    print("identity: %d machine-mode cases, %d identical, %d differ; %d human-mode cases differ (informational)"
          % (machine_total, machine_same, machine_differ, human_differ))
    return 1 if machine_differ else 0


try:
    sys.exit(main())
except Exception:  # a bug here must not read as "the builds differ"
    import traceback
    traceback.print_exc()
    sys.exit(2)
PY
exit "$rc"
