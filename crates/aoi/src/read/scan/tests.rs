//! Tests of the line scanner: unit tests for every error kind and column, and differential
//! property tests that hold it to its contract against the reference implementations:
//! `serde_json::from_slice::<Value>` (acceptance and error messages), `std::str::from_utf8`
//! (the UTF-8 verdict and column), [`find_ansi`] and [`parse_head`] (the head).

use proptest::prelude::*;
use serde_json::Value;

use super::*;

/// Everything the contract promises about one line, checked against the references.
fn check(line: &[u8]) -> Result<(), TestCaseError> {
    let shown = String::from_utf8_lossy(line).into_owned();
    let value = serde_json::from_slice::<Value>(line);
    let fast = scan_fast(line);
    prop_assert_eq!(
        fast.is_ok(),
        value.is_ok(),
        "scanner and serde_json disagree on {:?} (serde_json: {:?})",
        shown,
        value.as_ref().err()
    );
    let scanned = scan_line(line);
    match std::str::from_utf8(line) {
        Err(e) => {
            prop_assert_eq!(
                scanned.err(),
                Some(NotUtf8 {
                    column: e.valid_up_to() + 1
                }),
                "{:?}",
                shown
            );
        }
        Ok(_) => {
            let scanned = match scanned {
                Ok(scanned) => scanned,
                Err(e) => return Err(TestCaseError::fail(format!("{shown:?}: {e:?} for UTF-8"))),
            };
            prop_assert_eq!(scanned.ansi, find_ansi(line), "{:?}", shown);
            match (&scanned.head, &value) {
                (Err(ours), Err(theirs)) => {
                    prop_assert_eq!(ours.to_string(), theirs.to_string(), "{:?}", shown)
                }
                (Ok(head), Ok(_)) => {
                    let reference = parse_head(line);
                    prop_assert!(
                        matches!(&reference, Ok(r) if r == head),
                        "{:?}: scanner {:?}, parse_head {:?}",
                        shown,
                        head,
                        reference
                    );
                    if let (Ok(ours), Ok(Ok(theirs))) = (head, &reference) {
                        prop_assert_eq!(borrowed(&ours.ty), borrowed(&theirs.ty));
                        prop_assert_eq!(borrowed(&ours.run), borrowed(&theirs.run));
                    }
                }
                (ours, theirs) => {
                    return Err(TestCaseError::fail(format!(
                        "{shown:?}: scanner {ours:?}, serde_json {theirs:?}"
                    )))
                }
            }
        }
    }
    if let Ok((ansi, _)) = fast {
        prop_assert_eq!(ansi, find_ansi(line), "{:?}", shown);
    }
    Ok(())
}

fn borrowed(s: &Option<Cow<'_, str>>) -> Option<bool> {
    s.as_ref().map(|s| matches!(s, Cow::Borrowed(_)))
}

#[track_caller]
fn assert_consistent(line: &[u8]) {
    if let Err(e) = check(line) {
        panic!("{e}");
    }
}

fn head(line: &str) -> Head<'_> {
    scan_line(line.as_bytes())
        .expect("UTF-8")
        .head
        .expect("JSON")
        .expect("an object")
}

fn json_error(line: &[u8]) -> String {
    let error = scan_line(line).expect("UTF-8").head.expect_err("not JSON");
    assert_consistent(line);
    error.to_string()
}

fn utf8_column(line: &[u8]) -> usize {
    assert_consistent(line);
    scan_line(line).expect_err("not UTF-8").column
}

// ---------------------------------------------------------------------------------------------
// The head.
// ---------------------------------------------------------------------------------------------

#[test]
fn extracts_the_head_of_an_sdk_line_borrowing_its_strings() {
    let line = r#"{"type":"hit","aoi":{"seq":41,"run":"01JZQ7X4TQ9V6H0ZT7K8F2W3C1"},"rank":1,"id":"doc_1","title":"Réseaux « profonds » 日本語 \"q\" \\","score":0.83}"#;
    let h = head(line);
    assert_eq!(h.ty.as_deref(), Some("hit"));
    assert_eq!(h.seq, Some(41));
    assert_eq!(h.run.as_deref(), Some("01JZQ7X4TQ9V6H0ZT7K8F2W3C1"));
    assert!(matches!(h.ty, Some(Cow::Borrowed(_))) && matches!(h.run, Some(Cow::Borrowed(_))));
    assert!(h.has_envelope && !h.envelope_not_object && !h.seq_invalid && !h.run_invalid);
    assert!(!h.ty_not_string && !h.flat_seq && !h.flat_run);
    assert_consistent(line.as_bytes());
}

#[test]
fn decodes_escaped_strings_and_keys() {
    let h = head(r#"{"ty\u0070e":"a\u00e9\ud83d\ude00\n","\u0061oi":{"r\u0075n":"R\/1"}}"#);
    assert_eq!(h.ty.as_deref(), Some("aé😀\n"));
    assert!(matches!(h.ty, Some(Cow::Owned(_))));
    assert_eq!(h.run.as_deref(), Some("R/1"));
    // A key that only decodes to something longer is not one of ours.
    let h = head(r#"{"typ\u0065s":"x","\u0074ype\u0020":1}"#);
    assert_eq!(h, Head::default());
}

#[test]
fn later_duplicates_overwrite_and_flags_stay_set() {
    let h = head(r#"{"type":"a","type":"b","aoi":{"seq":1,"seq":2,"run":"x","run":"y"}}"#);
    assert_eq!(
        (h.ty.as_deref(), h.seq, h.run.as_deref()),
        (Some("b"), Some(2), Some("y"))
    );
    let h = head(r#"{"type":"a","type":1,"aoi":{"seq":1,"seq":-1,"run":"x","run":null}}"#);
    assert_eq!(
        (h.ty.as_deref(), h.seq, h.run.as_deref()),
        (Some("a"), Some(1), Some("x"))
    );
    assert!(h.ty_not_string && h.seq_invalid && h.run_invalid);
    let h = head(r#"{"aoi":{"seq":1},"aoi":[],"seq":0,"run":{}}"#);
    assert!(h.has_envelope && h.envelope_not_object && h.flat_seq && h.flat_run);
    assert_eq!(h.seq, Some(1));
    for line in [
        r#"{"type":"a","type":"b","aoi":{"seq":1,"seq":2,"run":"x","run":"y"}}"#,
        r#"{"type":"a","type":1,"aoi":{"seq":1,"seq":-1,"run":"x","run":null}}"#,
        r#"{"aoi":{"seq":1},"aoi":[],"seq":0,"run":{}}"#,
        r#"{"aoi":{"type":"x","aoi":{"seq":3}},"x":{"type":"y","aoi":{"seq":4}}}"#,
    ] {
        assert_consistent(line.as_bytes());
    }
}

#[test]
fn seq_is_a_non_negative_integer_literal_that_fits_a_u64() {
    for (seq, expected) in [
        ("0", Some(0)),
        ("7", Some(7)),
        ("18446744073709551615", Some(u64::MAX)),
        ("18446744073709551616", None),
        ("100000000000000000000000000000", None),
        ("-0", None),
        ("-1", None),
        ("1.0", None),
        ("1e0", None),
        ("1E+2", None),
        ("0.5", None),
        ("\"1\"", None),
        ("null", None),
        ("[1]", None),
        ("{\"seq\":1}", None),
    ] {
        let line = format!(r#"{{"aoi":{{"seq":{seq}}}}}"#);
        let h = head(&line);
        assert_eq!(h.seq, expected, "{line}");
        assert_eq!(h.seq_invalid, expected.is_none(), "{line}");
        assert_consistent(line.as_bytes());
    }
}

#[test]
fn names_what_a_non_object_is() {
    for (line, kind) in [
        ("[1,{\"a\":2}]", "an array"),
        ("\"s\"", "a string"),
        ("-1.5e3", "a number"),
        ("true", "a boolean"),
        (" false ", "a boolean"),
        ("null", "null"),
    ] {
        let scanned = scan_line(line.as_bytes()).unwrap();
        assert_eq!(scanned.head.unwrap(), Err(NotObject(kind)), "{line}");
        assert_consistent(line.as_bytes());
    }
}

// ---------------------------------------------------------------------------------------------
// Errors and their columns.
// ---------------------------------------------------------------------------------------------

#[test]
fn json_errors_are_serde_json_messages_with_their_column() {
    for (line, message) in [
        (&br#"{"a":1,}"#[..], "trailing comma at line 1 column 8"),
        (br#"[1,]"#, "trailing comma at line 1 column 4"),
        (
            br#"{"type":"hit","#,
            "EOF while parsing a value at line 1 column 14",
        ),
        (br#"{"a":1} x"#, "trailing characters at line 1 column 9"),
        (br#"{"a":1}{}"#, "trailing characters at line 1 column 8"),
        (
            b"{\"a\":\"x\ty\"}",
            "control character (\\u0000-\\u001F) found while parsing a string at line 1 column 8",
        ),
        (br#"{"a":"\x"}"#, "invalid escape at line 1 column 8"),
        (br#"{"a":"\u12G4"}"#, "invalid escape at line 1 column 12"),
        (
            br#"{"a":"\ud800"}"#,
            "unexpected end of hex escape at line 1 column 13",
        ),
        (
            br#"{"a":"\ud800\u0041"}"#,
            "lone leading surrogate in hex escape at line 1 column 18",
        ),
        (
            br#"{"a":"\udc00"}"#,
            "lone leading surrogate in hex escape at line 1 column 12",
        ),
        (br#"{"a":01}"#, "invalid number at line 1 column 7"),
        (br#"{"a":1.}"#, "invalid number at line 1 column 8"),
        (br#"{"a":.5}"#, "expected value at line 1 column 6"),
        (br#"{"a":1e400}"#, "number out of range at line 1 column 10"),
        (br#"{"a":-}"#, "invalid number at line 1 column 7"),
        (br#"{a:1}"#, "key must be a string at line 1 column 2"),
        (br#"{"a" 1}"#, "expected `:` at line 1 column 6"),
        (
            br#"{"a":1 "b":2}"#,
            "expected `,` or `}` at line 1 column 8",
        ),
        (br#"{"a":tru}"#, "expected ident at line 1 column 9"),
        (b"\x1b[31mred", "expected value at line 1 column 1"),
        (b"   ", "EOF while parsing a value at line 1 column 3"),
    ] {
        assert_eq!(
            json_error(line),
            message,
            "{}",
            String::from_utf8_lossy(line)
        );
    }
}

#[test]
fn nesting_stops_where_serde_json_stops() {
    // `levels` arrays and objects in all, the outer object included.
    let nested = |open: &str, close: &str, per: usize, levels: usize| {
        let inner = (levels - 1) / per;
        let mut line = r#"{"type":"hit","x":"#.to_owned();
        line.push_str(&open.repeat(inner));
        line.push('1');
        line.push_str(&close.repeat(inner));
        line.push('}');
        line
    };
    for levels in [3, 121, 127] {
        for (open, close, per) in [("[", "]", 1), (r#"{"k":"#, "}", 1), (r#"[{"k":"#, "}]", 2)] {
            let line = nested(open, close, per, levels);
            assert!(
                scan_fast(line.as_bytes()).is_ok(),
                "{levels} levels of {open}"
            );
            assert_consistent(line.as_bytes());
        }
    }
    for levels in [128, 129, 500] {
        for (open, close) in [("[", "]"), (r#"{"k":"#, "}")] {
            let line = nested(open, close, 1, levels);
            assert!(json_error(line.as_bytes()).starts_with("recursion limit exceeded"));
        }
        let bare = format!("{}1{}", "[".repeat(levels), "]".repeat(levels));
        assert!(json_error(bare.as_bytes()).starts_with("recursion limit exceeded"));
    }
    assert!(scan_fast(format!("{}{}", "[".repeat(127), "]".repeat(127)).as_bytes()).is_ok());
}

#[test]
fn numbers_are_judged_like_serde_json_judges_them() {
    let big = format!("1{}", "0".repeat(400));
    let tiny = format!("0.{}1e320", "0".repeat(400));
    let numbers = [
        "0",
        "-0",
        "1",
        "-1",
        "1e5",
        "1E+2",
        "1e-2",
        "0.5",
        "-0.0",
        "01",
        "-01",
        "1.",
        ".5",
        "+1",
        "1e",
        "1e+",
        "1.5e",
        "0x10",
        "1.0e308",
        "1.7976931348623157e308",
        "1.7976931348623158e308",
        "1.7976931348623159e308",
        "1.8e308",
        "1e308",
        "1e309",
        "9e307",
        "99e307",
        "-1e309",
        "0e999999",
        "0e99999999999",
        "1e-999999",
        "1e99999999999",
        "1e-99999999999",
        "0.0000001e314",
        "179769313486231580793e288",
        "18446744073709551616",
        "-9223372036854775809",
        &big,
        &tiny,
    ];
    for n in numbers {
        for line in [
            n.to_owned(),
            format!("[{n}]"),
            format!(r#"{{"x":{n}}}"#),
            format!(r#"{{"aoi":{{"seq":{n}}}}}"#),
            format!(r#"{{"aoi":{{"seq":[{n}]}}}}"#),
        ] {
            assert_consistent(line.as_bytes());
        }
    }
}

#[test]
fn utf8_errors_name_the_first_bad_byte() {
    for (line, column) in [
        (&b"{\"a\":\"\xff\"}"[..], 7),
        (b"{\"a\":\"\xc3\"}", 7),
        (b"{\"a\":\"\xc0\x80\"}", 7),
        (b"{\"a\":\"\xe0\x80\x80\"}", 7),
        (b"{\"a\":\"\xed\xa0\x80\"}", 7),
        (b"{\"a\":\"\xf4\x90\x80\x80\"}", 7),
        (b"{\"a\":\"\xf5\x80\x80\x80\"}", 7),
        (b"{\"a\":\"ok \xe2\x82\xac \xe2\x82\"}", 14),
        (b"{\"a\":\"\xf0\x9f\x98\"}", 7),
        // Outside a string, and after a JSON error: the UTF-8 verdict comes first.
        (b"\xc3\x28", 1),
        (b"{\"a\":1,} \x80", 10),
    ] {
        assert_eq!(
            utf8_column(line),
            column,
            "{}",
            String::from_utf8_lossy(line)
        );
    }
}

#[test]
fn finds_ansi_controls_like_find_ansi() {
    let cases: [(&str, Option<Ansi>); 8] = [
        (r#"{"a":"\u001b[0m"}"#, Some(Ansi::Escaped(7))),
        (r#"{"a":"\u001B","b":"\u009b"}"#, Some(Ansi::Escaped(7))),
        ("{\"a\":\"\\u001b\",\"b\":\"\u{9b}\"}", Some(Ansi::Raw(20))),
        (r#"{"\u009B":1}"#, Some(Ansi::Escaped(3))),
        (r#"{"a":"\\u001b"}"#, None),
        (r#"{"a":"\\\u001b"}"#, Some(Ansi::Escaped(9))),
        ("{\"a\":\"\u{82}\u{a0}é\u{1b00}\"}", None),
        (r#"{"a":"\u0019b\u00e9"}"#, None),
    ];
    for (line, ansi) in cases {
        assert_eq!(scan_line(line.as_bytes()).unwrap().ansi, ansi, "{line}");
        assert_consistent(line.as_bytes());
    }
    // A raw ESC is not JSON; the scanner still reports where it is.
    let scanned = scan_line(b"{\"a\":\"\x1b[0m\"}").unwrap();
    assert_eq!(scanned.ansi, Some(Ansi::Raw(7)));
    assert!(scanned.head.is_err());
}

#[test]
fn the_swar_mask_flags_exactly_the_first_special_byte() {
    for special in [b'"', b'\\', 0x00, 0x1f, 0x80, 0xff] {
        for at in 0..8 {
            for filler in [b' ', b'!', b'#', b'[', b']', b'~', 0x7f, b'a'] {
                let mut word = [filler; 8];
                word[at] = special;
                // Whatever follows must not move the first flag.
                for later in at + 1..8 {
                    word[later] = [0x00, 0x22, 0x5c, 0x81, 0x21, 0x5d][later % 6];
                }
                let mask = special_bytes(u64::from_le_bytes(word));
                assert_eq!(mask.trailing_zeros() / 8, at as u32, "{word:?}");
            }
        }
    }
    assert_eq!(special_bytes(u64::from_le_bytes(*b" !#[]~\x7fa")), 0);
}

#[test]
fn is_stricter_than_parse_head_exactly_where_serde_json_value_is() {
    // `parse_head` skips values with `IgnoredAny`, which checks none of these.
    let deep = format!(
        r#"{{"type":"hit","x":{}1{}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    for line in [
        &br#"{"type":"hit","x":1e400}"#[..],
        br#"{"type":"hit","x":"\ud800"}"#,
        b"{\"type\":\"hit\",\"x\":\"\xff\"}",
        deep.as_bytes(),
    ] {
        assert!(matches!(parse_head(line), Ok(Ok(_))));
        assert!(serde_json::from_slice::<Value>(line).is_err());
        assert!(!scan_fast_accepts(line));
        assert_consistent(line);
    }
}

#[test]
fn the_slow_path_reports_what_serde_json_reports() {
    // `Validated` must fail exactly where `Value` fails, with the same message.
    for line in [
        &br#"{"a":[1,2,{"b":"\ud800x"}]}"#[..],
        br#"{"a":1e999}"#,
        br#"{"\udfff":1}"#,
        b"{\"a\":\"\xff\"}",
    ] {
        let ours = serde_json::from_slice::<Validated>(line)
            .err()
            .map(|e| e.to_string());
        let theirs = serde_json::from_slice::<Value>(line)
            .err()
            .map(|e| e.to_string());
        assert_eq!(ours, theirs);
    }
}

// ---------------------------------------------------------------------------------------------
// Differential properties.
// ---------------------------------------------------------------------------------------------

/// Lines of the shapes a stream carries, with every kind of string content and number.
const SEEDS: &[&str] = &[
    r#"{"type":"hit","aoi":{"seq":12,"run":"01JZQ7X4TQ9V6H0ZT7K8F2W3C1"},"rank":3,"id":"doc_3","title":"Über die Zuverlässigkeit « test » \"q\" \\ 日本語 😀","snippet":"Ελληνικά","score":0.83}"#,
    r#"{"type":"aoi:meta","aoi":{"seq":0,"run":"R"},"tool":"outline","tool_version":"1.8.2","aoi_version":"1.0-alpha"}"#,
    r#"{"type":"aoi:summary","aoi":{"seq":3,"run":"R"},"ok":true,"event_count":4,"count":1,"elapsed_ms":3}"#,
    r#"{"type":"aoi:error","aoi":{"seq":2,"run":"R"},"category":"io","code":"E","message":"\u001b[31mred\u009B","retryable":false}"#,
    r#" { "type" : "t\u00e9" , "seq" : -0 , "run" : [ 1E+2 , 1e-5 , 0.5 , -12.5e3 , true , false , null ] } "#,
    r#"{"ty\u0070e":"x","aoi":{"s\u0065q":1.0,"run":"\ud83d\ude00\/\b\f\n\r\t"},"n":{"a":[{},[],{"b":[[]]}]}}"#,
    "{\"type\":\"raw\",\"t\":\"\u{9b}31m \u{2028} \u{85}\",\"aoi\":{\"seq\":18446744073709551615}}",
    r#"{"aoi":{"seq":18446744073709551616,"run":7},"x":123456789012345678901234567890}"#,
    r#"[1,"two",{"three":3}]"#,
    r#""just a string""#,
];

/// Pieces to splice into lines: structure, escapes, numbers, UTF-8 edge cases.
const FRAGMENTS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "\\",
    " ",
    "\t",
    "\r",
    "\n",
    "\"type\"",
    "\"aoi\"",
    "\"seq\"",
    "\"run\"",
    "\\u001b",
    "\\u009b",
    "\\u001B",
    "\\\\u001b",
    "\\ud800",
    "\\udc00",
    "\\ud800\\udc00",
    "\\uDBFF\\uDFFF",
    "\\u0000",
    "\\u00",
    "\\x",
    "\\/",
    "-0",
    "1e5",
    "1E+2",
    "0.5",
    "01",
    "1.",
    ".5",
    "-",
    "1e400",
    "18446744073709551616",
    "99999999999999999999",
    "true",
    "false",
    "null",
    "nul",
    "\u{9b}",
    "\u{1b}",
    "é",
    "日",
    "😀",
    "\u{7f}",
    "\u{80}",
    "\u{10ffff}",
    "\u{fffd}",
];

const BAD_UTF8: &[&[u8]] = &[
    b"\xff",
    b"\xc3",
    b"\xc0\x80",
    b"\xe0\x80\x80",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xf5",
    b"\xe2\x82",
    b"\xf0\x9f\x98",
    b"\x80",
    b"\xc2\x9b",
];

#[derive(Debug, Clone)]
enum Mutation {
    Flip(prop::sample::Index, u8),
    Insert(prop::sample::Index, Vec<u8>),
    Delete(prop::sample::Index, usize),
    Truncate(prop::sample::Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let piece = prop_oneof![
        3 => prop::sample::select(FRAGMENTS).prop_map(|f| f.as_bytes().to_vec()),
        1 => prop::sample::select(BAD_UTF8).prop_map(<[u8]>::to_vec),
        1 => any::<char>().prop_map(|c| c.to_string().into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 1..4),
    ];
    prop_oneof![
        2 => (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        4 => (any::<prop::sample::Index>(), piece).prop_map(|(i, p)| Mutation::Insert(i, p)),
        2 => (any::<prop::sample::Index>(), 1..6usize).prop_map(|(i, n)| Mutation::Delete(i, n)),
        1 => any::<prop::sample::Index>().prop_map(Mutation::Truncate),
    ]
}

fn mutate(line: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut line = line.to_vec();
    for m in mutations {
        let at = |i: &prop::sample::Index, len: usize| i.index(len + 1);
        match m {
            Mutation::Flip(i, b) if !line.is_empty() => {
                let i = i.index(line.len());
                line[i] = *b;
            }
            Mutation::Flip(..) => {}
            Mutation::Insert(i, piece) => {
                let i = at(i, line.len());
                line.splice(i..i, piece.iter().copied());
            }
            Mutation::Delete(i, n) => {
                let i = at(i, line.len());
                let end = (i + n).min(line.len());
                line.drain(i..end);
            }
            Mutation::Truncate(i) => {
                let i = at(i, line.len());
                line.truncate(i);
            }
        }
    }
    line
}

/// JSON text built from a random value tree: random strings (raw Unicode, every escape, ANSI
/// controls), numbers in every form, random whitespace, the head's keys, deep nesting.
fn json_text() -> impl Strategy<Value = String> {
    let ws = prop::sample::select(vec!["", "", "", " ", "\t", "\r\n "]);
    let key = prop_oneof![
        3 => prop::sample::select(vec!["type", "aoi", "seq", "run", "ty\\u0070e", "x", "a"])
            .prop_map(|k| format!("\"{k}\"")),
        1 => json_string(),
    ];
    json_scalar().prop_recursive(6, 48, 6, move |inner| {
        let ws = ws.clone();
        prop_oneof![
            (prop::collection::vec(inner.clone(), 0..6), ws.clone())
                .prop_map(|(items, ws)| format!("[{ws}{}{ws}]", items.join(&format!("{ws},{ws}")))),
            (prop::collection::vec((key.clone(), inner), 0..6), ws).prop_map(|(members, ws)| {
                let members: Vec<String> = members
                    .into_iter()
                    .map(|(k, v)| format!("{k}{ws}:{ws}{v}"))
                    .collect();
                format!("{{{ws}{}{ws}}}", members.join(","))
            }),
        ]
    })
}

/// A JSON string: plain text, raw Unicode, every escape, ANSI controls raw and escaped.
fn json_string() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            4 => "[a-zA-Z0-9 _:-]{1,12}",
            2 => any::<char>()
                .prop_filter("raw", |c| *c >= ' ' && *c != '"' && *c != '\\')
                .prop_map(String::from),
            1 => prop::sample::select(vec![
                "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\u00e9", "\\u001b",
                "\\u001B", "\\u009b", "\\u009B", "\\\\u001b", "\\ud83d\\ude00", "\\uFFFF",
                "\\u0000", "\u{9b}", "é", "日本", "😀", "\u{2028}",
            ])
            .prop_map(str::to_owned),
        ],
        0..6,
    )
    .prop_map(|parts| format!("\"{}\"", parts.concat()))
}

/// A string, a number in any of its forms, or a literal.
fn json_scalar() -> impl Strategy<Value = String> {
    let number = prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| f.to_string()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:e}")),
        prop::sample::select(vec![
            "-0",
            "0",
            "1e5",
            "1E+2",
            "0.5",
            "1.7976931348623157e308",
            "1.8e308",
            "1e-400",
            "123456789012345678901234567890",
        ])
        .prop_map(str::to_owned),
    ];
    prop_oneof![
        3 => json_string(),
        3 => number,
        1 => prop::sample::select(vec!["true", "false", "null"]).prop_map(str::to_owned),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_are_judged_like_the_references(line in prop::collection::vec(any::<u8>(), 0..48)) {
        check(&line)?;
    }

    #[test]
    fn mutated_lines_are_judged_like_the_references(
        seed in prop::sample::select(SEEDS),
        mutations in prop::collection::vec(mutation(), 0..4),
    ) {
        check(&mutate(seed.as_bytes(), &mutations))?;
    }

    #[test]
    fn generated_json_is_judged_like_the_references(
        text in json_text(),
        mutations in prop::collection::vec(mutation(), 0..2),
    ) {
        check(text.as_bytes())?;
        check(&mutate(text.as_bytes(), &mutations))?;
    }

    #[test]
    fn generated_lines_with_a_head_are_judged_like_the_references(
        ty in json_scalar(),
        seq in json_scalar(),
        rest in json_text(),
        run in "[0-9A-Z]{0,26}",
        mutations in prop::collection::vec(mutation(), 0..2),
    ) {
        let line = format!(r#"{{"type":{ty},"aoi":{{"seq":{seq},"run":"{run}"}},"rest":{rest}}}"#);
        check(line.as_bytes())?;
        check(&mutate(line.as_bytes(), &mutations))?;
    }

    #[test]
    fn deep_nesting_is_judged_like_the_references(
        depth in 100usize..140,
        kinds in prop::collection::vec(any::<bool>(), 140),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut open = String::new();
        let mut close = String::new();
        for &object in &kinds[..depth] {
            if object {
                open.push_str("{\"k\":");
                close.insert(0, '}');
            } else {
                open.push('[');
                close.insert(0, ']');
            }
        }
        let line = format!(r#"{{"type":"x","v":{open}1{close}}}"#);
        check(line.as_bytes())?;
        check(&line.as_bytes()[..cut.index(line.len())])?;
    }
}
