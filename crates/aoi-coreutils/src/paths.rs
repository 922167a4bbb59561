//! Paths as text and their errors: a name that is not UTF-8, an I/O error as an item-scope
//! `aoi:error` of the category its kind has (§9.1), and the words a person reads for one.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use aoi::{Category, Code, ErrorEvent};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

/// A path as JSON text; a path that is not UTF-8 is an item error `NAME_NOT_UTF8`
/// (`unsupported`: no JSON string can name it) carrying its bytes as base64 in `details`.
pub fn path_text(path: &Path) -> Result<String, ErrorEvent> {
    match path.to_str() {
        Some(text) => Ok(text.to_owned()),
        None => Err(not_utf8(path)),
    }
}

/// The `NAME_NOT_UTF8` error for `path`.
pub fn not_utf8(path: &Path) -> ErrorEvent {
    let bytes = path.as_os_str().as_bytes();
    ErrorEvent::new(
        Category::Unsupported,
        Code::from_static("NAME_NOT_UTF8"),
        format!(
            "{} is not UTF-8, so no JSON string can name it",
            display(path)
        ),
    )
    .item()
    .target(String::from_utf8_lossy(bytes).into_owned())
    .detail("path_base64", STANDARD.encode(bytes))
}

/// `path` for a message: lossy UTF-8, quoted with its controls escaped.
pub fn display(path: &Path) -> String {
    format!("{:?}", String::from_utf8_lossy(path.as_os_str().as_bytes()))
}

/// The item-scope error for an I/O failure on `path`: `not_found` for a missing file,
/// `authz` for a permission refused, `io` for a symlink loop and the rest (§9.2).
pub fn io_error(path: &Path, error: &io::Error) -> ErrorEvent {
    let (category, code) = match error.kind() {
        io::ErrorKind::NotFound => (Category::NotFound, "NOT_FOUND"),
        io::ErrorKind::PermissionDenied => (Category::Authz, "PERMISSION_DENIED"),
        _ if error.raw_os_error() == Some(libc_eloop()) => (Category::Io, "SYMLINK_LOOP"),
        io::ErrorKind::NotADirectory => (Category::Validation, "NOT_A_DIRECTORY"),
        io::ErrorKind::IsADirectory => (Category::Validation, "IS_A_DIRECTORY"),
        _ => (Category::Io, "IO_ERROR"),
    };
    ErrorEvent::new(
        category,
        Code::from_static(code),
        format!("{}: {}", display(path), plain_io(error)),
    )
    .item()
    .target(String::from_utf8_lossy(path.as_os_str().as_bytes()).into_owned())
}

/// ELOOP on Linux and the BSDs alike (40 on Linux, 62 on the BSDs and macOS).
fn libc_eloop() -> i32 {
    if cfg!(target_os = "linux") {
        40
    } else {
        62
    }
}

/// An I/O error's text without Rust's ` (os error N)` suffix.
pub fn plain_io(error: &io::Error) -> String {
    let text = error.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// A position key for a path: its bytes, base64, so a name that is not UTF-8 keeps its place.
pub fn path_key(path: &OsStr) -> String {
    STANDARD.encode(path.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_get_the_category_of_their_kind() {
        let p = Path::new("/x");
        let nf = io_error(p, &io::Error::from_raw_os_error(2));
        assert_eq!(
            (nf.category, nf.code.as_str()),
            (Category::NotFound, "NOT_FOUND")
        );
        let pd = io_error(p, &io::Error::from_raw_os_error(13));
        assert_eq!(
            (pd.category, pd.code.as_str()),
            (Category::Authz, "PERMISSION_DENIED")
        );
        let lp = io_error(p, &io::Error::from_raw_os_error(40));
        assert_eq!(lp.code.as_str(), "SYMLINK_LOOP");
        assert_eq!(nf.message, "\"/x\": No such file or directory");
    }

    #[test]
    fn a_name_that_is_not_utf8_is_an_unsupported_item_error_with_its_bytes() {
        let p = Path::new(OsStr::from_bytes(b"a\xffb"));
        let e = path_text(p).unwrap_err();
        assert_eq!(e.code.as_str(), "NAME_NOT_UTF8");
        assert_eq!(e.details.as_ref().unwrap()["path_base64"], "Yf9i");
    }
}
