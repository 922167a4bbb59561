//! Every command's name, written once: the parser names its subcommand with it, the manifest
//! its command, each run its `aoi:meta`, cursors and request hashes their command. A name
//! written anywhere else is a second copy that can drift.

/// `outline create`.
pub const CREATE: &str = "create";
/// `outline get`.
pub const GET: &str = "get";
/// `outline update`.
pub const UPDATE: &str = "update";
/// `outline list`.
pub const LIST: &str = "list";
/// `outline search`.
pub const SEARCH: &str = "search";
/// `outline move`.
pub const MOVE: &str = "move";
/// `outline copy`.
pub const COPY: &str = "copy";
/// `outline delete`.
pub const DELETE: &str = "delete";
/// `outline import`.
pub const IMPORT: &str = "import";
/// `outline export`.
pub const EXPORT: &str = "export";
/// `outline watch`.
pub const WATCH: &str = "watch";
/// `outline status`.
pub const STATUS: &str = "status";
/// `outline doctor`.
pub const DOCTOR: &str = "doctor";
/// `outline sync`.
pub const SYNC: &str = "sync";
/// `outline auth`.
pub const AUTH: &str = "auth";
/// `outline auth login`, as the manifest and `aoi:meta` name it.
pub const AUTH_LOGIN: &str = "auth login";
/// `outline auth logout`.
pub const AUTH_LOGOUT: &str = "auth logout";
/// `outline auth status`.
pub const AUTH_STATUS: &str = "auth status";
/// `outline auth protect`.
pub const AUTH_PROTECT: &str = "auth protect";
/// `outline auth unprotect`.
pub const AUTH_UNPROTECT: &str = "auth unprotect";

/// The last word of a nested command's name: what its parser calls it.
pub const fn leaf(name: &'static str) -> &'static str {
    let bytes = name.as_bytes();
    let mut i = bytes.len();
    while i > 0 {
        if bytes[i - 1] == b' ' {
            let (_, last) = bytes.split_at(i);
            return match std::str::from_utf8(last) {
                Ok(last) => last,
                Err(_) => name,
            };
        }
        i -= 1;
    }
    name
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_nested_name_ends_in_its_parsers_word() {
        assert_eq!(super::leaf(super::AUTH_LOGIN), "login");
        assert_eq!(super::leaf(super::AUTH_UNPROTECT), "unprotect");
        assert_eq!(super::leaf(super::LIST), "list");
    }
}
