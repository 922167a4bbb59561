//! The report as JUnit XML, the format CI systems (GitLab, Jenkins, GitHub test reporters)
//! show as a test tree: a suite per command, a test case per check.

use std::fmt::Write as _;

use super::{command_label, evidence_lines, outcome_words, report_rows, results_of, xml_escape};
use crate::model::{CheckOutcome, Report};

/// Writes `report` as a JUnit XML document.
///
/// `<testsuites>` carries the totals (`tests`, `failures`, `errors`, `skipped`, `time` in
/// seconds); each command (in report order) is a `<testsuite name=COMMAND>` with its own
/// totals; each result is a `<testcase classname="aoi-lint.COMMAND" name="N name">`. A fail
/// holds `<failure message=DETAIL type=AOI00N>` whose text is the detail, what the check
/// requires and each piece of evidence; could not run is an `<error message=DETAIL
/// type="could_not_run">`: the check did not pass, and CI must not show it as skipped; not
/// applicable is `<skipped message=…/>`. Everything from the linted
/// tool is escaped, including control characters XML 1.0 cannot carry (see `xml_escape`).
pub fn junit(report: &Report) -> String {
    let attr = |text: &str| xml_escape(text, true);
    let is_skipped = |outcome: CheckOutcome| outcome == CheckOutcome::NotApplicable;
    let is_error = |outcome: CheckOutcome| outcome == CheckOutcome::CouldNotRun;
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3}\">",
        attr(&format!("aoi-lint {}", report.tool)),
        report.results.len(),
        report.count(CheckOutcome::Fail),
        report.results.iter().filter(|r| is_error(r.outcome)).count(),
        report.results.iter().filter(|r| is_skipped(r.outcome)).count(),
        report.elapsed.as_secs_f64(),
    );
    for command in report_rows(report) {
        let results = results_of(report, command);
        let label = command_label(command);
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">",
            attr(label),
            results.len(),
            results
                .iter()
                .filter(|r| r.outcome == CheckOutcome::Fail)
                .count(),
            results.iter().filter(|r| is_error(r.outcome)).count(),
            results.iter().filter(|r| is_skipped(r.outcome)).count(),
        );
        for result in results {
            let info = result.check.info();
            let _ = write!(
                out,
                "    <testcase classname=\"{}\" name=\"{}\"",
                attr(&format!("aoi-lint.{label}")),
                attr(&format!("{} {}", result.check, info.name)),
            );
            // The profile's advice: output beside the test case, never a failure.
            let mut advice = String::new();
            for piece in &result.advice {
                let _ = writeln!(advice, "advice: {}\nfix: {}", piece.detail, piece.fix);
                for evidence in &piece.evidence {
                    for line in evidence_lines(evidence) {
                        let _ = writeln!(advice, "{line}");
                    }
                }
            }
            let advice = if advice.is_empty() {
                advice
            } else {
                format!(
                    "      <system-out>{}</system-out>\n",
                    xml_escape(&advice, false)
                )
            };
            match result.outcome {
                CheckOutcome::Pass if advice.is_empty() => out.push_str("/>\n"),
                CheckOutcome::Pass => {
                    let _ = write!(out, ">\n{advice}    </testcase>\n");
                }
                CheckOutcome::Fail => {
                    let mut text = format!(
                        "{}\nrequires: {} ({})\nspec §18.2 #{}: \"{}\"\n",
                        result.detail, info.title, info.sections, result.check, info.quote
                    );
                    for evidence in &result.evidence {
                        for line in evidence_lines(evidence) {
                            let _ = writeln!(text, "{line}");
                        }
                    }
                    let _ = write!(
                        out,
                        ">\n      <failure message=\"{}\" type=\"AOI{:03}\">{}</failure>\n{advice}    </testcase>\n",
                        attr(&result.detail),
                        result.check.number(),
                        xml_escape(&text, false),
                    );
                }
                CheckOutcome::CouldNotRun => {
                    let _ = write!(
                        out,
                        ">\n      <error message=\"{}\" type=\"could_not_run\">{}</error>\n{advice}    </testcase>\n",
                        attr(&result.detail),
                        xml_escape(
                            &format!("could not run: {}\nrequires: {} ({})\n", result.detail, info.title, info.sections),
                            false
                        ),
                    );
                }
                CheckOutcome::NotApplicable => {
                    let _ = write!(
                        out,
                        ">\n      <skipped message=\"{}\"/>\n{advice}    </testcase>\n",
                        attr(&format!(
                            "{}: {}",
                            outcome_words(result.outcome),
                            result.detail
                        )),
                    );
                }
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use quick_xml::escape::resolve_predefined_entity;
    use quick_xml::events::{BytesStart, Event};
    use quick_xml::{Reader, XmlVersion};

    use super::*;
    use crate::report::tests::{all_pass_report, sample_report};

    /// An element as a test reads it: name, attributes, and the text directly inside it.
    #[derive(Debug, Default)]
    struct Element {
        name: String,
        attributes: BTreeMap<String, String>,
        text: String,
    }

    fn element(start: &BytesStart<'_>) -> Element {
        let mut element = Element {
            name: start.name().as_ref().to_owned(),
            ..Element::default()
        };
        for attribute in start.attributes() {
            let attribute = attribute.unwrap();
            element.attributes.insert(
                attribute.key.as_ref().to_owned(),
                attribute
                    .normalized_value(XmlVersion::Implicit1_0)
                    .unwrap()
                    .into_owned(),
            );
        }
        element
    }

    /// Parses `xml` with quick-xml, resolving every entity and character reference, and
    /// returns its elements in document order.
    fn parse(xml: &str) -> Vec<Element> {
        let mut reader = Reader::from_str(xml);
        let mut elements: Vec<Element> = Vec::new();
        let mut open: Vec<usize> = Vec::new();
        loop {
            match reader.read_event().unwrap() {
                Event::Start(e) => {
                    elements.push(element(&e));
                    open.push(elements.len() - 1);
                }
                Event::Empty(e) => elements.push(element(&e)),
                Event::Text(t) => {
                    if let Some(&i) = open.last() {
                        elements[i].text.push_str(&t.xml10_content());
                    }
                }
                Event::GeneralRef(r) => {
                    let c = match r.resolve_char_ref().unwrap() {
                        Some(c) => c.to_string(),
                        None => resolve_predefined_entity(&r.xml10_content())
                            .unwrap()
                            .to_owned(),
                    };
                    if let Some(&i) = open.last() {
                        elements[i].text.push_str(&c);
                    }
                }
                Event::End(_) => {
                    open.pop();
                }
                Event::Eof => break,
                _ => {}
            }
        }
        elements
    }

    #[test]
    fn counts_match_the_report() {
        let report = sample_report();
        let xml = junit(&report);
        let elements = parse(&xml);
        let root = &elements[0];
        assert_eq!(root.name, "testsuites");
        let skipped = report.count(CheckOutcome::NotApplicable);
        let errors = report.count(CheckOutcome::CouldNotRun);
        assert!(errors > 0, "the sample has a could-not-run");
        assert_eq!(root.attributes["tests"], report.results.len().to_string());
        assert_eq!(
            root.attributes["failures"],
            report.count(CheckOutcome::Fail).to_string()
        );
        assert_eq!(root.attributes["skipped"], skipped.to_string());
        assert_eq!(root.attributes["errors"], errors.to_string());
        assert_eq!(root.attributes["time"], "3.250");
        assert_eq!(root.attributes["name"], "aoi-lint outline ☃");

        let named = |name: &'static str| elements.iter().filter(move |e| e.name == name);
        assert_eq!(named("testcase").count(), report.results.len());
        assert_eq!(named("failure").count(), report.count(CheckOutcome::Fail));
        assert_eq!(named("skipped").count(), skipped);
        assert_eq!(named("error").count(), errors);
        let error = named("error").next().unwrap();
        assert_eq!(error.attributes["type"], "could_not_run");
        let suites: Vec<&str> = named("testsuite")
            .map(|s| s.attributes["name"].as_str())
            .collect();
        assert_eq!(
            suites,
            ["search", "delete", "auth login", "検索", "(invocation)"]
        );
        let delete = named("testsuite").nth(1).unwrap();
        assert_eq!(delete.attributes["tests"], "16");
        assert_eq!(delete.attributes["failures"], "1");
        assert_eq!(delete.attributes["skipped"], "1");
        assert_eq!(
            delete.attributes["errors"], "1",
            "its idempotency check could not run"
        );
        let empty = named("testsuite").nth(3).unwrap();
        assert_eq!(empty.attributes["tests"], "0");

        let case = named("testcase").nth(16 + 5).unwrap();
        assert_eq!(case.attributes["classname"], "aoi-lint.delete");
        assert_eq!(case.attributes["name"], "6 confirmation");
        let skipped = named("skipped").next().unwrap();
        assert_eq!(skipped.attributes["message"], "not applicable: ok");

        let clean = parse(&junit(&all_pass_report()));
        assert_eq!(clean[0].attributes["failures"], "0");
        assert_eq!(clean[0].attributes["skipped"], "0");
        assert!(clean.iter().all(|e| e.name != "failure"));
    }

    #[test]
    fn markup_and_control_characters_round_trip_safely() {
        let xml = junit(&sample_report());
        // Nothing XML 1.0 forbids is in the document, even as a reference.
        assert!(!xml
            .chars()
            .any(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\r')));
        let elements = parse(&xml);
        let failure = elements
            .iter()
            .find(|e| e.name == "failure" && e.attributes["type"] == "AOI006")
            .unwrap();
        // Markup and quotes come back exactly; forbidden controls come back visibly escaped.
        assert_eq!(
            failure.attributes["message"],
            "deleted «doc_1» without --yes <&\"'> \\u{1b}[31mred\\u{7}"
        );
        assert!(failure
            .text
            .contains("line 3: {\"type\":\"deleted\",\"id\":\"文書<&\\\">\\u{1}\"}\n"));
        assert!(failure
            .text
            .contains("$ outline delete 'doc 1' 'it'\\''s' $'\\x1b[2J'\n"));
        assert!(failure.text.contains("finding: seq_gap\n"));
        assert!(failure.text.starts_with("deleted «doc_1»"));
        assert!(failure
            .text
            .contains("\nrequires: destructive commands refuse"));
    }

    #[test]
    fn newlines_tabs_and_carriage_returns_survive_in_attributes() {
        let mut report = all_pass_report();
        report.results[0].outcome = CheckOutcome::Fail;
        report.results[0].detail = "a\tb\nc\r\nd".into();
        let elements = parse(&junit(&report));
        let failure = elements.iter().find(|e| e.name == "failure").unwrap();
        assert_eq!(failure.attributes["message"], "a\tb\nc\r\nd");
    }
}
