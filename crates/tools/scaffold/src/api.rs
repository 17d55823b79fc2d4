//! `kcr create api`: a kind's types and its controller (kubebuilder's `create api`, and
//! with `--image` its deploy-image plugin).

use std::path::PathBuf;

use crate::error::ScaffoldError;
use crate::init::project_vars;
use crate::names::{
    check_dns_subdomain, check_image, check_kind, check_kind_is_free, check_version, plural,
    snake_case,
};
use crate::plan::{Applied, Plan};
use crate::project::{PROJECT_FILE, Project, Resource};
use crate::render::{Vars, sections};

/// `kcr create api`'s flags.
#[derive(Debug, Clone)]
pub struct ApiOptions {
    /// The project's root.
    pub dir: PathBuf,
    /// `--group` (the API group is `<group>.<domain>`).
    pub group: String,
    /// `--version`.
    pub version: String,
    /// `--kind`.
    pub kind: String,
    /// `--namespaced` (default true).
    pub namespaced: bool,
    /// `--resource`: scaffold the types (default true).
    pub resource: bool,
    /// `--controller`: scaffold a controller (default true).
    pub controller: bool,
    /// `--image`: the controller runs this image in a Deployment it owns.
    pub image: Option<String>,
    /// `--image-container-port`.
    pub container_port: Option<u16>,
}

/// `kcr create api`: adds a kind to the project in `options.dir`.
pub fn create_api(options: &ApiOptions) -> Result<Applied, ScaffoldError> {
    check_dns_subdomain("--group", &options.group)?;
    check_version(&options.version)?;
    check_kind(&options.kind)?;
    if let Some(image) = &options.image {
        check_image(image)?;
        if !options.resource || !options.controller {
            return Err(ScaffoldError::Usage(
                "--image scaffolds the types and a controller that deploys the image: it needs --resource and --controller".into(),
            ));
        }
    }
    check_kind_is_free(&options.kind, &kind_templates(options.image.is_some()))?;
    if options.container_port.is_some() && options.image.is_none() {
        return Err(ScaffoldError::Usage(
            "--image-container-port is the port of --image's container: pass --image too".into(),
        ));
    }
    if options.container_port == Some(0) {
        return Err(ScaffoldError::invalid(
            "--image-container-port",
            "0",
            "a port number from 1 to 65535",
        ));
    }
    if !options.namespaced && options.image.is_some() {
        return Err(ScaffoldError::Usage(
            "--image with --namespaced false: the Deployment the controller runs lives in its owner's namespace, and a cluster-scoped kind has none; create the kind namespaced".into(),
        ));
    }
    if !options.resource {
        return Err(ScaffoldError::Usage(
            "the scaffolded controller reconciles this project's own type: pass --resource (controllers for built-in kinds are written by hand with the builder)".into(),
        ));
    }
    let mut project = Project::load(&options.dir)?;
    check_dns_subdomain("--group", &format!("{}.{}", options.group, project.domain))?;
    if let Some(existing) = project.resource(&options.kind) {
        return Err(ScaffoldError::KindExists {
            kind: existing.kind.clone(),
            group: existing.api_group(),
            version: existing.version.clone(),
        });
    }
    let resource = Resource {
        group: options.group.clone(),
        domain: project.domain.clone(),
        version: options.version.clone(),
        kind: options.kind.clone(),
        plural: plural(&options.kind),
        namespaced: options.namespaced,
        api: options.resource,
        controller: options.controller,
        image: options.image.clone(),
        container_port: options
            .image
            .as_ref()
            .map(|_| options.container_port.unwrap_or(80)),
        webhooks: None,
    };
    let vars = resource_vars(&project, &resource);
    let image = resource.image.is_some();
    let mut plan = Plan::default();

    // The types, their CRD and who may use them.
    let api_module = vars.render("{{api_module}}");
    // Namespaced or cluster-scoped: the template's `kcr:if namespaced` / `kcr:if cluster`
    // sections.
    let scope = [
        ("namespaced", resource.namespaced),
        ("cluster", !resource.namespaced),
    ];
    let types = if image { IMAGE_TYPES } else { TYPES };
    plan.create(
        format!("src/api/{api_module}.rs"),
        vars.render(&sections(types, &scope)),
    );
    plan.insert(
        "src/api/mod.rs",
        "// +kcr:scaffold:api-modules",
        format!("pub mod {api_module};"),
    );
    plan.insert(
        "src/lib.rs",
        "// +kcr:scaffold:crds",
        vars.render("<api::{{api_module}}::{{kind}} as kube::CustomResourceExt>::crd(),"),
    );
    plan.insert(
        "deploy/crd/kustomization.yaml",
        "# +kcr:scaffold:crds",
        vars.render("- {{api_group}}_{{plural}}.yaml"),
    );
    let sample = vars.render("{{group}}_{{version}}_{{kind_lower}}.yaml");
    plan.create(
        format!("deploy/samples/{sample}"),
        vars.render(if image { IMAGE_SAMPLE } else { SAMPLE }),
    );
    plan.insert(
        "deploy/samples/kustomization.yaml",
        "# +kcr:scaffold:samples",
        format!("- {sample}"),
    );
    for (role, template) in [("editor", EDITOR_ROLE), ("viewer", VIEWER_ROLE)] {
        let file = vars.render(&format!("{{{{kind_snake}}}}_{role}_role.yaml"));
        plan.create(format!("deploy/rbac/{file}"), vars.render(template));
        plan.insert(
            "deploy/rbac/kustomization.yaml",
            "# +kcr:scaffold:rbac",
            format!("- {file}"),
        );
    }

    // The controller, registered with the manager, its RBAC, its tests.
    if resource.controller {
        let module = vars.render("{{kind_snake}}");
        let controller = if image { IMAGE_CONTROLLER } else { CONTROLLER };
        plan.create(
            format!("src/controller/{module}.rs"),
            vars.render(&sections(controller, &scope)),
        );
        plan.insert(
            "src/controller/mod.rs",
            "// +kcr:scaffold:controller-modules",
            format!("pub mod {module};"),
        );
        plan.insert(
            "src/lib.rs",
            "// +kcr:scaffold:rbac",
            format!("controller::{module}::rbac(),"),
        );
        plan.insert(
            "src/main.rs",
            "// +kcr:scaffold:controllers",
            vars.render("{{crate_name}}::controller::{{kind_snake}}::setup(mgr)?;"),
        );
        if image {
            // The image the controller runs, set where kubebuilder's deploy-image plugin
            // sets it: the manager's Deployment (the controller's IMAGE_ENV).
            plan.insert(
                "deploy/manager/manager.yaml",
                "# +kcr:scaffold:env",
                vars.render("- name: {{kind_upper}}_IMAGE\n  value: {{image}}"),
            );
            // Its unit tests in a file of their own (`mod tests;`): the controller stays short.
            plan.create(
                format!("src/controller/{module}/tests.rs"),
                vars.render(IMAGE_CONTROLLER_TESTS),
            );
        }
        let e2e = match (image, resource.namespaced) {
            (true, _) => IMAGE_E2E,
            (false, true) => E2E,
            (false, false) => E2E_CLUSTER,
        };
        plan.create(format!("tests/e2e/{module}.rs"), vars.render(e2e));
        plan.insert(
            "tests/e2e/main.rs",
            "// +kcr:scaffold:e2e-modules",
            format!("mod {module};"),
        );
    }

    project.resources.push(resource);
    plan.replace(PROJECT_FILE, project.render());
    plan.apply(&options.dir)
}

/// Every name a resource's templates use.
pub(crate) fn resource_vars(project: &Project, resource: &Resource) -> Vars {
    let mut vars = project_vars(project);
    let kind_snake = snake_case(&resource.kind);
    vars.set("group", resource.group.clone())
        .set("api_group", resource.api_group())
        .set("api_group_dashed", resource.api_group().replace('.', "-"))
        .set("version", resource.version.clone())
        .set("kind", resource.kind.clone())
        .set("kind_lower", resource.kind.to_ascii_lowercase())
        .set(
            "port_name",
            resource
                .kind
                .to_ascii_lowercase()
                .chars()
                .take(15)
                .collect::<String>(),
        )
        .set("kind_snake", kind_snake.clone())
        .set("kind_upper", kind_snake.to_ascii_uppercase())
        .set("plural", resource.plural.clone())
        .set("api_module", format!("{kind_snake}_{}", resource.version))
        .set("image", resource.image.clone().unwrap_or_default())
        .set(
            "container_port",
            resource
                .container_port
                .map(|p| p.to_string())
                .unwrap_or_default(),
        );
    vars
}

/// The Rust templates whose code a kind's names must not collide with: its own files,
/// the project's (`init`), and for a plain kind the webhooks it may get later.
fn kind_templates(image: bool) -> Vec<&'static str> {
    let mut templates: Vec<&'static str> = crate::init::rust_templates().collect();
    if image {
        templates.extend([
            IMAGE_TYPES,
            IMAGE_CONTROLLER,
            IMAGE_CONTROLLER_TESTS,
            IMAGE_E2E,
        ]);
    } else {
        templates.extend([TYPES, CONTROLLER, E2E, E2E_CLUSTER]);
        templates.extend(crate::webhook::RUST_TEMPLATES);
    }
    templates
}

const TYPES: &str = include_str!("../templates/api/types.rs.tpl");
const CONTROLLER: &str = include_str!("../templates/api/controller.rs.tpl");
const E2E: &str = include_str!("../templates/api/e2e.rs.tpl");
const E2E_CLUSTER: &str = include_str!("../templates/api/e2e_cluster.rs.tpl");
const SAMPLE: &str = include_str!("../templates/api/sample.yaml.tpl");
const EDITOR_ROLE: &str = include_str!("../templates/api/editor_role.yaml.tpl");
const VIEWER_ROLE: &str = include_str!("../templates/api/viewer_role.yaml.tpl");
const IMAGE_TYPES: &str = include_str!("../templates/image/types.rs.tpl");
const IMAGE_CONTROLLER: &str = include_str!("../templates/image/controller.rs.tpl");
const IMAGE_CONTROLLER_TESTS: &str = include_str!("../templates/image/controller_tests.rs.tpl");
const IMAGE_E2E: &str = include_str!("../templates/image/e2e.rs.tpl");
const IMAGE_SAMPLE: &str = include_str!("../templates/image/sample.yaml.tpl");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::{LAYOUT_VERSION, Runtime};

    fn project() -> Project {
        Project {
            version: LAYOUT_VERSION.into(),
            domain: "my.domain".into(),
            repo: "my.domain/p".into(),
            project_name: "p".into(),
            runtime: Runtime {
                path: Some("../..".into()),
                git: None,
                rev: None,
                version: None,
            },
            resources: Vec::new(),
        }
    }

    /// Kinds whose generated project would not compile (E0252, E0255, a keyword as a
    /// module name) are refused before anything is written; the kinds of the tests and
    /// the tutorial are not.
    #[test]
    fn kinds_the_generated_code_cannot_use() {
        for kind in [
            "Error",
            "Option",
            "Condition",
            "Request",
            "Type",
            "Self",
            "Crate",
        ] {
            for image in [false, true] {
                assert!(
                    check_kind_is_free(kind, &kind_templates(image)).is_err(),
                    "{kind} (image: {image})"
                );
            }
        }
        // A plain kind named Deployment compiles; one deploying an image uses
        // apps/v1's Deployment beside it.
        check_kind_is_free("Deployment", &kind_templates(false)).unwrap();
        assert!(check_kind_is_free("Deployment", &kind_templates(true)).is_err());
        for kind in [
            "Guestbook",
            "Memcached",
            "ClusterPolicy",
            "Blog",
            "CronJob",
            "Backup",
        ] {
            for image in [false, true] {
                check_kind_is_free(kind, &kind_templates(image)).unwrap();
            }
        }
    }

    #[test]
    fn every_template_has_a_value_for_each_placeholder() {
        let resource = Resource {
            group: "cache".into(),
            domain: "my.domain".into(),
            version: "v1alpha1".into(),
            kind: "CronJob".into(),
            plural: "cronjobs".into(),
            namespaced: false,
            api: true,
            controller: true,
            image: Some("memcached:1.6".into()),
            container_port: Some(11211),
            webhooks: None,
        };
        let vars = resource_vars(&project(), &resource);
        for template in [
            TYPES,
            CONTROLLER,
            E2E,
            E2E_CLUSTER,
            SAMPLE,
            EDITOR_ROLE,
            VIEWER_ROLE,
            IMAGE_TYPES,
            IMAGE_CONTROLLER,
            IMAGE_CONTROLLER_TESTS,
            IMAGE_E2E,
            IMAGE_SAMPLE,
        ] {
            // Panics on a placeholder without a value.
            let flags = [("namespaced", true), ("cluster", false)];
            let out = vars.render(&sections(template, &flags));
            assert!(!out.contains("{{kind}}"));
        }
        assert_eq!(
            vars.render("{{api_module}} {{kind_snake}}"),
            "cron_job_v1alpha1 cron_job"
        );
    }
}
