//! Human mode: what a person sees, as snapshots headed by the exit code.

use crate::support::Db;

#[test]
fn human_list_search_get_and_refusal() {
    let db = Db::new("human");
    let a = db.create(&[
        "--title",
        "Agent operable tools",
        "--body",
        "Tools agents can operate",
        "--tag",
        "work",
        "--tag",
        "cli",
    ]);
    let b = db.create(&[
        "--title",
        "Groceries",
        "--body",
        "milk, eggs",
        "--collection",
        "home",
    ]);
    let ids = [a.as_str(), b.as_str()];
    insta::assert_snapshot!(db.run(&["list"]).transcript(&ids), @r"
    exit: 0
    --- stdout
    ID                              COLLECTION  TAGS      UPDATED   TITLE
    doc_1_________________________  inbox       work,cli  just now  Agent operable tools
    doc_2_________________________  home        -         just now  Groceries
    --- stderr
    ");
    insta::assert_snapshot!(db.run(&["search", "agents"]).transcript(&ids), @r"
    exit: 0
    --- stdout
    #  ID                              TITLE                 SNIPPET
    1  doc_1_________________________  Agent operable tools  Tools [agents] can operate
    1 match(es)
    --- stderr
    ");
    insta::assert_snapshot!(db.run(&["get", &b]).transcript(&ids), @r"
    exit: 0
    --- stdout
    doc_2_________________________  Groceries
    collection home  tags -  version 1  updated just now

    milk, eggs
    --- stderr
    ");
    insta::assert_snapshot!(db.run(&["delete", &a, &b]).transcript(&ids), @r"
    exit: 77
    --- stdout
    --- stderr
    error: refusing to delete 2 items without --confirm
      hint: re-run with --confirm --confirm-count 2
    ");
    insta::assert_snapshot!(db.run(&["get", "doc_nope"]).transcript(&ids), @r"
    exit: 66
    --- stdout
    --- stderr
    error: no document with id doc_nope
      hint: run `outline list` or `outline search QUERY` to find document ids
    ");
}
