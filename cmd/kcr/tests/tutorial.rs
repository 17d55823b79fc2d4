//! Chapter 9 of the tutorial (docs/tutorial/09-your-own-operator.md) shows what this
//! repository runs: the `kcr` commands of its shell blocks are exactly those of
//! testdata/generate.sh (same flags, same order), which `golden.rs` compares with
//! testdata/project and hack/e2e-scaffold.sh runs for real; every file of
//! testdata/project it names exists, and so does every file it links to.
//!
//! `--runtime-path` is left out of the comparison: generate.sh passes it to build in
//! place, a reader takes the default (the checkout kcr was built from).

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
