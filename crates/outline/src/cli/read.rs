//! The read commands: `get`, `list` and `search` (§15 bounded reads).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use aoi::app::{App, Limits};
use aoi::surface::cursor::{check_limit, CursorCodec};
use aoi::surface::flags::{GlobalArgs, PageArgs};
use aoi::{EmitError, Emitter, Failure, Outcome};
use clap::Args;
use outline::store::{plain_query, ListPage, ListPosition, SearchPage, SearchPosition};

use super::errors::RunError;
use super::events::{Entry, HitEvent};
use super::{human, human_failure, open_store, Access, FilterArgs};

/// `outline get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// The document's id.
    id: String,
    /// Cut the body at N bytes (on a character boundary); the summary then says `truncated`.
    #[arg(long, value_name = "N")]
    max_bytes: Option<u64>,
}

/// The entry of a document with its body cut at `max_bytes`, and whether it was cut.
fn fetch_entry(db: Option<PathBuf>, args: &GetArgs) -> Result<(Entry, bool), RunError> {
    let store = open_store(db, Access::Read)?;
    let doc = store.get(&args.id)?;
    let full = doc.body.len();
    let mut cut = full;
    if let Some(max) = args.max_bytes {
        cut = usize::try_from(max).unwrap_or(usize::MAX).min(full);
        while !doc.body.is_char_boundary(cut) {
            cut -= 1;
        }
    }
    let truncated = cut < full;
    let mut entry = Entry::header(&doc);
    entry.body = Some(doc.body[..cut].to_owned());
    entry.body_bytes = Some(full as u64);
    entry.body_truncated = Some(truncated);
    Ok((entry, truncated))
}

/// Runs `outline get`.
pub fn get(app: &App, global: &GlobalArgs, db: Option<PathBuf>, args: GetArgs) -> ExitCode {
    if !global.machine() {
        return match fetch_entry(db, &args) {
            Ok((entry, truncated)) => {
                human::line(&format!("{}  {}", entry.id, entry.title));
                human::line(&format!(
                    "collection {}  tags {}  version {}  updated {}",
                    entry.collection,
                    human::tags(&entry.tags),
                    entry.version,
                    human::ago(entry.updated_at)
                ));
                human::line("");
                human::line(entry.body.as_deref().unwrap_or_default());
                if truncated {
                    human::line(&format!(
                        "… (cut at {} of {} bytes)",
                        entry.body.as_deref().map_or(0, str::len),
                        entry.body_bytes.unwrap_or(0)
                    ));
                }
                ExitCode::SUCCESS
            }
            Err(e) => human_failure(e, global.color_allowed()),
        };
    }
    app.run(global, "get", |out| {
        let (entry, truncated) = fetch_entry(db, &args)?;
        out.emit(&entry)?;
        let outcome = Outcome::success();
        Ok(if truncated {
            outcome.truncated(None)
        } else {
            outcome
        })
    })
}

/// One page of `list`, with the codec that wraps its positions in cursors.
fn fetch_list(
    db: Option<PathBuf>,
    filter: &FilterArgs,
    page: &PageArgs,
) -> Result<(ListPage, CursorCodec), RunError> {
    let limit = check_limit(page.limit)?;
    let codec = CursorCodec::new("list", filter);
    let after: Option<ListPosition> = page
        .cursor
        .as_deref()
        .map(|c| codec.decode(c))
        .transpose()?;
    let store = open_store(db, Access::Read)?;
    let result = store.list(&filter.to_filter(), after, limit)?;
    Ok((result, codec))
}

fn emit_list<W: Write>(
    out: &mut Emitter<W>,
    db: Option<PathBuf>,
    filter: &FilterArgs,
    page: &PageArgs,
) -> Result<Outcome, RunError> {
    let (result, codec) = fetch_list(db, filter, page)?;
    let mut last: Option<ListPosition> = None;
    for doc in &result.documents {
        match out.emit(&Entry::header(doc)) {
            // --max-bytes: continue after the last entry that went out.
            Err(EmitError::ByteLimit) => {
                let next = match last {
                    Some(p) => Some(codec.encode(&p)),
                    None => page.cursor.clone(),
                };
                return Ok(Outcome::success().truncated(next));
            }
            other => other?,
        }
        last = Some(doc.list_position());
    }
    Ok(match result.next {
        Some(next) => Outcome::success().truncated(Some(codec.encode(&next))),
        None => Outcome::success(),
    })
}

/// Runs `outline list`.
pub fn list(
    app: &App,
    global: &GlobalArgs,
    db: Option<PathBuf>,
    filter: FilterArgs,
    page: PageArgs,
) -> ExitCode {
    if !global.machine() {
        return match fetch_list(db, &filter, &page) {
            Ok((result, codec)) => {
                if result.documents.is_empty() {
                    human::line("no documents");
                    return ExitCode::SUCCESS;
                }
                let rows: Vec<Vec<String>> = result
                    .documents
                    .iter()
                    .map(|d| {
                        vec![
                            d.id.clone(),
                            d.collection.clone(),
                            human::tags(&d.tags),
                            human::ago(d.updated_at),
                            d.title.clone(),
                        ]
                    })
                    .collect();
                human::table(
                    human::Paint::stdout(global),
                    &["ID", "COLLECTION", "TAGS", "UPDATED", "TITLE"],
                    &rows,
                );
                if let Some(next) = result.next {
                    human::line(&human::Paint::stdout(global).dim(&format!(
                        "more: outline list --cursor {}",
                        codec.encode(&next)
                    )));
                }
                ExitCode::SUCCESS
            }
            Err(e) => human_failure(e, global.color_allowed()),
        };
    }
    let limits = Limits::for_page(&page);
    app.run_with(global, "list", limits, |out| {
        emit_list(out, db, &filter, &page).map_err(Failure::from)
    })
}

/// One page of `search`, with the codec that wraps its positions in cursors.
fn fetch_search(
    db: Option<PathBuf>,
    query: &str,
    filter: &FilterArgs,
    page: &PageArgs,
) -> Result<(SearchPage, CursorCodec), RunError> {
    let limit = check_limit(page.limit)?;
    let codec = CursorCodec::new("search", &(query, filter));
    let after: Option<SearchPosition> = page
        .cursor
        .as_deref()
        .map(|c| codec.decode(c))
        .transpose()?;
    let mut store = open_store(db, Access::Read)?;
    let result = store.search(&plain_query(query), &filter.to_filter(), after, limit)?;
    Ok((result, codec))
}

fn emit_search<W: Write>(
    out: &mut Emitter<W>,
    db: Option<PathBuf>,
    query: &str,
    filter: &FilterArgs,
    page: &PageArgs,
) -> Result<Outcome, RunError> {
    let (result, codec) = fetch_search(db, query, filter, page)?;
    let total = result.total;
    let mut last: Option<u64> = None;
    for hit in result.hits {
        let rank = hit.rank;
        match out.emit(&HitEvent::from_hit(hit)) {
            // --max-bytes: continue after the last hit that went out, in the same snapshot.
            // A page that fit the limit has no snapshot, so there is no cursor to give.
            Err(EmitError::ByteLimit) => {
                let next = match (result.next, last) {
                    (Some(next), Some(rank)) => Some(codec.encode(&next.after_rank(rank))),
                    (_, None) => page.cursor.clone(),
                    (None, Some(_)) => None,
                };
                return Ok(Outcome::success().truncated(next).property("total", total));
            }
            other => other?,
        }
        last = Some(rank);
    }
    let outcome = Outcome::success().property("total", total);
    Ok(match result.next {
        Some(next) => outcome.truncated(Some(codec.encode(&next))),
        None => outcome,
    })
}

/// Runs `outline search`.
pub fn search(
    app: &App,
    global: &GlobalArgs,
    db: Option<PathBuf>,
    query: String,
    filter: FilterArgs,
    page: PageArgs,
) -> ExitCode {
    if !global.machine() {
        return match fetch_search(db, &query, &filter, &page) {
            Ok((result, codec)) => {
                if result.hits.is_empty() {
                    human::line("no matches");
                    return ExitCode::SUCCESS;
                }
                let paint = human::Paint::stdout(global);
                let (open, close) = paint.match_marks();
                let rows: Vec<Vec<String>> = result
                    .hits
                    .iter()
                    .map(|h| {
                        vec![
                            h.rank.to_string(),
                            h.id.clone(),
                            h.title.clone(),
                            h.snippet.marked(open, close).replace('\n', " "),
                        ]
                    })
                    .collect();
                human::table(paint, &["#", "ID", "TITLE", "SNIPPET"], &rows);
                human::line(&format!("{} match(es)", result.total));
                if let Some(next) = result.next {
                    human::line(&paint.dim(&format!(
                        "more: outline search {query:?} --cursor {}",
                        codec.encode(&next)
                    )));
                }
                ExitCode::SUCCESS
            }
            Err(e) => human_failure(e, global.color_allowed()),
        };
    }
    let limits = Limits::for_page(&page);
    app.run_with(global, "search", limits, |out| {
        emit_search(out, db, &query, &filter, &page).map_err(Failure::from)
    })
}
