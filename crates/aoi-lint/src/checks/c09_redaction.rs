//! Check 9, Safe (§11): secrets placed in the environment, in the flags the input schema
//! marks secret, and after a sensitive-looking unknown flag never appear on stdout or
//! stderr, in machine mode, in human mode or under `--debug`.

use super::{id, Judge};
use crate::model::{CheckId, CheckResult, Evidence};
use crate::subject::{cut, Captured, Extras, Subject};

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

/// Where the canary shows, if it does.
fn leak(captured: &Captured) -> Option<Evidence> {
    for (stream, bytes) in [
        ("stdout", &captured.run.stdout),
        ("stderr", &captured.run.stderr),
    ] {
        let text = String::from_utf8_lossy(bytes);
        if let Some(at) = text.find(CANARY) {
            let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
            return Some(Evidence {
                invocation: captured.run.argv.clone(),
                line: None,
                excerpt: Some(format!("{stream}: {}", cut(&text[start..], 300))),
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
                secret.push(flag);
                secret.push(format!("{CANARY}-flag{n}"));
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
            if let Ok(run) = sandbox.run(&inv) {
                runs += 1;
                // Human output is no AOI stream: nothing to hold against the stream checks.
                let captured = subject.judge_unrecorded(run, Vec::new());
                if let Some(evidence) = leak(&captured) {
                    return judge
                        .fail("a secret value appears in human-mode output")
                        .evidence(evidence);
                }
            }
        }
    }
    judge.pass(format!(
        "no secret from the environment, secret flags or an unknown --token appeared in {runs} run(s)"
    ))
}
