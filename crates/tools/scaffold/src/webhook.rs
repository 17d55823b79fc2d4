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

    let mut source = vars.render(WEBHOOK_HEAD);
    let mut registrations = Vec::new();
    let mut e2e = vars.render(E2E_HEAD);
    if options.defaulting {
        source.push_str(&vars.render(DEFAULTER));
        registrations.push(vars.render(REGISTER_DEFAULTER));
        e2e.push_str(&vars.render(E2E_DEFAULTING));
        plan.create(
            vars.render("deploy/webhook/{{kind_snake}}_mutating.yaml"),
            vars.render(MUTATING_CONFIGURATION),
        );
        plan.insert(
            "deploy/webhook/kustomization.yaml",
            "# +kcr:scaffold:webhooks",
            vars.render("- {{kind_snake}}_mutating.yaml"),
        );
    }
    if options.validation {
        source.push_str(&vars.render(VALIDATOR));
        registrations.push(vars.render(REGISTER_VALIDATOR));
        e2e.push_str(&vars.render(E2E_VALIDATION));
        plan.create(
            vars.render("deploy/webhook/{{kind_snake}}_validating.yaml"),
            vars.render(VALIDATING_CONFIGURATION),
        );
        plan.insert(
            "deploy/webhook/kustomization.yaml",
            "# +kcr:scaffold:webhooks",
            vars.render("- {{kind_snake}}_validating.yaml"),
        );
    }
    let mut register_vars = vars.clone();
    register_vars.set("registrations", registrations.join("\n"));
    source.push_str(&register_vars.render(REGISTER));
    plan.create(format!("src/webhook/{module}.rs"), source);
    plan.insert(
        "src/webhook/mod.rs",
        "// +kcr:scaffold:webhook-modules",
        format!("pub mod {module};"),
    );
    plan.insert(
        "src/webhook/mod.rs",
        "// +kcr:scaffold:webhooks",
        format!("{module}::register,"),
    );
    plan.create(format!("tests/e2e/{module}_webhook.rs"), e2e);
    plan.insert(
        "tests/e2e/main.rs",
        "// +kcr:scaffold:e2e",
        format!("mod {module}_webhook;"),
    );

    project.resources[index].webhooks = Some(Webhooks {
        defaulting: options.defaulting,
        validation: options.validation,
    });
    plan.replace(PROJECT_FILE, project.render());
    plan.apply(&options.dir)
}

const WEBHOOK_HEAD: &str = include_str!("../templates/webhook/head.rs.tpl");
const DEFAULTER: &str = include_str!("../templates/webhook/defaulter.rs.tpl");
const VALIDATOR: &str = include_str!("../templates/webhook/validator.rs.tpl");
const REGISTER: &str = include_str!("../templates/webhook/register.rs.tpl");
const REGISTER_DEFAULTER: &str =
    "paths.push(server.register_defaulter::<{{kind}}, _>({{kind}}Defaulter)?);";
const REGISTER_VALIDATOR: &str =
    "paths.push(server.register_validator::<{{kind}}, _>({{kind}}Validator)?);";
const E2E_HEAD: &str = include_str!("../templates/webhook/e2e_head.rs.tpl");
const E2E_DEFAULTING: &str = include_str!("../templates/webhook/e2e_defaulting.rs.tpl");
const E2E_VALIDATION: &str = include_str!("../templates/webhook/e2e_validation.rs.tpl");
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
