//! One body serves both output modes (`App::run`): the exit status is the machine mode's in
//! human mode too, for every category of §9.2 and for a refusal (§6: the status says how the
//! run ended, whatever the format), and human mode shows what the stream says.
//!
//! The program is the SDK's `feed` example, whose `list` fails at once with `--fail-with C`
//! (an `authz` failure as a refusal, `reason:"denied"`).

use std::process::{Command, Output, Stdio};

use aoi::Category;

/// `feed ARGS`, no colour, stdin closed.
fn feed(args: &[&str]) -> Output {
    Command::new(crate::stdout_faults::feed())
        .args(args)
        .env_remove("FEED_TOKEN")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("feed runs")
}

#[test]
fn every_category_exits_the_same_in_human_and_machine_mode() {
    for category in Category::ALL {
        let name = category.as_str();
        let machine = feed(&["list", "--fail-with", name, "--output", "jsonl"]);
        let human = feed(&["list", "--fail-with", name]);
        let expected = if category == Category::Authz {
            aoi::exit_code::NO_PERM
        } else {
            category.exit_code()
        };
        assert_eq!(
            (machine.status.code(), human.status.code()),
            (Some(i32::from(expected)), Some(i32::from(expected))),
            "{name}: machine and human mode exit differently"
        );
        // Human mode says it on stderr, one line and no JSON on stdout.
        let stderr = String::from_utf8_lossy(&human.stderr);
        assert_eq!(
            stderr, "error: --fail-with asked for this failure\n",
            "{name}"
        );
        assert!(human.stdout.is_empty(), "{name}: {:?}", human.stdout);
    }
}

#[test]
fn a_page_is_a_table_in_human_mode_with_the_command_line_of_the_next_one() {
    let out = feed(&["list", "--limit", "2", "--prefix", "Item 1"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["ID", "N", "TITLE"]
    );
    assert!(lines[1].starts_with("item-0001  1   Item 1"), "{text}");
    let more = lines[3]
        .strip_prefix("more: feed list --limit 2 --prefix 'Item 1' --cursor ")
        .unwrap_or_else(|| panic!("no whole next command: {text}"));
    // The line pasted gives the next page, as machine mode's next_cursor does.
    let next = feed(&[
        "list", "--limit", "2", "--prefix", "Item 1", "--cursor", more,
    ]);
    let text = String::from_utf8_lossy(&next.stdout);
    assert!(
        text.lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("item-0011")),
        "{text}"
    );
}
