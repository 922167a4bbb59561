//! The "Machine Mode Ready" badge: a shields-style SVG a tool's README can show, naming the
//! factors lint found it passes (§18.2: the badge is the claim, lint is the proof).

use std::fmt::Write as _;

use super::xml_escape;
use crate::model::{Factor, Report};

const LABEL: &str = "Machine Mode Ready";
/// Horizontal padding on each side of each part's text, in pixels.
const PADDING: u32 = 6;

/// Writes the badge for `report`, or `None` when no factor passed (there is nothing to
/// claim).
///
/// The left part reads "Machine Mode Ready"; the right lists the factors passed, in
/// [`Factor::ALL`] order, separated by `·` — bright green when all ten passed, blue
/// otherwise. Widths are computed from the text (Verdana 11px metrics, approximated per
/// character), the SVG carries `role="img"`, an `aria-label` and a `<title>` naming the tool
/// and every factor, and the document is well-formed XML.
pub fn badge(report: &Report) -> Option<String> {
    let factors = report.factors_passed();
    if factors.is_empty() {
        return None;
    }
    let value = factors
        .iter()
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(" · ");
    let color = if factors.len() == Factor::ALL.len() {
        "#4c1"
    } else {
        "#007ec6"
    };
    let label_width = text_width(LABEL) + 2 * PADDING;
    let value_width = text_width(&value) + 2 * PADDING;
    let width = label_width + value_width;
    let title = format!(
        "{}{}: {} ({} of {} factors, verified by aoi-lint)",
        report.tool,
        if report.tool.is_empty() {
            LABEL
        } else {
            " is Machine Mode Ready"
        },
        factors
            .iter()
            .map(|f| f.name())
            .collect::<Vec<_>>()
            .join(", "),
        factors.len(),
        Factor::ALL.len(),
    );
    let aria = xml_escape(&format!("{LABEL}: {value}"), true);
    // Text is drawn at 10× and scaled down, as shields does, so positions stay integers.
    let label_x = label_width * 5;
    let value_x = label_width * 10 + value_width * 5;
    let label_len = (label_width - 2 * PADDING) * 10;
    let value_len = (value_width - 2 * PADDING) * 10;
    let label = xml_escape(LABEL, false);
    let value = xml_escape(&value, false);

    let mut svg = String::new();
    let _ = write!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="20" role="img" aria-label="{aria}">
  <title>{title}</title>
  <linearGradient id="s" x2="0" y2="100%">
    <stop offset="0" stop-color="#bbb" stop-opacity=".1"/>
    <stop offset="1" stop-opacity=".1"/>
  </linearGradient>
  <clipPath id="r"><rect width="{width}" height="20" rx="3" fill="#fff"/></clipPath>
  <g clip-path="url(#r)">
    <rect width="{label_width}" height="20" fill="#555"/>
    <rect x="{label_width}" width="{value_width}" height="20" fill="{color}"/>
    <rect width="{width}" height="20" fill="url(#s)"/>
  </g>
  <g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" text-rendering="geometricPrecision" font-size="110">
    <text aria-hidden="true" x="{label_x}" y="150" fill="#010101" fill-opacity=".3" transform="scale(.1)" textLength="{label_len}">{label}</text>
    <text x="{label_x}" y="140" transform="scale(.1)" textLength="{label_len}">{label}</text>
    <text aria-hidden="true" x="{value_x}" y="150" fill="#010101" fill-opacity=".3" transform="scale(.1)" textLength="{value_len}">{value}</text>
    <text x="{value_x}" y="140" transform="scale(.1)" textLength="{value_len}">{value}</text>
  </g>
</svg>
"##,
        title = xml_escape(&title, false),
    );
    Some(svg)
}

/// The width of `text` in Verdana at 11px, in whole pixels, from per-character advances
/// (rounded from the font's metrics; anything unlisted counts as a wide lowercase letter).
fn text_width(text: &str) -> u32 {
    let tenths: u32 = text
        .chars()
        .map(|c| match c {
            'i' | 'l' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' => 30,
            ' ' | '·' | 'j' | 'f' | 't' | 'r' | 'I' | '(' | ')' => 40,
            'm' | 'w' | 'M' | 'W' => 100,
            'A'..='Z' => 75,
            '0'..='9' | 'a'..='z' => 65,
            _ => 70,
        })
        .sum();
    tenths.div_ceil(10)
}

#[cfg(test)]
mod tests {
    use quick_xml::events::Event;
    use quick_xml::Reader;

    use super::*;
    use crate::model::{CheckId, CheckOutcome, CheckResult};
    use crate::report::tests::{all_pass_report, sample_report};

    /// Parses `svg` to its end, returning the text of `<title>` and the root's `width`.
    fn parse(svg: &str) -> (String, String) {
        let mut reader = Reader::from_str(svg);
        let (mut title, mut width) = (String::new(), String::new());
        let mut in_title = false;
        loop {
            match reader.read_event().unwrap() {
                Event::Start(e) if e.name().as_ref() == "svg" => {
                    let attribute = e.try_get_attribute("width").unwrap().unwrap();
                    width = attribute.value.into_owned();
                }
                Event::Start(e) if e.name().as_ref() == "title" => in_title = true,
                Event::End(e) if e.name().as_ref() == "title" => in_title = false,
                Event::Text(t) if in_title => title.push_str(&t.xml10_content()),
                Event::GeneralRef(r) if in_title => {
                    let name = r.xml10_content();
                    title.push_str(quick_xml::escape::resolve_predefined_entity(&name).unwrap());
                }
                Event::Eof => break,
                _ => {}
            }
        }
        (title, width)
    }

    #[test]
    fn no_badge_without_a_factor_passed() {
        assert_eq!(badge(&Report::default()), None);
        let failing = Report {
            results: vec![CheckResult::new(
                CheckId::new(2).unwrap(),
                "search",
                CheckOutcome::Fail,
                "ANSI",
            )],
            ..Report::default()
        };
        assert_eq!(badge(&failing), None);
    }

    #[test]
    fn the_badge_is_well_formed_and_names_every_factor_passed() {
        let mut report = sample_report();
        report.tool = "out<line> & \"co\"".into();
        let factors = report.factors_passed();
        assert!(!factors.is_empty() && factors.len() < 10);
        let svg = badge(&report).unwrap();
        let (title, width) = parse(&svg);
        let names: Vec<&str> = factors.iter().map(|f| f.name()).collect();
        assert_eq!(
            title,
            format!(
                "out<line> & \"co\" is Machine Mode Ready: {} ({} of 10 factors, verified by aoi-lint)",
                names.join(", "),
                factors.len()
            )
        );
        assert!(svg.contains(&format!(">{}</text>", names.join(" · "))));
        assert!(svg.contains(">Machine Mode Ready</text>"));
        assert!(svg.contains("fill=\"#007ec6\""));
        let expected = text_width(LABEL) + text_width(&names.join(" · ")) + 4 * PADDING;
        assert_eq!(width, expected.to_string());
    }

    #[test]
    fn more_factors_make_a_wider_badge() {
        let all = badge(&all_pass_report()).unwrap();
        assert!(all.contains("fill=\"#4c1\""));
        let (title, all_width) = parse(&all);
        assert!(title.contains("Typed, Discoverable, Streamable"), "{title}");
        assert!(title.contains("(10 of 10 factors"));
        let (_, some_width) = parse(&badge(&sample_report()).unwrap());
        let (all_width, some_width): (u32, u32) =
            (all_width.parse().unwrap(), some_width.parse().unwrap());
        assert!(all_width > some_width);
        assert!(text_width("Machine Mode Ready") > 100 && text_width("Machine Mode Ready") < 140);
    }
}
