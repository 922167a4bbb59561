//! `stat`: the fields GNU `stat` reports, its default format, `-L`, and an operand that
//! cannot be described (§9.1).

use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::{bin, machine, of_type, run, summary, Scratch};

/// GNU `stat -c FORMAT` of `file` in `dir`.
fn gnu(dir: &Path, flags: &[&str], format: &str, file: &str) -> String {
    let out = Command::new("stat")
        .args(flags)
        .args(["-c", format, file])
        .current_dir(dir)
        .env("LC_ALL", "C")
        .env("TZ", "UTC")
        .output()
        .expect("GNU stat runs");
    assert!(out.status.success(), "stat {file}");
    String::from_utf8(out.stdout).unwrap().trim_end().to_owned()
}

/// The fields `%s %b %h %a %u %g %i %d %o` of an entry.
fn fields(e: &Value) -> String {
    format!(
        "{} {} {} {:o} {} {} {} {} {}",
        e["size"],
        e["disk_bytes"].as_u64().unwrap() / 512,
        e["nlink"],
        u32::from_str_radix(e["mode"].as_str().unwrap(), 8).unwrap(),
        e["uid"],
        e["gid"],
        e["inode"],
        e["device"],
        e["io_block"],
    )
}

#[test]
fn fields_are_those_gnu_stat_reports() {
    let s = Scratch::new("stat-fields");
    s.file("a.txt", b"hello\n");
    s.file("b c", &vec![b'x'; 10_000]);
    s.file("dir/inner", b"");
    std::fs::hard_link(s.path("a.txt"), s.path("hard")).unwrap();
    symlink("a.txt", s.path("ln")).unwrap();
    std::fs::set_permissions(
        s.path("b c"),
        std::os::unix::fs::PermissionsExt::from_mode(0o4751),
    )
    .unwrap();
    let files = ["a.txt", "b c", "dir", "hard", "ln", "/dev/null"];
    let (code, events) = machine(&s.0, &[&["stat"][..], &files].concat());
    assert_eq!(code, 0);
    let entries = of_type(&events, "entry");
    assert_eq!(entries.len(), files.len());
    for (file, e) in files.iter().zip(&entries) {
        assert_eq!(e["path"], *file);
        assert_eq!(
            fields(e),
            gnu(&s.0, &[], "%s %b %h %a %u %g %i %d %o", file),
            "{file}"
        );
        assert_eq!(
            e["modified_ms"].as_i64().unwrap(),
            gnu(&s.0, &[], "%.3Y", file)
                .replace('.', "")
                .parse::<i64>()
                .unwrap(),
            "{file}"
        );
    }
    assert_eq!(entries[4]["kind"], "symlink");
    assert_eq!(entries[4]["target"], "a.txt");
    let null = entries[5];
    assert_eq!(null["kind"], "char_device");
    let (major, minor) = (
        gnu(&s.0, &[], "%Hr", "/dev/null"),
        gnu(&s.0, &[], "%Lr", "/dev/null"),
    );
    let rdev = null["device_type"].as_u64().unwrap();
    assert_eq!(
        (((rdev >> 8) & 0xfff).to_string(), (rdev & 0xff).to_string()),
        (major, minor)
    );
    // -L describes what the link points to.
    let (_, events) = machine(&s.0, &["stat", "-L", "ln"]);
    let e = of_type(&events, "entry")[0];
    assert_eq!(e["kind"], "file");
    assert!(e.get("target").is_none());
    assert_eq!(
        fields(e),
        gnu(&s.0, &["-L"], "%s %b %h %a %u %g %i %d %o", "ln")
    );
}

#[test]
fn human_output_is_the_gnu_default_format() {
    let s = Scratch::new("stat-human");
    s.file("a.txt", b"hello\n");
    s.file("empty", b"");
    s.file("dir/x", b"");
    symlink("a.txt", s.path("ln")).unwrap();
    for args in [
        &["a.txt"][..],
        &["empty", "dir", "ln"],
        &["-L", "ln"],
        &["/dev/null"],
    ] {
        let theirs = || {
            Command::new("stat")
                .args(args)
                .current_dir(&s.0)
                .env("LC_ALL", "C")
                .env("TZ", "UTC")
                .output()
                .unwrap()
        };
        // Reading a link's target the first time sets its access time (relatime); both
        // tools read it, so the first reading happens before either is compared.
        theirs();
        let ours = run(&s.0, &[&["stat"][..], args].concat());
        let theirs = theirs();
        assert_eq!(
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&theirs.stdout),
            "stat {args:?}"
        );
        assert_eq!(ours.status.code(), Some(0));
    }
}

#[test]
fn an_operand_that_cannot_be_described_fails_the_run_and_the_rest_are_described() {
    let s = Scratch::new("stat-missing");
    s.file("here", b"1");
    let (code, events) = machine(&s.0, &["stat", "here", "nope", "here"]);
    assert_ne!(code, 0);
    let errors = of_type(&events, "aoi:error");
    assert_eq!(errors.len(), 1);
    assert_eq!(
        (
            errors[0]["category"].as_str(),
            errors[0]["target"].as_str(),
            errors[0]["scope"].as_str()
        ),
        (Some("not_found"), Some("nope"), Some("item"))
    );
    assert_eq!(of_type(&events, "entry").len(), 2);
    assert_eq!(summary(&events)["ok"], false);
    // Bounded too: a cursor continues with the next operand.
    let (_, events) = machine(&s.0, &["stat", "here", "here", "here", "--limit", "2"]);
    assert_eq!(of_type(&events, "entry").len(), 2);
    let cursor = summary(&events)["next_cursor"].as_str().unwrap().to_owned();
    let (_, events) = machine(
        &s.0,
        &[
            "stat", "here", "here", "here", "--limit", "2", "--cursor", &cursor,
        ],
    );
    assert_eq!(of_type(&events, "entry").len(), 1);
    assert_eq!(summary(&events)["truncated"], false);
}

/// `stat -c`, `--format=`, `--printf` and `-t` print what GNU stat prints, byte for byte, every
/// directive with printf's widths, and times in the zone TZ names.
#[test]
fn formats_and_zones_are_gnu_stats() {
    let s = Scratch::new("stat-format");
    s.file("a.txt", b"hello\n");
    symlink("a.txt", s.path("link")).unwrap();
    let every = "%a|%A|%b|%B|%d|%D|%f|%F|%g|%G|%h|%i|%n|%N|%o|%s|%t|%T|%u|%U|%w|%W|%x|%X|%y|%Y|%z|%Z|%%|%q|%10s|%-6s|%05a|%+d|%.3Y|%.12X";
    let format_eq = format!("--format={every}");
    for (args, tz) in [
        (vec!["-c", every, "a.txt"], "UTC"),
        // A link's access time moves when it is read (as both stats read it): not compared.
        (vec!["-c", "%N|%F|%s|%a|%y|%h|%-8n|", "link"], "UTC"),
        (vec![format_eq.as_str(), "a.txt"], "UTC"),
        (vec!["--printf", "%n\\t%s\\n\\101\\x41\\q", "a.txt"], "UTC"),
        (vec!["-t", "a.txt"], "UTC"),
        (vec!["-L", "-c", "%F %s", "link"], "UTC"),
        (vec!["a.txt"], "Asia/Tokyo"),
        (vec!["-c", "%y", "a.txt"], "America/New_York"),
    ] {
        let run_with = |program: &Path, with: &[&str]| {
            Command::new(program)
                .args(with)
                .args(&args)
                .current_dir(&s.0)
                .env("LC_ALL", "C")
                .env("TZ", tz)
                .output()
                .unwrap()
        };
        let gnu = run_with(Path::new("stat"), &[]);
        let ours = run_with(&bin(), &["stat"]);
        assert!(gnu.status.success(), "{args:?}");
        assert_eq!(
            (ours.status.code(), String::from_utf8_lossy(&ours.stdout)),
            (gnu.status.code(), String::from_utf8_lossy(&gnu.stdout)),
            "{args:?} TZ={tz}"
        );
    }
}
