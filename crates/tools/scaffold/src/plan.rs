//! A command's writes, checked in full before the first byte is written.
//!
//! Two kinds of write, and the rules that keep a user's edits safe:
//! - **create** a file: if it exists with the same content, nothing to do; with other
//!   content, the command refuses ([`ScaffoldError::WouldOverwrite`]): someone wrote or
//!   edited it;
//! - **insert** lines before a marker line (`// +kcr:scaffold:controllers`), as
//!   kubebuilder inserts before its `+kubebuilder:scaffold:*` markers: the user's own
//!   edits around the marker stay; a file that lost its marker is refused
//!   ([`ScaffoldError::MarkerMissing`]); lines already there are not added twice.
//!
//! [`Plan::apply`] computes every final file first, so a refusal anywhere leaves the
//! project as it was.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::ScaffoldError;

/// One write.
#[derive(Debug, Clone)]
enum Op {
    Create {
        path: String,
        content: String,
    },
    Insert {
        path: String,
        marker: String,
        lines: String,
    },
    Replace {
        path: String,
        content: String,
    },
}

/// The writes of one command, relative to the project root.
#[derive(Debug, Default, Clone)]
pub struct Plan {
    ops: Vec<Op>,
}

/// What [`Plan::apply`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Applied {
    /// Files created.
    pub created: Vec<String>,
    /// Files that got lines at a marker.
    pub updated: Vec<String>,
}

impl Plan {
    /// Creates `path` with `content` (refused if it exists with other content).
    pub fn create(&mut self, path: impl Into<String>, content: impl Into<String>) {
        self.ops.push(Op::Create {
            path: path.into(),
            content: content.into(),
        });
    }

    /// Inserts `lines` before the line holding `marker` in `path`, indented as the
    /// marker is (refused if the marker is gone).
    pub fn insert(
        &mut self,
        path: impl Into<String>,
        marker: impl Into<String>,
        lines: impl Into<String>,
    ) {
        self.ops.push(Op::Insert {
            path: path.into(),
            marker: marker.into(),
            lines: lines.into(),
        });
    }

    /// Writes `path` whatever it holds: only for files kcr owns (PROJECT).
    pub fn replace(&mut self, path: impl Into<String>, content: impl Into<String>) {
        self.ops.push(Op::Replace {
            path: path.into(),
            content: content.into(),
        });
    }

    /// Checks every write against `root`, then writes them all. Rust files are
    /// formatted with rustfmt (a file that was formatted before an insertion is
    /// formatted after it).
    pub fn apply(&self, root: &Path) -> Result<Applied, ScaffoldError> {
        // path -> (final content, created?)
        let mut files: BTreeMap<String, (String, bool)> = BTreeMap::new();
        for op in &self.ops {
            match op {
                Op::Create { path, content } => {
                    let content = format_if_rust(path, content.clone())?;
                    match read(root, path)? {
                        Some(existing) if existing == content => {}
                        Some(_) => {
                            return Err(ScaffoldError::WouldOverwrite {
                                path: root.join(path),
                            });
                        }
                        None => {
                            if files.contains_key(path) {
                                return Err(ScaffoldError::WouldOverwrite {
                                    path: root.join(path),
                                });
                            }
                            files.insert(path.clone(), (content, true));
                        }
                    }
                }
                Op::Replace { path, content } => {
                    let created = read(root, path)?.is_none();
                    files.insert(path.clone(), (content.clone(), created));
                }
                Op::Insert {
                    path,
                    marker,
                    lines,
                } => {
                    let (current, created) = match files.get(path) {
                        Some((content, created)) => (content.clone(), *created),
                        None => match read(root, path)? {
                            Some(content) => (content, false),
                            None => {
                                return Err(ScaffoldError::MarkerMissing {
                                    path: root.join(path),
                                    marker: marker.clone(),
                                });
                            }
                        },
                    };
                    let updated =
                        insert_before_marker(&current, marker, lines).ok_or_else(|| {
                            ScaffoldError::MarkerMissing {
                                path: root.join(path),
                                marker: marker.clone(),
                            }
                        })?;
                    let updated = if path.ends_with(".rs")
                        && format_if_rust(path, current.clone())? == current
                    {
                        format_if_rust(path, updated)?
                    } else {
                        updated
                    };
                    files.insert(path.clone(), (updated, created));
                }
            }
        }
        let mut applied = Applied::default();
        for (path, (content, created)) in files {
            if !created && read(root, &path)?.as_deref() == Some(content.as_str()) {
                continue;
            }
            let full = root.join(&path);
            if let Some(parent) = full.parent() {
                std::fs::create_dir_all(parent).map_err(|e| ScaffoldError::io(parent, e))?;
            }
            std::fs::write(&full, &content).map_err(|e| ScaffoldError::io(&full, e))?;
            if path.ends_with(".sh") {
                make_executable(&full)?;
            }
            if created {
                applied.created.push(path);
            } else {
                applied.updated.push(path);
            }
        }
        Ok(applied)
    }
}

/// `content` with `lines` inserted before the line holding `marker`, each indented as
/// the marker is; `None` when the marker is not there. Lines already present right
/// above the marker are not added again.
pub fn insert_before_marker(content: &str, marker: &str, lines: &str) -> Option<String> {
    let mut out = String::with_capacity(content.len() + lines.len());
    let mut found = false;
    let mut previous: Vec<&str> = Vec::new();
    for line in content.split_inclusive('\n') {
        if !found && line.trim() == marker {
            found = true;
            let indent: String = line.chars().take_while(|c| c.is_whitespace()).collect();
            let new: Vec<String> = lines
                .lines()
                .map(|l| {
                    if l.is_empty() {
                        String::new()
                    } else {
                        format!("{indent}{l}")
                    }
                })
                .collect();
            let already = new.len() <= previous.len()
                && previous[previous.len() - new.len()..]
                    .iter()
                    .zip(&new)
                    .all(|(old, new)| old.trim_end_matches('\n') == new);
            if !already {
                for l in new {
                    out.push_str(&l);
                    out.push('\n');
                }
            }
        }
        previous.push(line);
        out.push_str(line);
    }
    found.then_some(out)
}

fn read(root: &Path, path: &str) -> Result<Option<String>, ScaffoldError> {
    let full = root.join(path);
    match std::fs::read_to_string(&full) {
        Ok(content) => Ok(Some(content)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ScaffoldError::io(full, e)),
    }
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<(), ScaffoldError> {
    use std::os::unix::fs::PermissionsExt;
    let mut permissions = std::fs::metadata(path)
        .map_err(|e| ScaffoldError::io(path, e))?
        .permissions();
    permissions.set_mode(0o755);
    std::fs::set_permissions(path, permissions).map_err(|e| ScaffoldError::io(path, e))
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> Result<(), ScaffoldError> {
    Ok(())
}

/// `content` as rustfmt writes it (edition 2024) when `path` is a Rust file. Without a
/// rustfmt on PATH, the content as it is (the generated project's `cargo fmt` then
/// says so).
fn format_if_rust(path: &str, content: String) -> Result<String, ScaffoldError> {
    if !path.ends_with(".rs") {
        return Ok(content);
    }
    let rustfmt = std::env::var_os("RUSTFMT").unwrap_or_else(|| "rustfmt".into());
    let child = Command::new(rustfmt)
        .args(["--edition", "2024", "--emit", "stdout"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(content),
        Err(e) => return Err(ScaffoldError::io(PathBuf::from("rustfmt"), e)),
    };
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(content.as_bytes())
        .map_err(|e| ScaffoldError::io(PathBuf::from(path), e))?;
    let output = child
        .wait_with_output()
        .map_err(|e| ScaffoldError::io(PathBuf::from(path), e))?;
    if !output.status.success() {
        return Err(ScaffoldError::Format {
            path: PathBuf::from(path),
            message: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    String::from_utf8(output.stdout).map_err(|e| ScaffoldError::Format {
        path: PathBuf::from(path),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserts_before_the_marker_with_its_indent() {
        let file = "fn main() {\n    a();\n    // +kcr:scaffold:x\n}\n";
        let out = insert_before_marker(file, "// +kcr:scaffold:x", "b();").unwrap();
        assert_eq!(
            out,
            "fn main() {\n    a();\n    b();\n    // +kcr:scaffold:x\n}\n"
        );
        // Idempotent.
        assert_eq!(
            insert_before_marker(&out, "// +kcr:scaffold:x", "b();").unwrap(),
            out
        );
        assert!(insert_before_marker("fn main() {}\n", "// +kcr:scaffold:x", "b();").is_none());
    }
}
