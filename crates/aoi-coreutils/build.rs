//! Links `aoi-coreutils` as a position-dependent executable on Linux.
//!
//! An agent runs these commands many times a minute, mostly on small inputs, so start-up is
//! much of their cost. A position-independent executable has every pointer in its read-only
//! tables (clap's definitions, vtables, string tables) relocated by the loader at each
//! start, and the pages they sit on copied on write. Linked at a fixed address there is
//! nothing to relocate (what it saves: `bench/README.md`, aoi-coreutils, "`cat` start-up"). Shared libraries and the stack are still randomised; the binary's own code is
//! not. Set `AOI_COREUTILS_PIE=1` to build a position-independent executable instead.

fn main() {
    println!("cargo:rerun-if-env-changed=AOI_COREUTILS_PIE");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux");
    if linux && std::env::var_os("AOI_COREUTILS_PIE").is_none() {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
