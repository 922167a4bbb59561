//! Human mode is GNU: invoked without `--output jsonl` (or `json`), an applet that uutils
//! implements runs uutils' implementation, so `ls -lh`, `du -sh`, `cat -n`, `rm -rf build` and
//! `find . -name '*.rs' -type f` mean what they mean to GNU: its syntax, combined short flags,
//! `--` and `-`, output, exit statuses and messages (`cat: x: No such file or directory`),
//! unbounded. uutils measures each of these against GNU's own test suite; `.ci/busybox.sh`
//! measures them here against BusyBox's. `grep` has no uutils implementation: its GNU human
//! mode is this crate's own ([`crate::grep::gnu`]). Machine mode (`--output jsonl`) is the
//! crate's own parsers and events.
//!
//! One deliberate difference: on a terminal, what an applet writes to stdout is shown through
//! the SDK's escaper ([`printable_text`]: escape sequences, bells, carriage returns and bidi
//! controls shown as `\u{1b}`, never obeyed; line breaks and tabs kept), even where GNU would
//! write the bytes raw (`cat` of a file holding an escape sequence). A pipe or a file gets GNU's
//! bytes unchanged.

use std::ffi::OsString;
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use aoi::surface::term::printable_text;

use crate::{du, ls, read, write};

/// The applets whose human mode is uutils'. `wc` and `stat` are not: this crate's own do as
/// GNU does where uutils 0.12 does not (`wc`: a word holding a control character, the columns
/// of `wc < file`; `stat`: a symbolic link's `File:` line, which uutils quotes), as
/// tests/it/wc.rs and tests/it/stat.rs measure against GNU's tools.
pub const APPLETS: [&str; 11] = [
    read::CAT,
    read::HEAD,
    read::TAIL,
    ls::NAME,
    crate::find::NAME,
    write::cp::NAME,
    write::mv::NAME,
    write::rm::NAME,
    write::mkdir::NAME,
    write::touch::NAME,
    du::NAME,
];

/// Runs `args` (`aoi-coreutils APPLET ...`, as [`dispatch_args`](crate::app::dispatch_args)
/// leaves them) as GNU does when it asks for human mode and names an applet of [`APPLETS`];
/// or is `grep`; `None` otherwise (machine mode, discovery), for the crate's own parser.
pub fn run(args: &[OsString]) -> Option<ExitCode> {
    let applet = args.get(1)?.to_str()?;
    if aoi::app::machine_requested(args) {
        return None;
    }
    if applet == crate::grep::NAME {
        return Some(grep(args));
    }
    if !APPLETS.contains(&applet) {
        return None;
    }
    let argv = without_output_human(&args[1..]);
    // uucore names the utility in its messages from the process's own arguments: the first
    // when called by the applet's name (a link named `ls`), else the second.
    let called = std::env::args_os()
        .next()
        .and_then(|a| Path::new(&a).file_name().map(|n| n.to_owned()));
    if called.as_deref() != Some(applet.as_ref()) {
        uucore::set_utility_is_second_arg();
    }
    // A reader that goes away ends the run as it ends GNU's: by SIGPIPE (exit 141 to a shell).
    let _ = uucore::signals::enable_pipe_errors();
    uucore::panic::mute_sigpipe_panic();
    // The applet's messages and help, from the strings uucore embeds.
    let _ = uucore::locale::setup_localization(applet);
    let code = on_terminal_escaped(|| uutils(applet, argv));
    Some(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

/// `words` without `--output human`, which asks for what is done anyway and which GNU's parsers
/// do not know; nothing after `--` is touched.
fn without_output_human(words: &[OsString]) -> Vec<OsString> {
    let mut argv: Vec<OsString> = Vec::with_capacity(words.len());
    let mut words = words.iter();
    while let Some(word) = words.next() {
        if word == "--" {
            argv.push(word.clone());
            argv.extend(words.by_ref().cloned());
            break;
        }
        if word == "--output=human" {
            continue;
        }
        if word == "--output" && words.as_slice().first().is_some_and(|v| v == "human") {
            words.next();
            continue;
        }
        argv.push(word.clone());
    }
    argv
}

/// GNU grep, which uutils does not have: this crate's own ([`crate::grep::gnu`]).
fn grep(args: &[OsString]) -> ExitCode {
    let _ = uucore::signals::enable_pipe_errors();
    crate::grep::gnu::main(without_output_human(&args[1..]))
}

/// Runs `applet` on `argv` (the applet's name first), its exit status.
fn uutils(applet: &str, argv: Vec<OsString>) -> i32 {
    let argv = argv.into_iter();
    match applet {
        read::CAT => uu_cat::uumain(argv),
        read::HEAD => uu_head::uumain(argv),
        read::TAIL => uu_tail::uumain(argv),
        ls::NAME => uu_ls::uumain(argv),
        write::cp::NAME => uu_cp::uumain(argv),
        write::mv::NAME => uu_mv::uumain(argv),
        write::rm::NAME => uu_rm::uumain(argv),
        write::mkdir::NAME => uu_mkdir::uumain(argv),
        write::touch::NAME => uu_touch::uumain(argv),
        du::NAME => uu_du::uumain(argv),
        _ => find(argv.collect()),
    }
}

/// Runs `body` with stdout, when it is a terminal, through a pipe whose other end shows what
/// arrives escaped, a line at a time (see the module docs); `body` as it is otherwise.
fn on_terminal_escaped(body: impl FnOnce() -> i32) -> i32 {
    if !std::io::stdout().is_terminal() {
        return body();
    }
    let guarded = (|| -> std::io::Result<_> {
        let terminal = rustix::io::dup(rustix::stdio::stdout())?;
        let (reader, writer) = rustix::pipe::pipe()?;
        rustix::stdio::dup2_stdout(&writer)?;
        drop(writer);
        let shower = std::thread::spawn(move || show_escaped(reader, terminal));
        Ok(shower)
    })();
    let Ok(shower) = guarded else {
        // No pipe to be had: the applet writes nothing to this terminal rather than raw bytes.
        let _ = writeln!(
            std::io::stderr(),
            "aoi-coreutils: cannot guard the terminal; pipe the output instead"
        );
        return 1;
    };
    let code = body();
    let _ = std::io::stdout().flush();
    // /dev/null on fd 1 closes the pipe's last writer: the shower sees the end, and shows the
    // rest before the process exits.
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        let _ = rustix::stdio::dup2_stdout(&null);
    }
    let _ = shower.join();
    code
}

/// Copies `reader` to `terminal` a line at a time, escaped.
fn show_escaped(reader: rustix::fd::OwnedFd, terminal: rustix::fd::OwnedFd) {
    let mut reader = std::io::BufReader::new(std::fs::File::from(reader));
    let mut terminal = std::fs::File::from(terminal);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                if terminal
                    .write_all(printable_text(&text).as_bytes())
                    .is_err()
                {
                    return;
                }
            }
        }
    }
}

/// GNU find (uutils findutils), whose arguments are text: a name that is not UTF-8 is refused
/// with GNU's exit status for a bad argument rather than searched for under another name.
fn find(argv: Vec<OsString>) -> i32 {
    let mut words: Vec<String> = Vec::with_capacity(argv.len());
    for word in argv {
        match word.into_string() {
            Ok(word) => words.push(word),
            Err(word) => {
                let shown =
                    aoi::surface::term::printable_line(&word.to_string_lossy()).into_owned();
                let _ = writeln!(
                    std::io::stderr(),
                    "find: {shown}: an argument that is not UTF-8 is not supported"
                );
                return 1;
            }
        }
    }
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    findutils::find::find_main(&words, &findutils::find::StandardDependencies::new())
}
