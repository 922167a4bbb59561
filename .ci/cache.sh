# Sourced by .ci/run: dependency caches that persist between CI runs on one machine, outside
# the clone, and that can only cost time, never hide a change.
#
# What is kept, under $AOI_CI_CACHE (default /var/cache/machinemode-ci):
#   cargo-KEY/   the main workspace's target dir (every profile CI builds: check, debug, doc,
#                release, and the MCP clients the tests install into target/mcp-clients/);
#                KEY hashes Cargo.lock and `rustc -vV`
#   fuzz-KEY/    fuzz/'s target dir (the sancov release build); KEY hashes fuzz/Cargo.lock,
#                `rustc -vV` and .ci/fuzz.sh (its RUSTFLAGS)
#   pip/ npm/    pip's and npm's own download caches (content-addressed by the tools)
# The clone's target/ and fuzz/target/ become symlinks to the two dirs, so every path the
# README and the tests name stays what it is. The crates.io registry stays in CARGO_HOME,
# also outside the clone.
#
# The rule that keeps it honest is the one rust-cache follows: a cache holds dependencies
# only. Before the run and again after it, every artifact of the workspace's own packages
# (main and fuzz) is removed with `cargo clean -p`, so each run compiles them from the clone's
# sources; cargo's own fingerprints decide whether a dependency is fresh. A lockfile or
# toolchain change gives a new KEY: the run starts cold and the old dir is removed.
#
# AOI_CI_CACHE=off runs cold in the clone's own target/ (nothing is read or kept).
# One run holds the cache at a time (flock); a second concurrent run goes cold.

ci_cache_root=${AOI_CI_CACHE:-/var/cache/machinemode-ci}
ci_cache_state=off

# The names of the workspace's packages, for `cargo clean -p` (main workspace, then fuzz).
ci_workspace_packages() {
  cargo metadata --locked --no-deps --format-version 1 "$@" | jq -r '.packages[].name'
}

# Removes every artifact of the workspace's own packages from the target dir cargo would use
# for the manifest given (none: the main workspace), in each profile CI builds.
ci_cache_clean_workspace() {
  local packages=() p
  mapfile -t packages < <(ci_workspace_packages "$@")
  local args=()
  for p in "${packages[@]}"; do args+=(-p "$p"); done
  if [[ $# -eq 0 ]]; then
    [[ -d target/debug ]] && cargo clean --locked --quiet "${args[@]}"
    [[ -d target/release ]] && cargo clean --locked --quiet --release "${args[@]}"
    # The public-API listing's own target dir (.ci/public_api.py): its documentation too.
    [[ -d target/public-api/debug ]] && CARGO_TARGET_DIR=target/public-api \
      cargo clean --locked --quiet "${args[@]}"
    rm -rf target/doc target/public-api/doc target/debug/incremental target/release/incremental
  else
    [[ -d fuzz/target ]] && CARGO_TARGET_DIR=fuzz/target cargo clean --locked --quiet "$@" \
      --release --target x86_64-unknown-linux-gnu "${args[@]}"
  fi
  return 0
}

# Links target/ and fuzz/target/ to the cache (or leaves them alone when it is off or busy),
# says at the start whether the run is warm or cold, and cleans the workspace's artifacts.
# The dependencies a lockfile pins: its packages from a registry or a git source, each with
# its version, checksum and dependency list; the workspace's own packages (no `source`) are
# left out, since the cache never holds them and a change in their list of workspace
# dependencies changes nothing the cache holds.
ci_cache_locked_deps() {
  awk 'BEGIN { RS = ""; ORS = "\n\n" } !/^\[\[package\]\]/ || /\nsource = / { print }' "$1"
}

ci_cache_open() {
  if [[ $ci_cache_root = off ]]; then
    echo "== cache: off (AOI_CI_CACHE=off): a cold run in the clone's target/"
    return 0
  fi
  if [[ -e target && ! -L target ]] || [[ -e fuzz/target && ! -L fuzz/target ]]; then
    echo "== cache: not used: this checkout already has a target/ of its own (a cold run there)"
    return 0
  fi
  mkdir -p "$ci_cache_root"
  exec {ci_cache_lock}>"$ci_cache_root/.lock"
  if ! flock -n "$ci_cache_lock"; then
    echo "== cache: busy (another CI run holds $ci_cache_root/.lock): a cold run in target/"
    return 0
  fi
  local rustc key_cargo key_fuzz
  rustc=$(rustc -vV)
  key_cargo=$( (echo "$rustc"; ci_cache_locked_deps Cargo.lock) | sha256sum | cut -c1-16)
  key_fuzz=$( (echo "$rustc"; ci_cache_locked_deps fuzz/Cargo.lock; cat .ci/fuzz.sh) | sha256sum | cut -c1-16)
  local cargo_dir=$ci_cache_root/cargo-$key_cargo fuzz_dir=$ci_cache_root/fuzz-$key_fuzz
  local warm=()
  [[ -d $cargo_dir ]] && warm+=("cargo-$key_cargo")
  [[ -d $fuzz_dir ]] && warm+=("fuzz-$key_fuzz")
  # Old keys: a stale cache is dropped, never reused.
  local old
  for old in "$ci_cache_root"/cargo-* "$ci_cache_root"/fuzz-*; do
    [[ -e $old && $old != "$cargo_dir" && $old != "$fuzz_dir" ]] && rm -rf "$old"
  done
  mkdir -p "$cargo_dir" "$fuzz_dir" "$ci_cache_root/pip" "$ci_cache_root/npm"
  ln -sfn "$cargo_dir" target
  ln -sfn "$fuzz_dir" fuzz/target
  export PIP_CACHE_DIR=$ci_cache_root/pip npm_config_cache=$ci_cache_root/npm
  ci_cache_state=on
  case ${#warm[@]} in
    2) echo "== cache: warm ($ci_cache_root: ${warm[*]}); the workspace's own crates rebuild" ;;
    0) echo "== cache: cold (nothing kept in $ci_cache_root for Cargo.lock, fuzz/Cargo.lock and $(rustc --version))" ;;
    *) echo "== cache: partly warm (${warm[*]} kept in $ci_cache_root; the rest is cold)" ;;
  esac
  ci_cache_clean_workspace
  ci_cache_clean_workspace --manifest-path fuzz/Cargo.toml
}

# After the run: the workspace's artifacts leave the cache, which keeps dependencies only.
ci_cache_close() {
  [[ $ci_cache_state = on ]] || return 0
  ci_cache_clean_workspace || true
  ci_cache_clean_workspace --manifest-path fuzz/Cargo.toml || true
  rm -f target fuzz/target
}
