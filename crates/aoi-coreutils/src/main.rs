//! `aoi-coreutils`: see the library's documentation.

fn main() -> std::process::ExitCode {
    aoi_coreutils::app::main()
}
