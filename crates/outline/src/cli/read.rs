//! The read commands: `get`, `list` and `search` (§15 bounded reads).

use crate::cli::Db;
use std::io::Write;
use std::process::ExitCode;

use aoi::app::{App, Limits};
use aoi::surface::cursor::{check_limit, CursorCodec};
use aoi::surface::flags::{GlobalArgs, PageArgs};
use aoi::{EmitError, Emitter, Failure, Outcome};
use clap::Args;
use outline::store::{plain_query, ListPage, ListPosition, SearchPage, SearchPosition};

use aoi::surface::term::shell_word;

use super::errors::RunError;
use super::events::{Entry, HitEvent};
use super::name;
use super::{human, human_failure, open_store, table_ids, Access, FilterArgs};

/// `outline get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// The document's id, or the end of it that `list` and `search` show (at least 6
    /// characters, naming one document).
    id: String,
    /// Cut the body at N bytes (on a character boundary); the summary then says `truncated`.
    #[arg(long, value_name = "N")]
    max_bytes: Option<u64>,
}

/// The entry of a document with its body cut at `max_bytes`, and whether it was cut.
fn fetch_entry(db: Db, args: &GetArgs) -> Result<(Entry, bool), RunError> {
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
pub fn get(app: &App, global: &GlobalArgs, db: Db, args: GetArgs) -> ExitCode {
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
                human::body(entry.body.as_deref().unwrap_or_default());
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
    app.run(global, |out| {
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

/// One page of `list`, with the codec that wraps its positions in cursors (bound to the
/// filter and to this database: a cursor of another database is refused).
fn fetch_list(
    db: Db,
    filter: &FilterArgs,
    page: &PageArgs,
) -> Result<(ListPage, CursorCodec), RunError> {
    let limit = check_limit(page.limit)?;
    let store = open_store(db, Access::Read)?;
    let codec = CursorCodec::new(name::LIST, &(filter, store.instance()));
    let after: Option<ListPosition> = page
        .cursor
        .as_deref()
        .map(|c| codec.decode(c))
        .transpose()?;
    let result = store.list(&filter.to_filter(), after, limit)?;
    Ok((result, codec))
}

fn emit_list<W: Write>(
    out: &mut Emitter<W>,
    db: Db,
    filter: &FilterArgs,
    page: &PageArgs,
) -> Result<Outcome, RunError> {
    let (result, codec) = fetch_list(db, filter, page)?;
    let mut last: Option<ListPosition> = None;
    for doc in &result.documents {
        match out.emit(&Entry::header(doc)) {
            // --max-bytes: continue after the last entry that went out (the first always
            // goes out, so there is one).
            Err(EmitError::ByteLimit) => {
                let next = last.map(|p| codec.encode(&p)).or(page.cursor.clone());
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

/// The command line that shows the next page: this one's database, words, filter, limit and
/// byte bound, with `cursor`. Pasted into a shell, it runs.
fn next_page(
    db: &Db,
    words: &[&str],
    filter: &FilterArgs,
    page: &PageArgs,
    cursor: &str,
) -> String {
    let mut line = vec!["outline".to_owned()];
    if let Some(path) = db.named() {
        line.push("--db".into());
        line.push(shell_word(&path.display().to_string()).into_owned());
    }
    line.extend(words.iter().map(|w| shell_word(w).into_owned()));
    line.extend(filter.flags().iter().map(|w| shell_word(w).into_owned()));
    line.push(format!("--limit {}", page.limit));
    if let Some(max) = page.max_bytes {
        line.push(format!("--max-bytes {max}"));
    }
    line.push(format!("--cursor {}", shell_word(cursor)));
    line.join(" ")
}

/// How many of `rows` fit in `--max-bytes` of printed output (at least one, so a page
/// always moves on): all of them without the bound.
fn rows_within(rows: &[Vec<String>], max_bytes: Option<u64>) -> usize {
    let Some(max) = max_bytes else {
        return rows.len();
    };
    let mut used = 0u64;
    for (i, row) in rows.iter().enumerate() {
        let bytes: usize = row.iter().map(|c| c.len() + 2).sum();
        used += bytes as u64;
        if i > 0 && used > max {
            return i;
        }
    }
    rows.len()
}

/// Runs `outline list`.
pub fn list(
    app: &App,
    global: &GlobalArgs,
    db: Db,
    filter: FilterArgs,
    page: PageArgs,
) -> ExitCode {
    if !global.machine() {
        return match fetch_list(db.clone(), &filter, &page) {
            Ok((result, codec)) => {
                if result.documents.is_empty() {
                    human::line("no documents");
                    return ExitCode::SUCCESS;
                }
                let ids = table_ids(&db, result.documents.iter().map(|d| d.id.as_str()));
                let rows: Vec<Vec<String>> = result
                    .documents
                    .iter()
                    .zip(ids)
                    .map(|(d, id)| {
                        vec![
                            id,
                            d.collection.clone(),
                            human::tags(&d.tags),
                            human::ago(d.updated_at),
                            d.title.clone(),
                        ]
                    })
                    .collect();
                let shown = rows_within(&rows, page.max_bytes);
                human::table(
                    human::stdout_paint(global),
                    &["ID", "COLLECTION", "TAGS", "UPDATED", "TITLE"],
                    &rows[..shown],
                );
                let next = if shown < rows.len() {
                    Some(result.documents[shown - 1].list_position())
                } else {
                    result.next
                };
                if let Some(next) = next {
                    let command =
                        next_page(&db, &[name::LIST], &filter, &page, &codec.encode(&next));
                    human::dim_line(human::stdout_paint(global), &format!("more: {command}"));
                }
                ExitCode::SUCCESS
            }
            Err(e) => human_failure(e, global.color_allowed()),
        };
    }
    let limits = Limits::for_page(&page);
    app.run_with(global, limits, |out| {
        emit_list(out, db, &filter, &page).map_err(Failure::from)
    })
}

/// One page of `search`, with the codec that wraps its positions in cursors (bound to the
/// query, the filter and this database). With `--max-bytes` the page always has a snapshot,
/// so a page cut short can be resumed.
fn fetch_search(
    db: Db,
    query: &str,
    filter: &FilterArgs,
    page: &PageArgs,
) -> Result<(SearchPage, CursorCodec), RunError> {
    let limit = check_limit(page.limit)?;
    let mut store = open_store(db, Access::Read)?;
    let codec = CursorCodec::new(name::SEARCH, &(query, filter, store.instance()));
    let after: Option<SearchPosition> = page
        .cursor
        .as_deref()
        .map(|c| codec.decode(c))
        .transpose()?;
    let (query, filter) = (plain_query(query), filter.to_filter());
    let result = if page.max_bytes.is_some() {
        store.search_resumable(&query, &filter, after, limit)?
    } else {
        store.search(&query, &filter, after, limit)?
    };
    Ok((result, codec))
}

fn emit_search<W: Write>(
    out: &mut Emitter<W>,
    db: Db,
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
            // --max-bytes: continue after the last hit that went out, in the same snapshot
            // (the first always goes out, so there is one).
            Err(EmitError::ByteLimit) => {
                let next = match (result.resume, last) {
                    (Some(resume), Some(rank)) => Some(codec.encode(&resume.after_rank(rank))),
                    _ => page.cursor.clone(),
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
    db: Db,
    query: String,
    filter: FilterArgs,
    page: PageArgs,
) -> ExitCode {
    if !global.machine() {
        return match fetch_search(db.clone(), &query, &filter, &page) {
            Ok((result, codec)) => {
                if result.hits.is_empty() {
                    human::line("no matches");
                    return ExitCode::SUCCESS;
                }
                let paint = human::stdout_paint(global);
                let (open, close) = (human::MATCH_OPEN, human::MATCH_CLOSE);
                let ids = table_ids(&db, result.hits.iter().map(|h| h.id.as_str()));
                let rows: Vec<Vec<String>> = result
                    .hits
                    .iter()
                    .zip(ids)
                    .map(|(h, id)| {
                        vec![
                            h.rank.to_string(),
                            id,
                            h.title.clone(),
                            h.snippet.marked(open, close).replace('\n', " "),
                        ]
                    })
                    .collect();
                let shown = rows_within(&rows, page.max_bytes);
                human::table(paint, &["#", "ID", "TITLE", "SNIPPET"], &rows[..shown]);
                human::line(&format!("{} match(es)", result.total));
                let next = if shown < rows.len() {
                    result
                        .resume
                        .map(|r| r.after_rank(result.hits[shown - 1].rank))
                } else {
                    result.next
                };
                if let Some(next) = next {
                    let command = next_page(
                        &db,
                        &[name::SEARCH, &query],
                        &filter,
                        &page,
                        &codec.encode(&next),
                    );
                    human::dim_line(paint, &format!("more: {command}"));
                }
                ExitCode::SUCCESS
            }
            Err(e) => human_failure(e, global.color_allowed()),
        };
    }
    let limits = Limits::for_page(&page);
    app.run_with(global, limits, |out| {
        emit_search(out, db, &query, &filter, &page).map_err(Failure::from)
    })
}
