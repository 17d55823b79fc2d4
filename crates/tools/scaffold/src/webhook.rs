//! `kcr create webhook`: a kind's defaulting and validating admission webhooks
//! (kubebuilder's `create webhook --defaulting --programmatic-validation`), and, with
//! the project's first webhook, deploy/'s webhook Service, cert-manager Certificate and
//! the manager's webhook port.

use std::path::PathBuf;

use crate::api::resource_vars;
use crate::error::ScaffoldError;
use crate::names::{check_dns_subdomain, check_kind, check_version};
use crate::plan::{Applied, Plan};
use crate::project::{PROJECT_FILE, Project, Webhooks};
use crate::render::sections;

/// `kcr create webhook`'s flags.
#[derive(Debug, Clone)]
pub struct WebhookOptions {
    /// The project's root.
    pub dir: PathBuf,
    /// `--group`.
    pub group: String,
    /// `--version`.
    pub version: String,
    /// `--kind`.
    pub kind: String,
    /// `--defaulting`: a mutating webhook that fills defaults.
    pub defaulting: bool,
    /// `--programmatic-validation`: a validating webhook.
    pub validation: bool,
}

/// `kcr create webhook`: adds a kind's webhooks to the project in `options.dir`.
pub fn create_webhook(options: &WebhookOptions) -> Result<Applied, ScaffoldError> {
    check_dns_subdomain("--group", &options.group)?;
    check_version(&options.version)?;
    check_kind(&options.kind)?;
    if !options.defaulting && !options.validation {
        return Err(ScaffoldError::Usage(
            "nothing to scaffold: pass --defaulting, --programmatic-validation or both".into(),
        ));
    }
    let mut project = Project::load(&options.dir)?;
    let Some(index) = project.resources.iter().position(|r| {
        r.kind == options.kind && r.group == options.group && r.version == options.version
    }) else {
        return Err(ScaffoldError::NoSuchKind {
            kind: options.kind.clone(),
            group: options.group.clone(),
            version: options.version.clone(),
        });
    };
    let first_webhook = !project.has_webhooks();
    let resource = &project.resources[index];
    let vars = resource_vars(&project, resource);
    let module = vars.render("{{kind_snake}}");
    if resource.image.is_some() {
        return Err(ScaffoldError::Usage(format!(
            "{} was created with --image: kcr's webhook example rules are written for the spec of a plain `create api` kind; write a Defaulter/Validator by hand in src/webhook/ (see webhook::Defaulter and webhook::Validator)",
            resource.kind
        )));
    }
    if resource.webhooks.is_some() {
        return Err(ScaffoldError::WebhookExists {
            kind: resource.kind.clone(),
            module,
        });
    }

    // The example rules read `spec.title` and `spec.maxEntries`: written only when the
    // spec still has them as `create api` wrote them; otherwise the webhooks start empty,
    // so the project keeps compiling whatever the user made of the spec.
    let api_file = vars.render("src/api/{{api_module}}.rs");
    let api_text = std::fs::read_to_string(options.dir.join(&api_file))
        .map_err(|e| ScaffoldError::io(options.dir.join(&api_file), e))?;
    let example = has_example_fields(&api_text, &resource.kind);

    let mut plan = Plan::default();
    // deploy/'s webhook parts come with the first webhook; each kind adds to them.
    if first_webhook {
        for (path, template) in FIRST_WEBHOOK_FILES {
            plan.create(*path, vars.render(template));
        }
        plan.insert(
            "deploy/kustomization.yaml",
            "# +kcr:scaffold:resources",
            "- webhook\n- certmanager",
        );
        plan.insert(
            "deploy/kustomization.yaml",
            "# +kcr:scaffold:patches",
            "- path: manager_webhook_patch.yaml",
        );
    }

    // The webhook module and its e2e test, with the parts the flags ask for.
    let flags = [
        ("defaulting", options.defaulting),
        ("validation", options.validation),
        ("example", example),
        ("generic", !example),
    ];
    plan.create(
        format!("src/webhook/{module}.rs"),
        vars.render(&sections(WEBHOOK, &flags)),
    );
    plan.insert(
        "src/webhook/mod.rs",
        "// +kcr:scaffold:webhook-modules",
        format!("pub mod {module};"),
    );
    plan.insert(
        "src/main.rs",
        "// +kcr:scaffold:webhooks",
        vars.render("{{crate_name}}::webhook::{{kind_snake}}::register(mgr.webhook_server())?;"),
    );
    plan.create(
        format!("tests/e2e/{module}_webhook.rs"),
        vars.render(&sections(WEBHOOK_E2E, &flags)),
    );
    plan.insert(
        "tests/e2e/main.rs",
        "// +kcr:scaffold:e2e-modules",
        format!("mod {module}_webhook;"),
    );
    // deploy/: the API server calls the webhooks through these configurations, one of
    // each type for the project (kubebuilder's), with a webhook per kind.
    for (on, file, configuration, webhook) in [
        (
            options.defaulting,
            "mutating",
            MUTATING_CONFIGURATION,
            MUTATING_WEBHOOK,
        ),
        (
            options.validation,
            "validating",
            VALIDATING_CONFIGURATION,
            VALIDATING_WEBHOOK,
        ),
    ] {
        if on {
            let path = format!("deploy/webhook/{file}.yaml");
            if !options.dir.join(&path).exists() {
                plan.create(&path, vars.render(configuration));
                plan.insert(
                    "deploy/webhook/kustomization.yaml",
                    "# +kcr:scaffold:webhooks",
                    format!("- {file}.yaml"),
                );
            }
            plan.insert(
                &path,
                format!("# +kcr:scaffold:{file}-webhooks"),
                vars.render(webhook),
            );
        }
    }

    project.resources[index].webhooks = Some(Webhooks {
        defaulting: options.defaulting,
        validation: options.validation,
    });
    plan.replace(PROJECT_FILE, project.render());
    plan.apply(&options.dir)
}

/// Whether `api_text` (the kind's API file) declares `<kind>Spec` with the example
/// fields the example webhook rules read, typed as `create api` wrote them.
fn has_example_fields(api_text: &str, kind: &str) -> bool {
    let opening = format!("pub struct {kind}Spec {{");
    let Some(start) = api_text.find(&opening) else {
        return false;
    };
    let body = &api_text[start + opening.len()..];
    let body = &body[..body.find("\n}").unwrap_or(body.len())];
    let fields: Vec<String> = body
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    [
        "pub title: Option<String>,",
        "pub max_entries: Option<i32>,",
    ]
    .iter()
    .all(|field| fields.iter().any(|line| line == field))
}

/// The Rust templates of a kind's webhooks.
pub(crate) const RUST_TEMPLATES: [&str; 2] = [WEBHOOK, WEBHOOK_E2E];

const WEBHOOK: &str = include_str!("../templates/webhook/webhook.rs.tpl");
const WEBHOOK_E2E: &str = include_str!("../templates/webhook/e2e.rs.tpl");
const MUTATING_CONFIGURATION: &str = include_str!("../templates/webhook/deploy/mutating.yaml.tpl");
const VALIDATING_CONFIGURATION: &str =
    include_str!("../templates/webhook/deploy/validating.yaml.tpl");
const MUTATING_WEBHOOK: &str =
    include_str!("../templates/webhook/deploy/mutating_webhook.yaml.tpl");
const VALIDATING_WEBHOOK: &str =
    include_str!("../templates/webhook/deploy/validating_webhook.yaml.tpl");

/// deploy/'s webhook parts, written with the project's first webhook.
const FIRST_WEBHOOK_FILES: &[(&str, &str)] = &[
    (
        "deploy/webhook/kustomization.yaml",
        include_str!("../templates/webhook/deploy/kustomization.yaml.tpl"),
    ),
    (
        "deploy/webhook/service.yaml",
        include_str!("../templates/webhook/deploy/service.yaml.tpl"),
    ),
    (
        "deploy/certmanager/kustomization.yaml",
        include_str!("../templates/webhook/deploy/certmanager_kustomization.yaml.tpl"),
    ),
    (
        "deploy/certmanager/certificate.yaml",
        include_str!("../templates/webhook/deploy/certificate.yaml.tpl"),
    ),
    (
        "deploy/manager_webhook_patch.yaml",
        include_str!("../templates/webhook/deploy/manager_webhook_patch.yaml.tpl"),
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "pub struct GuestbookSpec {
    /// The title.
    #[serde(default, skip_serializing_if = \"Option::is_none\")]
    pub title: Option<String>,

    /// How many.
    pub max_entries: Option<i32>,
}

pub struct GuestbookStatus {
    pub max_entries: Option<i32>,
}
";

    /// Every combination of flags renders (its sections balance), and without the
    /// example fields nothing reads them.
    #[test]
    fn every_combination_renders() {
        for (defaulting, validation) in [(true, true), (true, false), (false, true)] {
            for example in [true, false] {
                let flags = [
                    ("defaulting", defaulting),
                    ("validation", validation),
                    ("example", example),
                    ("generic", !example),
                ];
                for template in RUST_TEMPLATES {
                    let out = sections(template, &flags);
                    let code: Vec<&str> = out
                        .lines()
                        .filter(|l| !l.trim_start().starts_with("//"))
                        .collect();
                    let reads = code.iter().any(|l| l.contains("max_entries"));
                    assert_eq!(reads, example, "{flags:?}:\n{out}");
                }
            }
        }
    }

    #[test]
    fn the_example_fields_are_found_only_in_the_spec_as_written() {
        assert!(has_example_fields(SPEC, "Guestbook"));
        // A field added: still the example's fields.
        let added = SPEC.replace(
            "    pub max_entries",
            "    pub theme: String,\n    pub max_entries",
        );
        assert!(has_example_fields(&added, "Guestbook"));
        // One removed, renamed or retyped: the example rules would not compile.
        let removed = SPEC.replace("    pub title: Option<String>,\n", "");
        assert!(!has_example_fields(&removed, "Guestbook"));
        let retyped = SPEC.replacen("max_entries: Option<i32>", "max_entries: Option<u32>", 1);
        assert!(!has_example_fields(&retyped, "Guestbook"));
        // Only in another struct, or another kind.
        let status_only = SPEC.replacen("    pub max_entries: Option<i32>,\n", "", 1);
        assert!(!has_example_fields(&status_only, "Guestbook"));
        assert!(!has_example_fields(SPEC, "Blog"));
    }
}
