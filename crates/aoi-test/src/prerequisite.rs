//! What a test does when the machine lacks something it needs (a C compiler for the fault
//! shim, `/dev/full`, a second file system, a way to run as another user).
//!
//! Locally it says so on one line and the test returns: a developer's machine may lack a
//! tool, and a test that cannot run is no reason to stop the others. Under CI (`CI=true`, or
//! `AOI_TEST_REQUIRE_ALL=1` anywhere) it fails the test with the same line, because `.ci/run`
//! installs every prerequisite and a green run must mean that every test ran.

use std::io::Write;

/// True when a missing prerequisite must fail the test (`CI=true` or `AOI_TEST_REQUIRE_ALL=1`).
pub fn required() -> bool {
    let set = |name: &str, want: &[&str]| {
        std::env::var(name).is_ok_and(|v| want.contains(&v.to_ascii_lowercase().as_str()))
    };
    set("CI", &["true", "1"]) || set("AOI_TEST_REQUIRE_ALL", &["1", "true"])
}

/// Says that `test` cannot run because `prerequisite` is missing: a failure under CI, one line
/// on stderr elsewhere (the caller then returns).
///
/// # Panics
/// Under CI, always: that is how the test fails.
pub fn missing(test: &str, prerequisite: &str) {
    assert!(
        !required(),
        "{test}: a prerequisite is missing: {prerequisite} (CI installs every prerequisite; \
         unset CI and AOI_TEST_REQUIRE_ALL to skip it locally)"
    );
    // Straight to stderr, not through `eprintln!`, which the test harness captures and shows
    // only for a failed test.
    let _ = writeln!(
        std::io::stderr(),
        "skipped {test}: a prerequisite is missing: {prerequisite}"
    );
}
