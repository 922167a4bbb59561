#!/usr/bin/env python3
"""Documents for bench/outline.sh, and the raw SQLite floor of importing them.

    gen_docs.py gen OUT.jsonl [N]     write N (default 100,000) `outline import` records and
                                      OUT.queries.json (the queries, with their match counts)
    gen_docs.py floor DB IN.jsonl     a floor: insert the same records with Python's sqlite3
                                      into outline's tables and FTS5 index, in one transaction,
                                      one row at a time as outline does
    gen_docs.py sql IN.jsonl          print the SQL-only floor, a script for the sqlite3 shell
                                      (`sqlite3 DB ".read FILE"`): `.import` the lines, then
                                      fill the same tables with one INSERT ... SELECT each

Deterministic (fixed seed, no clock). The text is made of 50,000 pronounceable pseudo-words
drawn with Zipf frequencies (s = 1), so a few words are in most documents and most words are
in a handful: search selectivity behaves as it does on natural text. Bodies are 4-6 sentences
(about 250-550 bytes), titles 3-7 words, 0-3 tags from 40, one of 8 collections.
"""
import json
import random
import re
import sqlite3
import sys
from itertools import accumulate

SEED = 20261130
VOCAB = 50_000


def vocabulary(rng):
    onsets = ["", "b", "br", "c", "ch", "d", "dr", "f", "fl", "g", "gr", "h", "j", "k", "l",
              "m", "n", "p", "pl", "qu", "r", "s", "sh", "st", "t", "th", "tr", "v", "w", "z"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ea", "io", "ou", "y"]
    codas = ["", "", "", "n", "r", "s", "l", "m", "nd", "st", "rk", "x", "t"]
    words, seen = [], set()
    while len(words) < VOCAB:
        n = rng.choice((1, 2, 2, 2, 3, 3, 4))
        w = "".join(rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas) for _ in range(n))
        if 2 <= len(w) <= 14 and w not in seen:
            seen.add(w)
            words.append(w)
    return words


def gen(out, n):
    rng = random.Random(SEED)
    words = vocabulary(rng)
    cum = list(accumulate(1.0 / (r + 1) for r in range(VOCAB)))
    tags = [f"t{w}" for w in rng.sample(words[:2000], 40)]
    collections = ["inbox", "notes", "research", "ops", "design", "journal", "archive", "ref"]
    df = {}
    with open(out, "w", encoding="utf-8") as f:
        for _ in range(n):
            title_words = rng.choices(words, cum_weights=cum, k=rng.randint(3, 7))
            sentences = []
            for _ in range(rng.randint(4, 6)):
                s = rng.choices(words, cum_weights=cum, k=rng.randint(6, 12))
                sentences.append(s[0].capitalize() + " " + " ".join(s[1:]) + rng.choice(".....?!"))
            body = " ".join(sentences)
            rec = {"title": " ".join(title_words).capitalize(), "body": body}
            k = rng.choice((0, 1, 1, 2, 2, 3))
            if k:
                rec["tags"] = rng.sample(tags, k)
            rec["collection"] = rng.choice(collections)
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
            text = " ".join(title_words) + " " + body + " " + " ".join(rec.get("tags", []))
            for w in set(re.findall(r"[a-z]+", text.lower())):
                df[w] = df.get(w, 0) + 1
    # Queries, chosen by document frequency (the same count FTS5 matches for one bare term):
    # the first word by Zipf rank whose frequency is 5-15 (selective), and the one nearest
    # 20% of the documents (common).
    selective = next(w for w in words if 5 <= df.get(w, 0) <= 15)
    common = min(words[:500], key=lambda w: abs(df.get(w, 0) - n // 5))
    queries = {"documents": n,
               "selective": {"query": selective, "matches": df[selective]},
               "common": {"query": common, "matches": df[common]}}
    with open(out.rsplit(".", 1)[0] + ".queries.json", "w") as f:
        json.dump(queries, f, indent=1)
    print(json.dumps(queries))


# outline's schema (crates/outline/src/store/schema.rs), less the tables an import does not
# write; the floor writes the same rows an import does: a document, its tag rows, its FTS5
# entry and a `created` change. FTS5's `hashsize` (pending-terms buffer) is set to 64 MiB right
# after the table is created, as outline's migration 2 does, so both floors flush the index as
# outline does.
FLOOR_SCHEMA = """
CREATE TABLE documents (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE, title TEXT NOT NULL, body TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '', collection TEXT NOT NULL DEFAULT 'inbox',
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    version INTEGER NOT NULL DEFAULT 1);
CREATE INDEX documents_by_collection ON documents (collection, seq);
CREATE TABLE document_tags (tag TEXT NOT NULL, doc INTEGER NOT NULL,
    PRIMARY KEY (tag, doc)) WITHOUT ROWID;
CREATE VIRTUAL TABLE documents_fts USING fts5 (title, body, tags, content = 'documents',
    content_rowid = 'seq', tokenize = 'unicode61 remove_diacritics 2');
INSERT INTO documents_fts (documents_fts, rank) VALUES ('hashsize', 67108864);
CREATE TABLE changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL,
    kind TEXT NOT NULL, doc_id TEXT NOT NULL, version INTEGER NOT NULL,
    collection TEXT NOT NULL, origin TEXT);
"""


def floor(db, path):
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.executescript(FLOOR_SCHEMA)
    now = 1_796_000_000_000
    conn.execute("BEGIN")
    ins_doc = "INSERT INTO documents (id, title, body, tags, collection, created_at, updated_at) " \
              "VALUES (?, ?, ?, ?, ?, ?, ?)"
    ins_fts = "INSERT INTO documents_fts (rowid, title, body, tags) VALUES (?, ?, ?, ?)"
    ins_tag = "INSERT INTO document_tags (tag, doc) VALUES (?, ?)"
    ins_chg = "INSERT INTO changes (at, kind, doc_id, version, collection) VALUES (?, 'created', ?, 1, ?)"
    cur = conn.cursor()
    n = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            n += 1
            doc_id = f"doc_{n:026d}"
            tags = r.get("tags") or []
            tag_text = " ".join(tags)
            coll = r.get("collection") or "inbox"
            cur.execute(ins_doc, (doc_id, r["title"], r.get("body", ""), tag_text, coll, now, now))
            seq = cur.lastrowid
            cur.execute(ins_fts, (seq, r["title"], r.get("body", ""), tag_text))
            for t in tags:
                cur.execute(ins_tag, (t, seq))
            cur.execute(ins_chg, (now, doc_id, coll))
    conn.execute("COMMIT")
    conn.close()


def sql(path):
    print("PRAGMA journal_mode=WAL;\nPRAGMA synchronous=NORMAL;" + FLOOR_SCHEMA + f"""
CREATE TEMP TABLE raw (line TEXT);
.mode ascii
.separator "\x1f" "\\n"
.import {path} raw
BEGIN;
INSERT INTO documents (seq, id, title, body, tags, collection, created_at, updated_at)
  SELECT rowid, printf('doc_%026d', rowid), line->>'title', coalesce(line->>'body', ''),
         coalesce((SELECT group_concat(value, ' ') FROM json_each(line, '$.tags')), ''),
         coalesce(line->>'collection', 'inbox'), 1796000000000, 1796000000000 FROM raw;
INSERT INTO documents_fts (rowid, title, body, tags) SELECT seq, title, body, tags FROM documents;
INSERT INTO document_tags (tag, doc) SELECT j.value, r.rowid FROM raw r, json_each(r.line, '$.tags') j;
INSERT INTO changes (at, kind, doc_id, version, collection)
  SELECT created_at, 'created', id, 1, collection FROM documents;
COMMIT;""")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "gen":
        gen(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 100_000)
    elif len(sys.argv) == 4 and sys.argv[1] == "floor":
        floor(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "sql":
        sql(sys.argv[2])
    else:
        sys.exit(__doc__)
