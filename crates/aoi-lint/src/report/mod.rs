//! The formats a [`Report`] is written in: a matrix for people, SARIF for code-scanning
//! dashboards, JUnit XML for CI test views, and an SVG badge for a README.
//!
//! Every format is a pure function of the report, so the same run can be written in several
//! at once. Everything in a report that came from the linted tool (command names, details,
//! excerpts, argv) is untrusted: each format escapes it for its own medium, and the human
//! format never lets it reach a terminal as a control sequence.

use crate::model::{CheckOutcome, CheckResult, Evidence, Report};

mod badge;
mod human;
mod junit;
mod sarif;

pub use badge::badge;
pub use human::human;
pub use junit::junit;
pub use sarif::sarif;

/// How a command is named in a report: the command itself, or a placeholder for the `""` of a
/// single invocation or a transcript.
fn command_label(command: &str) -> &str {
    if command.is_empty() {
        "(invocation)"
    } else {
        command
    }
}

/// The rows of a report: `report.commands` in order, then any command that has results but
/// is not listed (so a result is never silently dropped).
fn report_rows(report: &Report) -> Vec<&str> {
    let mut rows: Vec<&str> = Vec::with_capacity(report.commands.len());
    for command in report
        .commands
        .iter()
        .map(String::as_str)
        .chain(report.results.iter().map(|r| r.command.as_str()))
    {
        if !rows.contains(&command) {
            rows.push(command);
        }
    }
    rows
}

/// The results for one command, in check order.
fn results_of<'r>(report: &'r Report, command: &str) -> Vec<&'r CheckResult> {
    let mut results: Vec<&CheckResult> = report
        .results
        .iter()
        .filter(|r| r.command == command)
        .collect();
    results.sort_by_key(|r| r.check);
    results
}

/// The verb a person reads for an outcome.
fn outcome_words(outcome: CheckOutcome) -> &'static str {
    match outcome {
        CheckOutcome::Pass => "pass",
        CheckOutcome::Fail => "fail",
        CheckOutcome::NotApplicable => "not applicable",
        CheckOutcome::CouldNotRun => "could not run",
    }
}

/// Joins an argv the way a POSIX shell would read it back: safe words bare, others in single
/// quotes, and words holding control characters in bash's `$'…'` so none is written raw.
fn shell_join(argv: &[String]) -> String {
    argv.iter()
        .map(|arg| shell_quote(arg))
        .collect::<Vec<_>>()
        .join(" ")
}

fn shell_quote(arg: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    if !arg.is_empty() && arg.chars().all(safe) {
        return arg.to_owned();
    }
    if arg.chars().any(char::is_control) {
        let mut out = String::from("$'");
        for c in arg.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\'' => out.push_str("\\'"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if c.is_control() => {
                    let n = u32::from(c);
                    if n <= 0xff {
                        out.push_str(&format!("\\x{n:02x}"));
                    } else {
                        out.push_str(&format!("\\u{n:04x}"));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('\'');
        return out;
    }
    format!("'{}'", arg.replace('\'', r"'\''"))
}

/// Evidence as plain lines of text, one fact per line: the command line, the stdout line and
/// excerpt, the verifier finding. Control characters are left to the caller to escape.
fn evidence_lines(evidence: &Evidence) -> Vec<String> {
    let mut lines = Vec::new();
    if !evidence.invocation.is_empty() {
        lines.push(format!("$ {}", shell_join(&evidence.invocation)));
    }
    match (evidence.line, &evidence.excerpt) {
        (Some(line), Some(excerpt)) => lines.push(format!("line {line}: {excerpt}")),
        (Some(line), None) => lines.push(format!("line {line}")),
        (None, Some(excerpt)) => lines.push(format!("excerpt: {excerpt}")),
        (None, None) => {}
    }
    if let Some(finding) = &evidence.finding {
        lines.push(format!("finding: {finding}"));
    }
    lines
}

/// `text` escaped for XML 1.0 character data or, when `attribute`, a double- or
/// single-quoted attribute value.
///
/// `&`, `<` and `>` become entity references, and both quotes too in attributes; in attributes, tab, newline and
/// carriage return become character references so attribute-value normalisation does not turn
/// them into spaces, and a carriage return in text becomes one so line-end normalisation
/// keeps it. Characters XML 1.0 forbids even as references (C0 controls other than tab,
/// newline and carriage return; U+FFFE; U+FFFF) are written visibly as `\u{…}`, so the
/// document stays well-formed and the reader still sees that something was there.
fn xml_escape(text: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if attribute => out.push_str("&quot;"),
            '\'' if attribute => out.push_str("&apos;"),
            '\r' => out.push_str("&#13;"),
            '\t' if attribute => out.push_str("&#9;"),
            '\n' if attribute => out.push_str("&#10;"),
            '\t' | '\n' => out.push(c),
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::Duration;

    use super::*;
    use crate::model::CheckId;

    /// A report with every outcome, two evidences, a listed command with no results, a result
    /// for an unlisted command, and untrusted text with quotes, markup, control characters and
    /// wide characters.
    pub(crate) fn sample_report() -> Report {
        let id = |n| CheckId::new(n).unwrap();
        let mut results = Vec::new();
        for command in ["search", "delete", "auth login"] {
            for check in CheckId::all() {
                let outcome = match (command, check.number()) {
                    ("delete", 6) => CheckOutcome::Fail,
                    ("delete", 7) => CheckOutcome::CouldNotRun,
                    ("search", 6..=8) => CheckOutcome::NotApplicable,
                    ("auth login", 15) => CheckOutcome::Fail,
                    (_, 16) => CheckOutcome::NotApplicable,
                    _ => CheckOutcome::Pass,
                };
                results.push(CheckResult::new(check, command, outcome, "ok"));
            }
        }
        results[16 + 5] = CheckResult::new(
            id(6),
            "delete",
            CheckOutcome::Fail,
            "deleted «doc_1» without --yes <&\"'> \u{1b}[31mred\u{7}",
        )
        .evidence(Evidence {
            invocation: vec![
                "outline".into(),
                "delete".into(),
                "doc 1".into(),
                "it's".into(),
                "\u{1b}[2J".into(),
            ],
            line: Some(3),
            excerpt: Some("{\"type\":\"deleted\",\"id\":\"文書<&\\\">\u{1}\"}".into()),
            finding: None,
        })
        .evidence(Evidence {
            invocation: vec!["outline".into(), "list".into()],
            line: None,
            excerpt: None,
            finding: Some("seq_gap".into()),
        });
        results[16 + 6] = CheckResult::new(
            id(7),
            "delete",
            CheckOutcome::CouldNotRun,
            "needs an id discovery does not give",
        );
        results.push(CheckResult::new(
            id(2),
            "",
            CheckOutcome::Fail,
            "ANSI on stdout: \u{1b}[1m\u{0}",
        ));
        Report {
            tool: "outline ☃".into(),
            tool_version: Some("1.8.2".into()),
            commands: vec![
                "search".into(),
                "delete".into(),
                "auth login".into(),
                "検索".into(),
            ],
            results,
            processes: 57,
            escaped: 0,
            elapsed: Duration::from_millis(3_250),
            network_isolated: false,
            network_note: Some("unshare(CLONE_NEWNET) not permitted".into()),
            artifact: Some("tools/outline".into()),
            invocation: vec![
                "aoi".into(),
                "lint".into(),
                "--tool".into(),
                "outline".into(),
            ],
        }
    }

    /// A report where every check passes or does not apply.
    pub(crate) fn all_pass_report() -> Report {
        let results = CheckId::all()
            .map(|c| CheckResult::new(c, "search", CheckOutcome::Pass, "ok"))
            .collect();
        Report {
            tool: "outline".into(),
            commands: vec!["search".into()],
            results,
            network_isolated: true,
            ..Report::default()
        }
    }

    #[test]
    fn shell_join_reads_back_as_the_same_argv() {
        let argv: Vec<String> = ["a", "b c", "it's", "", "x\u{1b}y", "ok=1,2"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(shell_join(&argv), r"a 'b c' 'it'\''s' '' $'x\x1by' ok=1,2");
    }

    #[test]
    fn xml_escape_leaves_nothing_xml_forbids() {
        let raw = "a<b>&\"c'\u{1}\u{1b}\t\n\r\u{fffe}é";
        assert_eq!(
            xml_escape(raw, false),
            "a&lt;b&gt;&amp;\"c'\\u{1}\\u{1b}\t\n&#13;\\u{fffe}é"
        );
        assert_eq!(
            xml_escape(raw, true),
            "a&lt;b&gt;&amp;&quot;c&apos;\\u{1}\\u{1b}&#9;&#10;&#13;\\u{fffe}é"
        );
    }

    #[test]
    fn rows_keep_capabilities_order_and_add_unlisted_commands() {
        let report = sample_report();
        assert_eq!(
            report_rows(&report),
            ["search", "delete", "auth login", "検索", ""]
        );
    }
}
