//! Check 9, Safe (§11): secrets placed in the environment, in the flags the input schema
//! marks secret, in the credentials and sensitive query keys of a URL the command takes, and
//! after a sensitive-looking unknown flag never appear on stdout or stderr, in machine mode,
//! in human mode or under `--debug`: neither raw nor in a common encoding (base64,
//! base64url, hex, percent-encoding), nor in a JSON string once its escapes are read; and
//! `aoi:meta.args` names no sensitive value unredacted (the verifier's `ARGS_NOT_REDACTED`).

use super::{id, Judge};
use crate::model::{cut, CheckId, CheckResult, Evidence};
use crate::subject::{snapshot, with, Captured, Extras, Subject};

/// This check.
pub const ID: CheckId = id(9);

/// The canary every secret value contains.
const CANARY: &str = "aoi-lint-canary-5e1c9f";

/// Environment variables a tool might read credentials from, each with its own canary.
fn canary_env(tool: &str) -> Vec<(String, String)> {
    let upper: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    [
        format!("{upper}_TOKEN"),
        format!("{upper}_API_KEY"),
        "GITHUB_TOKEN".to_owned(),
        "AWS_SECRET_ACCESS_KEY".to_owned(),
        "DATABASE_PASSWORD".to_owned(),
        "API_KEY".to_owned(),
    ]
    .into_iter()
    .enumerate()
    .map(|(n, k)| (k, format!("{CANARY}-env{n}")))
    .collect()
}

/// A URL carrying canaries where §11 says a URL hides secrets: its userinfo and the query
/// keys `token`, `sig` and `access_token`.
fn canary_url() -> String {
    format!(
        "https://aoi-lint:{CANARY}-url0@example.invalid/aoi-lint?token={CANARY}-url1&sig={CANARY}-url2&access_token={CANARY}-url3&page=1"
    )
}

/// True when property `name` (with `schema`) takes a URL.
fn takes_url(name: &str, schema: Option<&serde_json::Value>) -> bool {
    let format = schema
        .and_then(|s| s.get("format"))
        .and_then(serde_json::Value::as_str);
    matches!(format, Some("uri" | "url" | "iri" | "uri-reference"))
        || ["url", "uri", "endpoint", "href", "webhook"].contains(&name)
        || ["_url", "_uri", "_endpoint", "_webhook"]
            .iter()
            .any(|end| name.ends_with(end))
}

/// The standard base64 alphabet.
const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `bytes` in base64 without padding.
fn base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(BASE64[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

/// What the canary looks like raw and in the encodings a tool might echo a secret in. A
/// secret embedded in a longer encoded text sits at any of three byte offsets, so base64
/// needles are the characters that only the canary's bytes determine, for each offset.
fn needles() -> &'static [String] {
    static NEEDLES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    NEEDLES.get_or_init(encoded_canaries)
}

/// [`needles`], computed.
fn encoded_canaries() -> Vec<String> {
    let canary = CANARY.as_bytes();
    let mut out = vec![CANARY.to_owned()];
    for offset in 0..3usize {
        let mut padded = vec![0u8; offset];
        padded.extend_from_slice(canary);
        let encoded = base64(&padded);
        // Characters mixing the padding's bits come first; those of an incomplete last
        // group depend on what follows the canary.
        let skip = [0, 2, 3][offset];
        let whole = padded.len() / 3 * 4;
        let core = encoded[skip..whole].to_owned();
        out.push(core.replace('+', "-").replace('/', "_"));
        out.push(core);
    }
    let hex: String = canary.iter().map(|b| format!("{b:02x}")).collect();
    out.push(hex.to_uppercase());
    out.push(hex);
    let percent: String = canary.iter().map(|b| format!("%{b:02X}")).collect();
    out.push(percent.to_lowercase());
    out.push(percent);
    out.dedup();
    out
}

/// The first string in `value` (keys included) that holds a needle, decoded from JSON's
/// escapes: a secret written `\u0061…` or with `\/` is the same secret to every reader.
fn decoded_leak(value: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    let holds = |s: &str| needles().iter().any(|n| s.contains(n.as_str()));
    match value {
        Value::String(s) if holds(s) => Some(s.clone()),
        Value::Array(items) => items.iter().find_map(decoded_leak),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            if holds(k) {
                Some(k.clone())
            } else {
                decoded_leak(v)
            }
        }),
        _ => None,
    }
}

/// Where a canary shows, raw or encoded, if it does; or where the verifier found
/// `aoi:meta.args` echoing a value the §11 patterns name (`ARGS_NOT_REDACTED`), canary or not.
fn leak(captured: &Captured) -> Option<Evidence> {
    if let Some(found) = super::findings(captured, ID).into_iter().next() {
        return Some(found);
    }
    for (stream, bytes) in [
        ("stdout", &captured.run.stdout),
        ("stderr", &captured.run.stderr),
    ] {
        let text = String::from_utf8_lossy(bytes);
        for (n, needle) in needles().iter().enumerate() {
            let Some(at) = text.find(needle.as_str()) else {
                continue;
            };
            let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
            let how = if n == 0 { "" } else { " (encoded)" };
            return Some(Evidence {
                invocation: captured.run.argv.clone(),
                line: None,
                excerpt: Some(format!("{stream}{how}: {}", cut(&text[start..], 300))),
                finding: None,
            });
        }
    }
    // A JSON line whose strings, once their escapes are read, hold the secret: the raw bytes
    // hide it from a grep, not from a consumer.
    for (number, line) in captured.run.stdout.split(|&b| b == b'\n').enumerate() {
        let Ok(value) = serde_json::from_slice::<serde_json::Value>(line) else {
            continue;
        };
        if let Some(text) = decoded_leak(&value) {
            return Some(Evidence {
                invocation: captured.run.argv.clone(),
                line: Some(number as u64 + 1),
                excerpt: Some(format!(
                    "stdout (JSON-escaped; decoded): {}",
                    cut(&text, 300)
                )),
                finding: None,
            });
        }
    }
    None
}

/// Runs the check for one command.
pub fn run(subject: &Subject<'_>) -> CheckResult {
    let judge = Judge::new(ID, subject);
    let extras = Extras {
        env: canary_env(&subject.tool.name),
        stdin: None,
    };
    let mut probes: Vec<Vec<String>> = Vec::new();
    if let Ok(args) = &subject.base {
        let mut secret = args.clone();
        if let Some(input) = subject.input {
            for (n, flag) in input.secret_flags().into_iter().enumerate() {
                secret = with(&secret, &flag, &format!("{CANARY}-flag{n}"));
            }
            for name in input.properties() {
                if takes_url(&name, input.property(&name)) {
                    if let Some(flag) = input.flag(&name) {
                        secret = with(&secret, &flag, &canary_url());
                    }
                }
            }
        }
        if subject.takes("--debug") {
            let mut debug = secret.clone();
            debug.push("--debug".into());
            probes.push(debug);
        }
        probes.push(secret);
    }
    let mut usage = subject.entry.words();
    usage.extend([
        "--token".to_owned(),
        format!("{CANARY}-arg0"),
        format!("--api-key={CANARY}-arg1"),
    ]);
    probes.push(usage);
    // The last probe is a usage error on purpose: what its stream shows is check 5's domain,
    // judged there with its own usage probe, so it counts once.
    let usage_probe = probes.len() - 1;
    let mut runs = 0;
    for (i, args) in probes.iter().enumerate() {
        let run = if i == usage_probe {
            subject.exec_judged_here(args, &extras)
        } else {
            subject.exec(args, &extras)
        };
        let captured = match run {
            Ok(c) => c,
            Err(why) => return judge.could_not_run(why),
        };
        runs += 1;
        if let Some(evidence) = leak(&captured) {
            return judge
                .fail("a secret value appears in the output")
                .evidence(evidence);
        }
    }
    // Human mode too: the same base invocation without --output.
    if let Ok(args) = &subject.base {
        if !subject.entry.unbounded {
            let sandbox = match subject.fresh() {
                Ok(s) => s,
                Err(why) => return judge.could_not_run(why),
            };
            let inv = subject.human_invocation_of(args, &extras);
            let before = match snapshot(&sandbox) {
                Ok(s) => s,
                Err(why) => return judge.could_not_run(why),
            };
            if let Ok(run) = sandbox.run(&inv) {
                runs += 1;
                let changes = subject
                    .changes_since(&sandbox, &before, &run.argv)
                    .unwrap_or_default();
                // Human output is no AOI stream: nothing to hold against the stream checks.
                let captured = subject.judge_unrecorded(run, changes);
                if let Some(evidence) = leak(&captured) {
                    return judge
                        .fail("a secret value appears in human-mode output")
                        .evidence(evidence);
                }
            }
        }
    }
    judge.pass(format!(
        "no secret from the environment, secret flags, a URL's credentials or an unknown --token appeared, raw or encoded, in {runs} run(s)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_the_standard_alphabet() {
        assert_eq!(base64(b"Man"), "TWFu");
        assert_eq!(base64(b"Ma"), "TWE");
        assert_eq!(base64(b"M"), "TQ");
        assert_eq!(base64(b"\xfb\xff"), "+/8");
    }

    #[test]
    fn an_encoded_canary_is_found_at_any_offset_in_a_longer_text() {
        let needles = needles();
        let found = |text: &str| needles.iter().any(|n| text.contains(n.as_str()));
        for prefix in ["", "B", "Be", "Bearer "] {
            let secret = format!("{prefix}{CANARY}-flag0 and more");
            let encoded = base64(secret.as_bytes());
            assert!(found(&encoded), "base64 of {secret:?}: {encoded}");
            let url_safe = encoded.replace('+', "-").replace('/', "_");
            assert!(found(&url_safe), "base64url of {secret:?}");
        }
        let hex: String = CANARY.bytes().map(|b| format!("{b:02x}")).collect();
        assert!(found(&format!("token={hex}00")));
        let percent: String = CANARY.bytes().map(|b| format!("%{b:02X}")).collect();
        assert!(found(&percent));
        assert!(!found("aoi-lint-canary-redacted ***"));
    }

    #[test]
    fn url_properties_are_told_by_name_or_format() {
        assert!(takes_url("url", None));
        assert!(takes_url("webhook_url", None));
        assert!(takes_url(
            "target",
            Some(&serde_json::json!({"format": "uri"}))
        ));
        assert!(!takes_url(
            "title",
            Some(&serde_json::json!({"type": "string"}))
        ));
    }

    #[test]
    fn a_secret_hidden_behind_json_escapes_is_found_once_decoded() {
        let escaped: String = CANARY
            .chars()
            .map(|c| format!("\\u{:04x}", u32::from(c)))
            .collect();
        let line = format!(r#"{{"type":"aoi:meta","args":["--token","{escaped}"]}}"#);
        assert!(!line.contains(CANARY), "the raw bytes do not show it");
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(decoded_leak(&value).as_deref(), Some(CANARY));
        let slashes = serde_json::json!({"k": format!("x{CANARY}y"), "ok": 1});
        assert!(decoded_leak(&slashes).is_some());
        assert!(decoded_leak(&serde_json::json!({"token": "[REDACTED]"})).is_none());
    }
}
