//! Bounded pages with cursors (§15): this tool's `--limit`/`--cursor`/`--max-bytes`, a page of
//! items or item errors, and how a page is written as events with its outcome.

use std::io::Write;

use aoi::surface::cursor::CursorCodec;
use aoi::surface::flags::{PageArgs, PageDefaults};
use aoi::{Category, Code, DomainEvent, EmitError, Emitter, ErrorEvent, Outcome};
use serde::Serialize;

use crate::{DEFAULT_LIMIT, DEFAULT_MAX_BYTES};

/// This tool's paging defaults (§15): `--limit` 100, `--max-bytes` 64 KiB.
#[derive(Debug, Clone, Copy)]
pub struct Defaults;

impl PageDefaults for Defaults {
    const LIMIT: usize = DEFAULT_LIMIT;
    const MAX_BYTES: Option<u64> = Some(DEFAULT_MAX_BYTES);
}

/// Bounded reads (§15) with this tool's defaults: the SDK's flags.
pub type Bounds = PageArgs<Defaults>;

/// One position of a page: a domain event, or the item-scope error that stands in its place.
#[derive(Debug)]
pub enum Item<T> {
    /// A result.
    Event(T),
    /// A problem with one item; the walk went on (§9.1 `scope: "item"`).
    Error(Box<ErrorEvent>),
}

/// A bounded, ordered page of items, each with the position a cursor resumes after.
#[derive(Debug)]
pub struct Page<T> {
    /// The items in order, with their positions.
    pub items: Vec<(String, Item<T>)>,
    /// More items exist after the last one (the limit cut the page).
    pub more: bool,
    /// The run did not do what was asked (an operand could not be read): `ok:false`, however
    /// much else was listed. A problem deeper in a walk only makes the run `partial`.
    pub failed: bool,
    /// Tool-specific summary properties.
    pub properties: Vec<(String, serde_json::Value)>,
}

impl<T> Default for Page<T> {
    fn default() -> Self {
        Page {
            items: Vec::new(),
            more: false,
            failed: false,
            properties: Vec::new(),
        }
    }
}

impl<T> Page<T> {
    /// The number of items, events and errors alike.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when the page holds nothing.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Adds a result at `position`.
    pub fn event(&mut self, position: String, event: T) {
        self.items.push((position, Item::Event(event)));
    }

    /// Adds an item-scope error at `position`.
    pub fn error(&mut self, position: String, error: ErrorEvent) {
        self.items
            .push((position, Item::Error(Box::new(error.item()))));
    }

    /// The number of item errors.
    pub fn error_count(&self) -> usize {
        self.items
            .iter()
            .filter(|(_, i)| matches!(i, Item::Error(_)))
            .count()
    }
}

impl<T: DomainEvent> Page<T> {
    /// Writes the page as events and returns its outcome: `truncated` with a `next_cursor` when
    /// the limit or `--max-bytes` cut it, `partial` when an item failed beside a result
    /// (§8.3, §15). `codec` mints the cursors.
    pub fn emit<W: Write>(
        self,
        out: &mut Emitter<W>,
        codec: &CursorCodec,
    ) -> Result<Outcome, EmitError> {
        let mut last: Option<String> = None;
        let mut outcome = if self.failed {
            Outcome::failed()
        } else {
            Outcome::success()
        };
        for (key, value) in &self.properties {
            outcome = outcome.property(key.clone(), value.clone());
        }
        for (position, item) in self.items {
            match item {
                Item::Event(event) => match out.emit(&event) {
                    Err(EmitError::ByteLimit) => {
                        let next = last.as_ref().map(|p| codec.encode(p));
                        return Ok(outcome.truncated(next));
                    }
                    other => other?,
                },
                Item::Error(error) => out.error(&error)?,
            }
            last = Some(position);
        }
        if self.more {
            let next = last.as_ref().map(|p| codec.encode(p));
            outcome = outcome.truncated(next);
        }
        Ok(outcome)
    }
}

/// A cursor this tool could have issued but that names no position of this request: a
/// `validation` error with the SDK's `CURSOR_INVALID` code, `field: "cursor"` (§15).
pub fn cursor_invalid(message: &str) -> ErrorEvent {
    ErrorEvent::new(
        Category::Validation,
        aoi::surface::cursor::CURSOR_INVALID,
        message,
    )
    .field("cursor")
    .hint("run again without --cursor")
}

/// A cursor whose position is gone (the listing or file changed between pages), so the next
/// page could skip or repeat items: `validation` `CURSOR_STALE`, `field: "cursor"` (§15).
pub fn cursor_stale(why: &str) -> ErrorEvent {
    ErrorEvent::new(
        Category::Validation,
        Code::from_static("CURSOR_STALE"),
        format!("{why} since this cursor was issued, so the next page could skip or repeat items"),
    )
    .field("cursor")
    .hint("run again without --cursor")
}

/// A serializable unit for positions that carry no data.
#[derive(Debug, Serialize)]
pub struct NoShape;
