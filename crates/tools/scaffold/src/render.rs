//! Templates: plain text files under `templates/`, compiled into the binary with
//! `include_str!`, whose `{{name}}` placeholders are replaced by the resource's names.
//!
//! Hand-written on purpose: a template engine would be one more dependency for a
//! string replacement, and the templates read as the files they become.

use std::collections::BTreeMap;

/// The values a template's placeholders take.
#[derive(Debug, Default, Clone)]
pub struct Vars(BTreeMap<&'static str, String>);

impl Vars {
    /// Sets `{{name}}`.
    pub fn set(&mut self, name: &'static str, value: impl Into<String>) -> &mut Self {
        self.0.insert(name, value.into());
        self
    }

    /// `template` with every `{{name}}` replaced.
    ///
    /// # Panics
    /// When a placeholder has no value: a template bug, which the tests of every
    /// template catch.
    pub fn render(&self, template: &str) -> String {
        replace_placeholders(template, |name| {
            self.0
                .get(name)
                .unwrap_or_else(|| panic!("template placeholder {{{{{name}}}}} has no value"))
                .clone()
        })
    }
}

/// `template` with every `{{name}}` replaced by `value(name)`.
pub(crate) fn replace_placeholders(template: &str, value: impl Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find("}}");
        let name = end.map(|end| &after[..end]);
        match name {
            Some(name)
                if !name.is_empty()
                    && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') =>
            {
                out.push_str(&value(name));
                rest = &after[name.len() + 2..];
            }
            // Not a placeholder (Rust's `{{` in a format string, or `{{{name}}` where a
            // brace precedes one): keep one brace and look again after it.
            _ => {
                out.push('{');
                rest = &rest[start + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// `template` without the sections whose flag is off: a line holding `kcr:if NAME`
/// opens a section, one holding `kcr:end` closes the innermost open one; both lines are
/// dropped, and the lines between them kept only when `NAME` is on in `flags` (and so
/// is every section around it). Sections nest.
///
/// # Panics
/// On a section named in no flag, an `kcr:end` without a section, or a section left
/// open: template bugs.
pub fn sections(template: &str, flags: &[(&str, bool)]) -> String {
    let mut out = String::with_capacity(template.len());
    // The flags of the open sections, outermost first.
    let mut open: Vec<bool> = Vec::new();
    for line in template.split_inclusive('\n') {
        if let Some(name) = line.split("kcr:if ").nth(1) {
            let name = name.trim();
            let on = flags
                .iter()
                .find(|(flag, _)| *flag == name)
                .unwrap_or_else(|| panic!("template section {name:?} has no flag"))
                .1;
            open.push(on);
        } else if line.contains("kcr:end") {
            open.pop().expect("a template's kcr:end closes no section");
        } else if open.iter().all(|on| *on) {
            out.push_str(line);
        }
    }
    assert!(open.is_empty(), "a template section is not closed");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_known_placeholders_only() {
        let mut vars = Vars::default();
        vars.set("kind", "Guestbook");
        assert_eq!(
            vars.render("kind: {{kind}}; format!(\"{{}}\") {{ x }}"),
            "kind: Guestbook; format!(\"{{}}\") {{ x }}"
        );
        assert_eq!(
            vars.render("use a::{{{kind}}, B};"),
            "use a::{Guestbook, B};"
        );
    }

    #[test]
    #[should_panic(expected = "has no value")]
    fn a_missing_value_is_a_template_bug() {
        Vars::default().render("{{kind}}");
    }

    #[test]
    fn sections_keep_what_is_on() {
        let template = "a\n// kcr:if x\nb\n// kcr:end\n// kcr:if y\nc\n// kcr:end\nd\n";
        assert_eq!(
            sections(template, &[("x", true), ("y", false)]),
            "a\nb\nd\n"
        );
    }

    #[test]
    fn sections_nest() {
        let template = "a\n// kcr:if x\nb\n// kcr:if y\nc\n// kcr:end\nd\n// kcr:end\ne\n";
        assert_eq!(
            sections(template, &[("x", true), ("y", false)]),
            "a\nb\nd\ne\n"
        );
        assert_eq!(sections(template, &[("x", false), ("y", true)]), "a\ne\n");
        assert_eq!(
            sections(template, &[("x", true), ("y", true)]),
            "a\nb\nc\nd\ne\n"
        );
    }
}
