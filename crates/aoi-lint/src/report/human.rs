//! The report for a person at a terminal: a (command × check) matrix to see the shape at a
//! glance, then one block per failure with what to re-run and what to look at.

use std::fmt::Write as _;

use super::{command_label, evidence_lines, outcome_words, report_rows, results_of};
use crate::model::{CheckId, CheckOutcome, CheckResult, Report};

// SGR codes, painted by the SDK's one painter (`aoi::surface::color::Paint`).
const GREEN: &str = "32";
const RED: &str = "31";
const DIM: &str = "2";
const YELLOW: &str = "33";
const BOLD: &str = "1";
const CYAN: &str = "36";

/// Writes `report` as a matrix, failure blocks, a legend and a summary.
///
/// The matrix has one row per command (in `report.commands` order, then any command that
/// has results but is not listed) and one column per check 1–16: `✓` pass, `✗` fail, `·` not
/// applicable, `?` could not run, blank when lint has no result for the pair. Below it, every
/// fail and could-not-run gets a block: the check, its command and the detail, what the check
/// requires and where the spec says so, then each piece of evidence: the command line to
/// re-run (shell-quoted), the stdout line and excerpt, the verifier finding. Colour (ANSI
/// SGR) is used only when `color` is true. Text from the linted tool is shown with its
/// control characters escaped, so it can never drive the terminal.
pub fn human(report: &Report, color: bool) -> String {
    let painter = aoi::surface::color::Paint::new(color);
    let paint = |style: &str, text: &str| painter.sgr(style, text);
    let mut out = String::new();

    let mut heading = format!("aoi-lint · {}", printable(&report.tool));
    if let Some(version) = &report.tool_version {
        let _ = write!(heading, " {}", printable(version));
    }
    let rows = report_rows(report);
    let _ = writeln!(
        out,
        "{}",
        paint(
            BOLD,
            &format!(
                "{heading} · {} command{} × 16 checks",
                rows.len(),
                plural(rows.len())
            )
        )
    );
    out.push('\n');

    // The matrix: a name column padded to the widest name, then one column per check, each
    // as wide as its number (right-aligned under it).
    let names: Vec<String> = rows.iter().map(|c| printable(command_label(c))).collect();
    let name_width = names.iter().map(|n| display_width(n)).max().unwrap_or(0);
    let mut header = " ".repeat(name_width);
    for check in CheckId::all() {
        let _ = write!(header, " {check}");
    }
    let _ = writeln!(out, "{}", paint(DIM, &header));
    for (command, name) in rows.iter().zip(&names) {
        let mut line = pad(name, name_width);
        let results = results_of(report, command);
        for check in CheckId::all() {
            let outcome = results
                .iter()
                .filter(|r| r.check == check)
                .map(|r| r.outcome)
                .max_by_key(|o| severity(*o));
            let (symbol, style) = match outcome {
                Some(o) => (symbol(o), style(o)),
                None => (" ", ""),
            };
            let column = check.to_string().len();
            line.push(' ');
            line.push_str(&" ".repeat(column - 1));
            line.push_str(&if style.is_empty() {
                symbol.to_owned()
            } else {
                paint(style, symbol)
            });
        }
        let _ = writeln!(out, "{line}");
    }

    // The failures, then what could not run, each in row order: what to act on first.
    let mut to_act_on: Vec<&CheckResult> = Vec::new();
    for wanted in [CheckOutcome::Fail, CheckOutcome::CouldNotRun] {
        for command in &rows {
            to_act_on.extend(
                results_of(report, command)
                    .into_iter()
                    .filter(|r| r.outcome == wanted),
            );
        }
    }
    for result in to_act_on {
        let info = result.check.info();
        out.push('\n');
        let _ = writeln!(
            out,
            "{} {} {} · {}: {}",
            paint(style(result.outcome), symbol(result.outcome)),
            paint(BOLD, &result.check.to_string()),
            paint(BOLD, info.name),
            printable(command_label(&result.command)),
            printable(&result.detail),
        );
        // What the check asks, and for a failure the sentence of the spec it breaks.
        let mut notes = vec![format!("requires: {} ({})", info.title, info.sections)];
        if result.outcome == CheckOutcome::Fail {
            notes.push(format!("spec §18.2 #{}: \"{}\"", result.check, info.quote));
        }
        for note in notes {
            let _ = writeln!(out, "    {}", paint(DIM, &note));
        }
        for evidence in &result.evidence {
            for (i, line) in evidence_lines(evidence).into_iter().enumerate() {
                let indent = if i == 0 { "    " } else { "      " };
                let _ = writeln!(out, "{indent}{}", printable(&line));
            }
        }
    }

    // Advice: a SHOULD of the spec or the profile's; it fails nothing (unless --strict-profile made
    // it a failure above), so it comes after what does.
    let advice: Vec<_> = report.advice().collect();
    if !advice.is_empty() {
        out.push('\n');
        let _ = writeln!(
            out,
            "{}",
            paint(
                BOLD,
                &format!(
                    "advice ({}): the spec's SHOULDs and this project's profile (docs/discovery.md); fails nothing without --strict-profile",
                    advice.len()
                )
            )
        );
        for (result, advice) in advice {
            let _ = writeln!(
                out,
                "{} {} {} · {}: {}",
                paint(CYAN, "i"),
                paint(BOLD, &result.check.to_string()),
                paint(BOLD, result.check.info().name),
                printable(command_label(&result.command)),
                printable(&advice.detail),
            );
            let _ = writeln!(
                out,
                "    {}",
                paint(DIM, &format!("fix: {}", printable(&advice.fix)))
            );
            for evidence in &advice.evidence {
                for (i, line) in evidence_lines(evidence).into_iter().enumerate() {
                    let indent = if i == 0 { "    " } else { "      " };
                    let _ = writeln!(out, "{indent}{}", printable(&line));
                }
            }
        }
    }

    out.push('\n');
    let legend = [
        CheckOutcome::Pass,
        CheckOutcome::Fail,
        CheckOutcome::NotApplicable,
        CheckOutcome::CouldNotRun,
    ]
    .map(|o| format!("{} {}", paint(style(o), symbol(o)), outcome_words(o)))
    .join("  ");
    let _ = writeln!(out, "{legend}");

    let counts = [
        CheckOutcome::Pass,
        CheckOutcome::Fail,
        CheckOutcome::NotApplicable,
        CheckOutcome::CouldNotRun,
    ]
    .map(|o| format!("{} {}", report.count(o), outcome_words(o)))
    .join(", ");
    let factors = report.factors_passed();
    let factor_list = if factors.is_empty() {
        "none".to_owned()
    } else {
        factors
            .iter()
            .map(|f| f.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        out,
        "{} · factors passed ({}/10): {} · {} process{}{} in {:.1}s",
        paint(if report.passed() { GREEN } else { RED }, &counts),
        factors.len(),
        factor_list,
        report.processes,
        if report.processes == 1 { "" } else { "es" },
        escaped_note(report.escaped),
        report.elapsed.as_secs_f64(),
    );
    let reasons = report.could_not_run_reasons();
    if !reasons.is_empty() {
        let listed: Vec<String> = reasons
            .iter()
            .take(3)
            .map(|(why, n)| format!("{n} × {}", printable(why)))
            .collect();
        let more = if reasons.len() > 3 { "; …" } else { "" };
        let _ = writeln!(
            out,
            "{}",
            paint(
                YELLOW,
                &format!(
                    "not proven: {} check(s) could not run ({}{more}); exit 2 unless --allow-incomplete",
                    report.count(CheckOutcome::CouldNotRun),
                    listed.join("; ")
                )
            )
        );
    }
    if !report.network_isolated {
        let why = report
            .network_note
            .as_deref()
            .map(|n| format!(": {}", printable(n)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{}",
            paint(
                YELLOW,
                &format!(
                    "note: the network was not isolated{why}; check 1 could not prove discovery works offline"
                )
            )
        );
    }
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Which outcome a cell shows when lint has several results for one pair: the worst.
fn severity(outcome: CheckOutcome) -> u8 {
    match outcome {
        CheckOutcome::NotApplicable => 0,
        CheckOutcome::Pass => 1,
        CheckOutcome::CouldNotRun => 2,
        CheckOutcome::Fail => 3,
    }
}

fn symbol(outcome: CheckOutcome) -> &'static str {
    match outcome {
        CheckOutcome::Pass => "✓",
        CheckOutcome::Fail => "✗",
        CheckOutcome::NotApplicable => "·",
        CheckOutcome::CouldNotRun => "?",
    }
}

fn style(outcome: CheckOutcome) -> &'static str {
    match outcome {
        CheckOutcome::Pass => GREEN,
        CheckOutcome::Fail => RED,
        CheckOutcome::NotApplicable => DIM,
        CheckOutcome::CouldNotRun => YELLOW,
    }
}

/// `text` on one line with every control character escaped, so it cannot move the cursor,
/// change colours or ring the bell (the SDK's [`aoi::surface::term::printable_line`]).
fn printable(text: &str) -> String {
    aoi::surface::term::printable_line(text).into_owned()
}

/// `text` padded with spaces to `width` terminal columns.
fn pad(text: &str, width: usize) -> String {
    let fill = width.saturating_sub(display_width(text));
    format!("{text}{}", " ".repeat(fill))
}

/// The terminal columns `text` takes, its ANSI SGR sequences (lint's own colours) excluded,
/// as the SDK measures text ([`aoi::surface::term::width`]).
pub(super) fn display_width(text: &str) -> usize {
    let mut plain = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        plain.push(c);
    }
    aoi::surface::term::width(&plain)
}

/// `" (N left running outside their process group, killed by lint)"`, or nothing for none.
fn escaped_note(escaped: u64) -> String {
    match escaped {
        0 => String::new(),
        1 => " (1 left running outside its process group, killed by lint)".to_owned(),
        n => format!(" ({n} left running outside their process group, killed by lint)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::{all_pass_report, sample_report};

    /// The matrix is the header line through the last command row.
    fn matrix_lines(text: &str, rows: usize) -> Vec<&str> {
        text.lines().skip(2).take(rows + 1).collect()
    }

    #[test]
    fn every_matrix_row_has_the_same_display_width() {
        let report = sample_report();
        for color in [false, true] {
            let text = human(&report, color);
            let lines = matrix_lines(&text, 5);
            let widths: Vec<usize> = lines.iter().map(|l| display_width(l)).collect();
            assert!(
                widths.iter().all(|w| *w == widths[0]),
                "color={color} widths {widths:?}:\n{text}"
            );
            // The name column is as wide as the widest name, `(invocation)`, and the 16
            // columns take 1 + 2 each for 1–9 and 1 + 2 for 10–16.
            assert_eq!(widths[0], "(invocation)".len() + 9 * 2 + 7 * 3, "{text}");
        }
    }

    #[test]
    fn cells_show_each_outcome_under_its_check() {
        let text = human(&sample_report(), false);
        let lines = matrix_lines(&text, 5);
        assert!(lines[0].trim_start().starts_with("1 2 3"), "{text}");
        let delete = lines[2];
        assert!(delete.starts_with("delete "));
        let cells: Vec<&str> = delete["delete".len()..].split_whitespace().collect();
        assert_eq!(cells.len(), 16, "{delete}");
        assert_eq!(cells[5], "✗");
        assert_eq!(cells[6], "?");
        assert_eq!(cells[15], "·");
        assert_eq!(cells[0], "✓");
        // `検索` is listed but has no results: a row of blanks.
        assert_eq!(lines[4].trim(), "検索");
    }

    #[test]
    fn a_failure_block_says_what_failed_where_and_how_to_reproduce_it() {
        let text = human(&sample_report(), false);
        let block: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("✗ 6 confirmation · delete: "))
            .take(7)
            .collect();
        assert_eq!(
            block[0],
            "✗ 6 confirmation · delete: deleted «doc_1» without --yes <&\"'> \\u{1b}[31mred\\u{7}"
        );
        assert!(block[1].starts_with("    requires: destructive commands refuse"));
        assert!(block[1].ends_with("(§14.2, §14.3)"));
        // The sentence of the spec it breaks, word for word.
        assert_eq!(
            block[2],
            "    spec §18.2 #6: \"Destructive commands refuse to run without confirmation. Dry\u{2011}run emits `aoi:plan` events and performs no side effects when advertised.\""
        );
        assert_eq!(
            block[3],
            r"    $ outline delete 'doc 1' 'it'\''s' $'\x1b[2J'"
        );
        assert!(block[4].starts_with("      line 3: {\"type\":\"deleted\""));
        assert!(block[4].contains("文書<&\\\">\\u{1}"), "{}", block[4]);
        assert_eq!(block[5], "    $ outline list");
        assert_eq!(block[6], "      finding: seq_gap");
        assert!(text.contains("? 7 idempotency · delete: needs an id"));
        assert!(text.contains("✗ 2 jsonl · (invocation): ANSI on stdout: \\u{1b}[1m\\u{0}"));
        // Failures come before what could not run.
        assert!(text.find("✗ 15 sequence").unwrap() < text.find("? 7 idempotency").unwrap());
    }

    #[test]
    fn no_control_character_from_the_tool_reaches_the_terminal() {
        let report = sample_report();
        let plain = human(&report, false);
        assert!(
            !plain.chars().any(|c| c.is_control() && c != '\n'),
            "{plain}"
        );
        let colored = human(&report, true);
        let stripped: String = colored.replace('\x1b', "");
        assert!(!stripped.chars().any(|c| c.is_control() && c != '\n'));
        // Colour is only the SGR sequences lint writes.
        assert!(colored.contains("\x1b[31m✗\x1b[0m"));
        assert!(colored.contains("\x1b[32m✓\x1b[0m"));
        assert!(colored.contains("\x1b[2m·\x1b[0m"));
        assert!(colored.contains("\x1b[33m?\x1b[0m"));
    }

    #[test]
    fn the_summary_counts_outcomes_factors_processes_and_time() {
        let report = sample_report();
        let text = human(&report, false);
        let expected_counts = format!(
            "{} pass, {} fail, {} not applicable, {} could not run",
            report.count(CheckOutcome::Pass),
            report.count(CheckOutcome::Fail),
            report.count(CheckOutcome::NotApplicable),
            report.count(CheckOutcome::CouldNotRun),
        );
        let summary = text
            .lines()
            .find(|l| l.starts_with(&expected_counts))
            .unwrap_or_else(|| panic!("no summary line in\n{text}"));
        assert!(summary.contains("· 57 processes in 3.2s"), "{summary}");
        let left = Report {
            escaped: 2,
            ..sample_report()
        };
        assert!(
            human(&left, false).contains(
                "· 57 processes (2 left running outside their process group, killed by lint) in 3.2s"
            ),
            "{}",
            human(&left, false)
        );
        let factors = report.factors_passed();
        let names: Vec<&str> = factors.iter().map(|f| f.name()).collect();
        assert!(summary.contains(&format!(
            "factors passed ({}/10): {}",
            factors.len(),
            names.join(", ")
        )));
        assert!(text.contains("✓ pass  ✗ fail  · not applicable  ? could not run"));
        assert!(text
            .contains("note: the network was not isolated: unshare(CLONE_NEWNET) not permitted"));
        assert!(text
            .lines()
            .next()
            .unwrap()
            .starts_with("aoi-lint · outline ☃ 1.8.2"));

        let clean = human(&all_pass_report(), false);
        assert!(!clean.contains("note:"));
        assert!(
            !clean.contains("requires:"),
            "no blocks when nothing failed"
        );
        assert!(clean.contains("16 pass, 0 fail"));
        assert!(clean.contains("factors passed (10/10): Typed, Discoverable"));
        assert!(clean.contains("0 processes in 0.0s"));
    }

    #[test]
    fn display_width_counts_columns() {
        assert_eq!(display_width("abc"), 3);
        assert_eq!(display_width("検索"), 4);
        assert_eq!(display_width("e\u{301}"), 1);
        assert_eq!(display_width("\x1b[31m✗\x1b[0m"), 1);
    }
}
