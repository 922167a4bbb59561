//! Check 11, Bounded · Streamable (§15): with `--limit 1`, following `next_cursor` visits
//! every item once, and `truncated` agrees with whether a cursor is given; without
//! `--limit`, a default page that holds less than everything says `truncated:true`.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{id, Judge};
use crate::model::{CheckId, CheckResult};
use crate::subject::{with, without, Extras, Subject};

/// This check.
pub const ID: CheckId = id(11);

/// The most pages lint follows.
const MAX_PAGES: usize = 200;

/// How an item is told apart from another: its `id`, else its whole payload.
fn identity(fields: &Map<String, Value>) -> String {
    match fields.get("id") {
        Some(Value::String(id)) => id.clone(),
        Some(other) => other.to_string(),
        None => {
            let mut payload = fields.clone();
            payload.remove("rank");
            Value::Object(payload).to_string()
        }
    }
}

/// Runs the check for one command.
pub fn run(subject: &Subject<'_>) -> CheckResult {
    let judge = Judge::new(ID, subject);
    if !subject.takes("--limit") {
        return judge.not_applicable("does not advertise --limit");
    }
    let base = match &subject.base {
        Ok(args) => args.clone(),
        Err(why) => return judge.could_not_run(why.clone()),
    };
    let sandbox = match subject.fresh() {
        Ok(s) => s,
        Err(why) => return judge.could_not_run(why),
    };
    let cursors = subject.takes("--cursor");
    let first = with(&base, "--limit", "1");
    let mut args = first.clone();
    let mut seen: Vec<String> = Vec::new();
    let mut unique = HashSet::new();
    let mut pages = 0;
    loop {
        let page = match subject.exec_in(&sandbox, &args, &Extras::default()) {
            Ok(p) => p,
            Err(why) => return judge.could_not_run(why),
        };
        pages += 1;
        if !page.succeeded() {
            let detail = format!("page {pages} did not succeed ({})", page.ending());
            return if pages == 1 {
                judge.could_not_run(detail).evidence(page.evidence())
            } else {
                judge.fail(detail).evidence(page.evidence())
            };
        }
        let items: Vec<&Map<String, Value>> = page.domain().collect();
        if items.len() > 1 {
            return judge
                .fail(format!("--limit 1 returned {} items", items.len()))
                .evidence(page.evidence());
        }
        for item in items {
            let key = identity(item);
            if !unique.insert(key.clone()) {
                return judge
                    .fail(format!("page {pages} repeats an item already seen: {key}"))
                    .evidence(page.evidence());
            }
            seen.push(key);
        }
        let truncated = page.summary().and_then(|s| s.truncated) == Some(true);
        let next = page.summary().and_then(|s| s.next_cursor.as_deref());
        match (truncated, next) {
            (false, Some(_)) => {
                return judge
                    .fail(format!("page {pages} gives a next_cursor but says truncated:false"))
                    .evidence(page.evidence())
            }
            (true, None) if cursors => {
                return judge
                    .fail(format!(
                        "page {pages} says truncated:true but gives no next_cursor, though the command takes --cursor"
                    ))
                    .evidence(page.evidence())
            }
            (true, Some(cursor)) if cursors => {
                if pages >= MAX_PAGES {
                    return judge.pass(format!(
                        "{pages} pages of one item, each new; stopped following at {MAX_PAGES}"
                    ));
                }
                args = with(&first, "--cursor", cursor);
            }
            _ => break,
        }
    }
    // The pages together hold what one large page holds: nothing skipped.
    let whole = match subject.exec_in(
        &sandbox,
        &with(&base, "--limit", "1000"),
        &Extras::default(),
    ) {
        Ok(w) => w,
        Err(why) => return judge.could_not_run(why),
    };
    let complete = whole.summary().and_then(|s| s.truncated) != Some(true);
    if cursors && complete && whole.succeeded() {
        let all: HashSet<String> = whole.domain().map(identity).collect();
        if let Some(missing) = all.iter().find(|k| !unique.contains(*k)) {
            return judge
                .fail(format!(
                    "following cursors missed an item a single --limit 1000 page has: {missing}"
                ))
                .evidence(whole.evidence());
        }
    }
    if !cursors && seen.len() == 1 && whole.domain().count() > 1 {
        let truncated = whole.summary().is_some_and(|s| s.truncated.is_some());
        if !truncated {
            return judge.fail("--limit 1 cut the result but its summary has no truncated field");
        }
    }
    // §15: bounded by default. Without --limit, a page that holds fewer items than there are
    // says truncated:true.
    let total = unique
        .len()
        .max(if complete { whole.domain().count() } else { 0 });
    let default_args = without(&base, "--limit", true);
    let default = match subject.exec_in(&sandbox, &default_args, &Extras::default()) {
        Ok(d) => d,
        Err(why) => return judge.could_not_run(why),
    };
    if default.succeeded() {
        let shown = default.domain().count();
        let truncated = default.summary().and_then(|s| s.truncated) == Some(true);
        if shown < total && !truncated {
            return judge
                .fail(format!(
                    "without --limit it returned {shown} of {total} items and its summary does not say truncated:true (§15)"
                ))
                .evidence(default.evidence());
        }
    }
    // Fewer than two items cannot show a cut, a cursor or a repeat: nothing was proven.
    if seen.len() < 2 {
        return judge.could_not_run(format!(
            "the example lists {} item(s), too few to page through; give setup data (capabilities `setup` or aoi-lint.toml) so it lists at least 2",
            seen.len()
        ));
    }
    judge.pass(format!(
        "--limit 1 and next_cursor: {pages} page(s), {} item(s), each once; truncated agrees with the cursor",
        seen.len()
    ))
}
