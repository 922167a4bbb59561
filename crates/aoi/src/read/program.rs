//! Finding the program a consumer is about to run (`aoi verify -- CMD`, `aoi lint`, `aoi mcp`).

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

fn runnable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where `program` runs from, or `None` when it is not an executable file.
///
/// A name with a `/` is a path: it is made absolute, so that a child's working directory does
/// not change what runs, but not canonical, so that a tool that dispatches on the name it was
/// called by (busybox-style, through a symlink) keeps that name. A bare name is looked up on
/// `PATH`, the first executable file winning, as a shell would.
///
/// ```
/// let sh = aoi::read::locate_program("sh".as_ref()).unwrap();
/// assert!(sh.is_absolute());
/// assert!(aoi::read::locate_program("no-such-program-anywhere".as_ref()).is_none());
/// ```
pub fn locate_program(program: &OsStr) -> Option<PathBuf> {
    if program.as_encoded_bytes().contains(&b'/') {
        let path = Path::new(program);
        return runnable(path).then(|| std::path::absolute(path).unwrap_or_else(|_| path.into()));
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(program))
        .find(|candidate| runnable(candidate))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_made_absolute_and_a_directory_is_not_a_program() {
        let found = locate_program(OsStr::new("/bin/sh")).unwrap();
        assert_eq!(found, Path::new("/bin/sh"));
        assert!(locate_program(OsStr::new("/tmp")).is_none());
        assert!(locate_program(OsStr::new("./no-such-file")).is_none());
    }
}
