//! Chapter 9 of the tutorial (docs/tutorial/09-your-own-operator.md) shows what this
//! repository runs: the `kcr` commands of its shell blocks are exactly those of
//! testdata/generate.sh (same flags, same order), which `golden.rs` compares with
//! testdata/project and hack/e2e-scaffold.sh runs for real; every file of
//! testdata/project it names exists, and so does every file it links to.
//!
//! `--runtime-path` is left out of the comparison: generate.sh passes it to build in
//! place, a reader takes the default (the checkout kcr was built from).
//!
//! Chapter 10 (docs/tutorial/10-test-your-operator.md, [`chapter_10`]) runs `kcr sieve`
//! in that project: every flag it names is one `kcr sieve --help` lists, the
//! `hack/test.sh` line it quotes is testdata/project's, the bugs it plants apply to
//! testdata/project's controller as they are and are hack/sieve-planted.sh's, and every
//! path and link it names exists. Fast: nothing runs but `kcr sieve --help`.

use std::path::{Path, PathBuf};

const CHAPTER: &str = "docs/tutorial/09-your-own-operator.md";
const GENERATE: &str = "testdata/generate.sh";
const PROJECT: &str = "testdata/project";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(repo().join(relative)).expect("a file of the repository")
}

/// `lines` with each line ending in a backslash joined to the next, as the shell reads
/// them.
fn join_continuations<'a>(lines: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut joined = Vec::new();
    let mut current = String::new();
    for line in lines {
        let line = line.trim_end();
        match line.strip_suffix('\\') {
            Some(head) => {
                current.push_str(head);
                current.push(' ');
            }
            None => {
                current.push_str(line);
                joined.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.trim().is_empty() {
        joined.push(current);
    }
    joined
}

/// The lines of `markdown`'s shell blocks (fenced as sh, bash, shell or console),
/// continuations joined. Other blocks (text: output, error messages) are not commands.
fn shell_block_lines(markdown: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut fence: Option<bool> = None; // Some(is a shell block) inside a fence
    for line in markdown.lines() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => Some(matches!(info.trim(), "sh" | "bash" | "shell" | "console")),
            };
            continue;
        }
        if fence == Some(true) {
            lines.push(line);
        }
    }
    join_continuations(lines)
}

/// The words of `line` if it runs `program`: a leading `$ ` prompt and a trailing
/// `# comment` dropped, quotes around a word removed, `program` replaced by `kcr`, and
/// `--runtime-path` (with its value) left out.
fn kcr_command(line: &str, program: &str) -> Option<Vec<String>> {
    let line = line.trim_start();
    let line = line.strip_prefix("$ ").unwrap_or(line);
    let words: Vec<String> = line
        .split_whitespace()
        .take_while(|word| !word.starts_with('#'))
        .map(|word| word.trim_matches(|c| c == '"' || c == '\'').to_owned())
        .collect();
    if words.first().map(String::as_str) != Some(program) {
        return None;
    }
    let mut command = vec!["kcr".to_owned()];
    let mut rest = words.into_iter().skip(1);
    while let Some(word) = rest.next() {
        if word == "--runtime-path" {
            rest.next();
        } else if !word.starts_with("--runtime-path=") {
            command.push(word);
        }
    }
    Some(command)
}

/// The `kcr` commands of the chapter's shell blocks, one string each.
fn chapter_commands(chapter: &str) -> Vec<String> {
    shell_block_lines(chapter)
        .iter()
        .filter_map(|line| kcr_command(line, "kcr"))
        .map(|words| words.join(" "))
        .collect()
}

/// The commands testdata/generate.sh runs through `"$KCR"`, one string each.
fn generate_commands(script: &str) -> Vec<String> {
    join_continuations(script.lines())
        .iter()
        .filter_map(|line| kcr_command(line, "$KCR"))
        .map(|words| words.join(" "))
        .collect()
}

/// Every path under testdata/project that `text` names (in a link or in code), without
/// the trailing punctuation of a sentence.
fn project_paths(text: &str) -> Vec<String> {
    let mut paths = Vec::new();
    for (start, _) in text.match_indices(PROJECT) {
        let tail = &text[start + PROJECT.len()..];
        let Some(tail) = tail.strip_prefix('/') else {
            continue;
        };
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || "_-./".contains(c)))
            .unwrap_or(tail.len());
        let path = tail[..end].trim_end_matches(['.', '/']);
        if !path.is_empty() {
            paths.push(path.to_owned());
        }
    }
    paths
}

/// The targets of `markdown`'s relative links (`[text](target)`), anchors removed.
fn relative_links(markdown: &str) -> Vec<String> {
    let mut links = Vec::new();
    for (start, _) in markdown.match_indices("](") {
        let tail = &markdown[start + 2..];
        let Some(end) = tail.find(')') else {
            continue;
        };
        let target = &tail[..end];
        if target.contains("://") || target.starts_with('#') || target.starts_with("mailto:") {
            continue;
        }
        let path = target.split('#').next().unwrap_or_default();
        if !path.is_empty() {
            links.push(path.to_owned());
        }
    }
    links
}

#[test]
fn the_chapter_runs_the_commands_of_generate_sh() {
    let chapter = chapter_commands(&read(CHAPTER));
    let generate = generate_commands(&read(GENERATE));
    assert!(
        generate.len() >= 4,
        "{GENERATE}: expected its kcr init, create api and create webhook commands, found {generate:#?}"
    );
    assert_eq!(
        chapter, generate,
        "the `kcr` commands of {CHAPTER}'s shell blocks (left) differ from {GENERATE}'s (right, \
         without --runtime-path): change both, then `UPDATE_GOLDEN=1 cargo test -p kcr --test golden`"
    );
}

#[test]
fn every_testdata_project_path_the_chapter_names_exists() {
    let paths = project_paths(&read(CHAPTER));
    assert!(!paths.is_empty(), "{CHAPTER} names no file under {PROJECT}");
    let root = repo().join(PROJECT);
    let missing: Vec<&String> = paths.iter().filter(|p| !root.join(p).exists()).collect();
    assert!(
        missing.is_empty(),
        "{CHAPTER} names files that {PROJECT} does not have: {missing:?}"
    );
}

#[test]
fn every_relative_link_of_the_chapter_resolves() {
    let chapter_dir = repo().join(CHAPTER);
    let chapter_dir = chapter_dir.parent().unwrap();
    let links = relative_links(&read(CHAPTER));
    assert!(!links.is_empty(), "{CHAPTER} has no relative link");
    let broken: Vec<&String> = links
        .iter()
        .filter(|link| !chapter_dir.join(link).exists())
        .collect();
    assert!(broken.is_empty(), "{CHAPTER}: broken links {broken:?}");
}

#[test]
fn the_parsers_read_what_the_files_hold() {
    let markdown = "\
Text mentioning kcr init, not a command.

```sh
cargo install --path cmd/kcr
kcr init --domain d --repo r   # a comment
$ kcr create api --group g \\
  --version v1 --kind K
eval \"$(kcr envtest)\"
```

```text
kcr create api --group not --version a --kind Command
```
";
    assert_eq!(
        chapter_commands(markdown),
        [
            "kcr init --domain d --repo r",
            "kcr create api --group g --version v1 --kind K"
        ]
    );
    let script = "# \"$KCR\" init in a comment\n\"$KCR\" init --domain d \\\n  --runtime-path \"$RUNTIME_PATH\"\n\"$KCR\" create api --runtime-path=x --kind K\n";
    assert_eq!(
        generate_commands(script),
        ["kcr init --domain d", "kcr create api --kind K"]
    );
    assert_eq!(
        project_paths(
            "See [`PROJECT`](../../testdata/project/PROJECT) and `testdata/project/src/main.rs`. \
             The [project](../../testdata/project)."
        ),
        ["PROJECT", "src/main.rs"]
    );
    assert_eq!(
        relative_links("[a](../x.md#y), [b](https://e.org/), [c](#z), [d](README.md)"),
        ["../x.md", "README.md"]
    );
}

/// Chapter 10: `kcr sieve` in the chapter 9 project. What the chapter shows must stay
/// what kcr and the generated project are: the flags, the `hack/test.sh` line, the
/// planted bugs (as diffs against testdata/project), the paths.
mod chapter_10 {
    use std::collections::BTreeSet;
    use std::process::Command;

    use super::{read, relative_links, repo, shell_block_lines};

    const CHAPTER: &str = "docs/tutorial/10-test-your-operator.md";
    const TEST_SH: &str = "testdata/project/hack/test.sh";
    const PLANTED: &str = "hack/sieve-planted.sh";

    /// Flags the chapter's prose names that belong to other programs than `kcr sieve`:
    /// `cargo build --bin` (how the pass builds the manager), the manager's
    /// `--namespace` (how plans run side by side).
    const OTHER_PROGRAMS_FLAGS: [&str; 2] = ["--bin", "--namespace"];

    /// The long flags `kcr sieve --help` lists.
    fn sieve_help_flags() -> BTreeSet<String> {
        let output = Command::new(env!("CARGO_BIN_EXE_kcr"))
            .args(["sieve", "--help"])
            .output()
            .expect("kcr runs");
        assert!(
            output.status.success(),
            "kcr sieve --help failed: {output:?}"
        );
        long_flags(&String::from_utf8_lossy(&output.stdout))
    }

    /// The `--long-flag` words of `text` (a value after `=` dropped).
    fn long_flags(text: &str) -> BTreeSet<String> {
        text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .filter(|w| w.len() > 2 && w.starts_with("--") && w.as_bytes()[2].is_ascii_alphabetic())
            .map(str::to_owned)
            .collect()
    }

    /// `markdown` without its fenced blocks (the prose), and the fenced blocks as
    /// (info string, lines with the fence's indentation removed).
    fn split_blocks(markdown: &str) -> (String, Vec<(String, Vec<String>)>) {
        let mut prose = String::new();
        let mut blocks: Vec<(String, Vec<String>)> = Vec::new();
        let mut indent: Option<usize> = None;
        for line in markdown.lines() {
            let trimmed = line.trim_start();
            if let Some(info) = trimmed.strip_prefix("```") {
                match indent {
                    Some(_) => indent = None,
                    None => {
                        indent = Some(line.len() - trimmed.len());
                        blocks.push((info.trim().to_owned(), Vec::new()));
                    }
                }
                continue;
            }
            match indent {
                Some(n) => {
                    let body = line.get(n..).unwrap_or_else(|| line.trim_start());
                    blocks.last_mut().expect("a block").1.push(body.to_owned());
                }
                None => {
                    prose.push_str(line);
                    prose.push('\n');
                }
            }
        }
        (prose, blocks)
    }

    /// The words of the chapter's shell lines that run `kcr sieve` (or `"$KCR" sieve`).
    fn sieve_command_lines(chapter: &str) -> Vec<String> {
        shell_block_lines(chapter)
            .into_iter()
            .map(|line| line.trim().to_owned())
            .filter(|line| line.starts_with("kcr sieve") || line.starts_with("\"$KCR\" sieve"))
            .collect()
    }

    #[test]
    fn every_flag_the_chapter_names_is_kcr_sieves() {
        let chapter = read(CHAPTER);
        let help = sieve_help_flags();
        for flag in ["--full", "--replay", "--workload", "--out", "--only"] {
            assert!(
                help.contains(flag),
                "kcr sieve --help lacks {flag}: {help:?}"
            );
        }
        let commands = sieve_command_lines(&chapter);
        assert!(
            commands.len() >= 4,
            "{CHAPTER}: expected the pass, a run of one perturbation, a replay; found {commands:#?}"
        );
        let mut unknown = BTreeSet::new();
        for command in &commands {
            let command = command.split(" # ").next().unwrap_or_default();
            for flag in long_flags(command) {
                if !help.contains(&flag) {
                    unknown.insert(format!("{flag} (in `{command}`)"));
                }
            }
        }
        // The prose too (code spans, lists of flags): a flag of kcr sieve, or one of
        // another program the chapter names on purpose.
        let (prose, _) = split_blocks(&chapter);
        for flag in long_flags(&prose) {
            if !help.contains(&flag) && !OTHER_PROGRAMS_FLAGS.contains(&flag.as_str()) {
                unknown.insert(format!("{flag} (in the prose)"));
            }
        }
        assert!(
            unknown.is_empty(),
            "{CHAPTER} names flags `kcr sieve --help` does not list: {unknown:#?}\nits flags: {help:?}"
        );
    }

    #[test]
    fn the_test_sh_line_is_the_generated_projects() {
        let chapter = read(CHAPTER);
        let test_sh = read(TEST_SH);
        let quoted: Vec<String> = sieve_command_lines(&chapter)
            .into_iter()
            .filter(|line| line.starts_with("\"$KCR\""))
            .collect();
        assert_eq!(
            quoted.len(),
            1,
            "{CHAPTER} should quote hack/test.sh's `\"$KCR\" sieve` line once: {quoted:#?}"
        );
        let line = &quoted[0];
        assert!(
            test_sh.lines().any(|l| l == line),
            "{CHAPTER} quotes\n  {line}\nbut {TEST_SH} has no such line; its kcr sieve line is\n  {}",
            test_sh
                .lines()
                .find(|l| l.contains(" sieve "))
                .unwrap_or("(none)")
        );
        // Run alone (kcr for "$KCR", each ${VAR:-default} its default, quotes dropped), it
        // is the chapter's first `kcr sieve` command.
        let mut alone = line.replacen("\"$KCR\"", "kcr", 1);
        while let Some(start) = alone.find("\"${") {
            let end = start + alone[start..].find("}\"").expect("a closing }\"") + 2;
            let inner = &alone[start + 3..end - 2];
            let default = inner.split_once(":-").map_or("", |(_, d)| d).to_owned();
            alone.replace_range(start..end, &default);
        }
        let first = sieve_command_lines(&chapter)
            .into_iter()
            .find(|l| l.starts_with("kcr sieve"))
            .expect("a kcr sieve command");
        assert_eq!(
            first, alone,
            "{CHAPTER}'s first `kcr sieve` command should be hack/test.sh's, run alone"
        );
    }

    /// A unified diff hunk: `--- a/PATH`, `+++ b/PATH`, `@@ -a,b +c,d @@`, lines.
    struct Hunk {
        path: String,
        old_start: usize,
        old_count: usize,
        new_count: usize,
        lines: Vec<String>,
    }

    fn hunks(block: &[String]) -> Vec<Hunk> {
        let mut path = String::new();
        let mut found: Vec<Hunk> = Vec::new();
        for line in block {
            if let Some(p) = line.strip_prefix("+++ b/") {
                path = p.trim().to_owned();
            } else if line.starts_with("--- ") {
                continue;
            } else if let Some(header) = line.strip_prefix("@@ -") {
                let (ranges, _) = header.split_once(" @@").expect("@@ -a,b +c,d @@");
                let (old, new) = ranges.split_once(" +").expect("two ranges");
                let range = |r: &str| -> (usize, usize) {
                    let (start, count) = r.split_once(',').expect("start,count");
                    (
                        start.parse().expect("a number"),
                        count.parse().expect("a number"),
                    )
                };
                let ((old_start, old_count), (_, new_count)) = (range(old), range(new));
                found.push(Hunk {
                    path: path.clone(),
                    old_start,
                    old_count,
                    new_count,
                    lines: Vec::new(),
                });
            } else if let Some(hunk) = found.last_mut() {
                hunk.lines.push(line.clone());
            }
        }
        found
    }

    #[test]
    fn the_planted_bugs_apply_to_the_generated_controller() {
        let (_, blocks) = split_blocks(&read(CHAPTER));
        let diffs: Vec<&Vec<String>> = blocks
            .iter()
            .filter(|(info, _)| info == "diff")
            .map(|(_, lines)| lines)
            .collect();
        assert_eq!(
            diffs.len(),
            3,
            "{CHAPTER}: expected the three planted bugs as diffs"
        );
        let planted = read(PLANTED).replace("\\\"", "\"");
        for diff in diffs {
            let hunks = hunks(diff);
            assert_eq!(hunks.len(), 1, "one hunk per planted bug: {diff:#?}");
            let hunk = &hunks[0];
            let file = read(&format!("testdata/project/{}", hunk.path));
            let file: Vec<&str> = file.lines().collect();
            let old: Vec<&str> = hunk
                .lines
                .iter()
                .filter(|l| !l.starts_with('+'))
                .map(|l| l.get(1..).unwrap_or_default())
                .collect();
            let added: Vec<&str> = hunk
                .lines
                .iter()
                .filter_map(|l| l.strip_prefix('+'))
                .collect();
            assert_eq!(
                (old.len(), old.len() + added.len()),
                (hunk.old_count, hunk.new_count),
                "{CHAPTER}: the hunk header of the diff for {} does not count its lines",
                hunk.path
            );
            let at = hunk.old_start - 1;
            let actual = file.get(at..at + old.len()).unwrap_or_default();
            if actual != old.as_slice() {
                let found = file
                    .windows(old.len())
                    .position(|w| w == old.as_slice())
                    .map_or("nowhere".to_owned(), |i| format!("at line {}", i + 1));
                panic!(
                    "{CHAPTER}: a planted bug no longer applies to testdata/project/{}: its \
                     context lines are not at line {} (found {found}); the template changed: \
                     update the diff (and hack/sieve-planted.sh's anchor)",
                    hunk.path, hunk.old_start
                );
            }
            for line in added.iter().map(|l| l.trim()).filter(|l| !l.is_empty()) {
                assert!(
                    planted.contains(line),
                    "{CHAPTER} plants `{line}`, which {PLANTED} (the script that proves each \
                     planted bug is caught) does not"
                );
            }
        }
    }

    /// The repository paths the prose names, outside links (`crates/...`, `docs/...`):
    /// each must exist in the repository; the project's (`src/...`, `deploy/...`,
    /// `hack/...`): in testdata/project (or, for `hack/`, the repository). Made by a
    /// pass (`target/`) or written by the user (`hack/sieve/`): not checked.
    fn named_paths(prose: &str) -> Vec<String> {
        prose
            .split(|c: char| !(c.is_ascii_alphanumeric() || "_-./*<>".contains(c)))
            .map(|w| w.trim_end_matches(['.', '/']))
            .filter(|w| {
                [
                    "crates/",
                    "cmd/",
                    "docs/",
                    "testdata/",
                    "src/",
                    "deploy/",
                    "hack/",
                ]
                .iter()
                .any(|p| w.starts_with(p))
                    && !w.starts_with("hack/sieve/")
                    && !w.contains(['*', '<'])
            })
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn every_path_and_link_the_chapter_names_exists() {
        let chapter = read(CHAPTER);
        let root = repo();
        let (prose, _) = split_blocks(&chapter);
        let paths = named_paths(&prose);
        assert!(
            paths.iter().any(|p| p.starts_with("crates/")),
            "{CHAPTER} names no repository path: {paths:?}"
        );
        let project = root.join("testdata/project");
        let missing: Vec<&String> = paths
            .iter()
            .filter(|p| {
                let in_project = project.join(p).exists();
                let in_repo = root.join(p).exists();
                match p.split('/').next() {
                    Some("src" | "deploy") => !in_project,
                    Some("hack") => !in_project && !in_repo,
                    _ => !in_repo,
                }
            })
            .collect();
        assert!(
            missing.is_empty(),
            "{CHAPTER} names paths that do not exist: {missing:?}"
        );
        let dir = root.join(CHAPTER);
        let dir = dir.parent().expect("docs/tutorial");
        let broken: Vec<String> = relative_links(&chapter)
            .into_iter()
            .filter(|link| !dir.join(link).exists())
            .collect();
        assert!(broken.is_empty(), "{CHAPTER}: broken links {broken:?}");
    }

    #[test]
    fn the_helpers_read_what_the_chapter_holds() {
        assert_eq!(
            long_flags("kcr sieve --only a,b --out=x -j --x1 -- --9"),
            ["--only", "--out", "--x1"].map(String::from).into()
        );
        let (prose, blocks) = split_blocks("a `--full`\n  ```diff\n  +x\n   y\n  ```\nb\n");
        assert_eq!(prose, "a `--full`\nb\n");
        assert_eq!(
            blocks,
            [("diff".to_owned(), vec!["+x".to_owned(), " y".to_owned()])]
        );
        let hunk = &hunks(&[
            "--- a/src/x.rs".into(),
            "+++ b/src/x.rs".into(),
            "@@ -3,2 +3,3 @@".into(),
            " a".into(),
            "+b".into(),
            " c".into(),
        ])[0];
        assert_eq!(
            (
                hunk.path.as_str(),
                hunk.old_start,
                hunk.old_count,
                hunk.new_count
            ),
            ("src/x.rs", 3, 2, 3)
        );
        assert_eq!(
            named_paths(
                "In `src/controller/memcached.rs` (see docs/reliability.md). Not \
                 `target/sieve/report.md`, `hack/sieve/ignore`, `hack/sieve/*.yaml`, \
                 [x](../../crates/a.rs); `hack/test.sh`."
            ),
            [
                "src/controller/memcached.rs",
                "docs/reliability.md",
                "hack/test.sh"
            ]
        );
    }
}
