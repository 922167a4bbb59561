//! Owner and group names for uids and gids, read once from `/etc/passwd` and `/etc/group`.

use std::collections::HashMap;
use std::path::Path;

/// User and group names by id, read once from `/etc/passwd` and `/etc/group`; an id with no
/// name is written as its number, as `ls -l` does.
#[derive(Debug, Default)]
pub struct Names {
    users: Option<HashMap<u32, String>>,
    groups: Option<HashMap<u32, String>>,
}

impl Names {
    /// The name of user `uid`.
    pub fn user(&mut self, uid: u32) -> String {
        let map = self
            .users
            .get_or_insert_with(|| read_id_file(Path::new("/etc/passwd")));
        map.get(&uid).cloned().unwrap_or_else(|| uid.to_string())
    }

    /// The name of group `gid`.
    pub fn group(&mut self, gid: u32) -> String {
        let map = self
            .groups
            .get_or_insert_with(|| read_id_file(Path::new("/etc/group")));
        map.get(&gid).cloned().unwrap_or_else(|| gid.to_string())
    }
}

/// `name:x:id:...` lines; the first name of an id wins, as getpwuid's does.
fn read_id_file(path: &Path) -> HashMap<u32, String> {
    let mut map = HashMap::new();
    let Ok(text) = std::fs::read_to_string(path) else {
        return map;
    };
    for line in text.lines() {
        let mut fields = line.split(':');
        let (Some(name), Some(_), Some(id)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        if let Ok(id) = id.parse::<u32>() {
            map.entry(id).or_insert_with(|| name.to_owned());
        }
    }
    map
}
