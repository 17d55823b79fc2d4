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
    // deploy/: the API server calls the webhooks through these configurations.
    for (on, file, template) in [
        (options.defaulting, "mutating", MUTATING_CONFIGURATION),
        (options.validation, "validating", VALIDATING_CONFIGURATION),
    ] {
        if on {
            plan.create(
                format!("deploy/webhook/{module}_{file}.yaml"),
                vars.render(template),
            );
            plan.insert(
                "deploy/webhook/kustomization.yaml",
                "# +kcr:scaffold:webhooks",
                format!("- {module}_{file}.yaml"),
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

const WEBHOOK: &str = include_str!("../templates/webhook/webhook.rs.tpl");
const WEBHOOK_E2E: &str = include_str!("../templates/webhook/e2e.rs.tpl");
const MUTATING_CONFIGURATION: &str = include_str!("../templates/webhook/deploy/mutating.yaml.tpl");
const VALIDATING_CONFIGURATION: &str =
    include_str!("../templates/webhook/deploy/validating.yaml.tpl");

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
