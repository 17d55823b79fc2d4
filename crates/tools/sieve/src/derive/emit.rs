//! The derived workload as YAML text: serde_yaml writes each step, this module writes
//! the comments serde cannot carry (the header, and per step its field and value class).

use serde_json::{Value as Json, json};

use super::{Depth, StepOrigin, ValueClass};

/// What the header says.
pub(crate) struct Header<'a> {
    pub crd: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub depth: Depth,
    pub budget: Option<usize>,
    pub updates: usize,
    pub skipped: &'a [(String, String)],
    pub rules: &'a [(String, String)],
    pub left_out: usize,
}

/// The workload's text.
pub(crate) fn text(
    header: &Header<'_>,
    steps: &[(StepOrigin, Json)],
) -> Result<String, serde_yaml::Error> {
    let Header {
        crd,
        version,
        kind,
        name,
        ..
    } = header;
    let depth = match header.depth {
        Depth::Short => "short: one change per field",
        Depth::Full => "full: every value of every field",
    };
    let mut out = wrapped(&format!(
        "Derived by `sieve derive` from the CRD {crd}, version {version}, and the sample \
         {kind} {name} ({depth}), as Acto (SOSP'23) derives test cases from a schema. Every \
         update is a JSON merge patch of the spec that keeps the spec valid under the CRD's \
         OpenAPI schema. CEL rules (x-kubernetes-validations), admission webhooks and the \
         API server's own limits are not checked: the API server may refuse a step."
    ));
    if !header.skipped.is_empty() {
        out.push_str("# Not exercised:\n");
        for (field, why) in header.skipped {
            out.push_str(&comment(&format!("  {field}: {why}")));
        }
    }
    if !header.rules.is_empty() {
        out.push_str("# CEL rules not checked (the API server refuses a step that breaks one):\n");
        for (field, rule) in header.rules {
            out.push_str(&comment(&format!("  {field}: {rule}")));
        }
    }
    if header.left_out > 0 {
        out.push_str(&wrapped(&format!(
            "{} more fields not reached within the budget of {} updates (--full, --max-steps).",
            header.left_out,
            header.budget.unwrap_or_default()
        )));
    }
    let description = format!(
        "Derived from the schema of {kind} {version} (CRD {crd}) and the sample {name}: the \
         sample created, {} updates each changing one spec field to another valid value \
         ({depth}), deleted, and created again under the same name with the sample's spec.",
        header.updates
    );
    out.push_str(&serde_yaml::to_string(
        &json!({ "description": description }),
    )?);
    out.push_str("steps:\n");
    for (origin, step) in steps {
        let what = match origin.class {
            ValueClass::Create => format!("create the sample {name}"),
            ValueClass::Delete => format!("delete {name}"),
            ValueClass::Recreate => format!("recreate {name} with the sample's spec"),
            class => format!(
                "{}: {class} -> {}",
                origin.field.as_deref().unwrap_or("spec"),
                super::walk::short(origin.value.as_ref().unwrap_or(&Json::Null))
            ),
        };
        out.push_str("  ");
        out.push_str(&comment(&format!("step {}: {what}", origin.number)));
        for line in serde_yaml::to_string(&[step])?.lines() {
            if !line.is_empty() {
                out.push_str("  ");
            }
            out.push_str(line);
            out.push('\n');
        }
    }
    Ok(out)
}

/// `text` as comment lines of at most 90 columns (a word longer than that stays whole).
fn wrapped(text: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > 88 {
            out.push_str(&comment(&line));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        out.push_str(&comment(&line));
    }
    out
}

/// `text` as one comment line (line breaks flattened).
fn comment(text: &str) -> String {
    format!("# {}\n", text.replace(['\n', '\r'], " "))
}
