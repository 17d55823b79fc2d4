//! The `sieve` binary: `plan` prints the plans of a trace with their replay commands;
//! `learn` and `run` say they need the runner, not built yet, after checking the workload;
//! `derive` writes workloads from the repository's CRDs and samples.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value as Json;

/// A fresh directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sieve-cli-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

fn sieve(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sieve"))
        .args(args)
        .output()
        .expect("the sieve binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("UTF-8 output")
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("UTF-8 output")
}

fn foo_workload() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("workloads/foo.yaml")
        .display()
        .to_string()
}

/// A learning run of one step and the start of a second: a create, a refused status
/// write, the Foo's status written.
const TRACE: &str = r#"{"seq":1,"type":"run","workload":"workloads/foo.yaml","controller":"sample-controller"}
{"seq":2,"type":"stepBegin","step":1,"op":"create","name":"web"}
{"seq":3,"type":"watch","resource":"foos","event":"ADDED","key":"ns/web","resourceVersion":"10","uid":"u1"}
{"seq":4,"type":"write","method":"POST","resource":"deployments","key":"ns/web","status":201,"resourceVersion":"11"}
{"seq":5,"type":"write","method":"PUT","resource":"foos","key":"ns/web","subresource":"status","status":409}
{"seq":6,"type":"write","method":"PUT","resource":"foos","key":"ns/web","subresource":"status","status":200,"resourceVersion":"12"}
{"seq":7,"type":"watch","resource":"foos","event":"MODIFIED","key":"ns/web","resourceVersion":"12","uid":"u1"}
{"seq":8,"type":"stepEnd","step":1}
{"seq":9,"type":"stepBegin","step":2,"op":"delete","name":"web"}
{"seq":10,"type":"watch","resource":"foos","event":"DELETED","key":"ns/web","resourceVersion":"13","uid":"u1"}
{"seq":11,"type":"stepEnd","step":2}
"#;

#[test]
fn plan_prints_every_plan_with_its_replay_command() {
    let dir = scratch("plan");
    let trace = dir.join("trace.jsonl");
    std::fs::write(&trace, TRACE).unwrap();
    let output = sieve(&["plan", "--trace", trace.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("11 records, 3 writes, 3 watch events\n"),
        "{text}"
    );
    assert!(
        text.contains("5 plans: 2 intermediate-state, 2 unobserved-state, 1 stale-state\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "\nintermediate-3\n  write 3 (record 6): PUT foos/status ns/web -> 200\n  \
             sieve run --workload workloads/foo.yaml --controller sample-controller --plan intermediate-3\n"
        ),
        "{text}"
    );
    assert!(text.contains("--plan stale-2\n"), "{text}");
    assert!(!text.contains("intermediate-2"), "{text}");

    let json = sieve(&[
        "plan",
        "--trace",
        trace.to_str().unwrap(),
        "--json",
        "--controller",
        "go-sample-controller",
    ]);
    assert!(json.status.success(), "{}", stderr(&json));
    let lines: Vec<serde_json::Value> = stdout(&json)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[2]["id"], "unobserved-foos-ns/web-10");
    assert_eq!(lines[2]["perturbation"]["kind"], "unobservedState");
    assert_eq!(lines[4]["perturbation"]["listRv"], "12");
    assert_eq!(
        lines[4]["command"],
        "sieve run --workload workloads/foo.yaml --controller go-sample-controller --plan stale-2"
    );
    std::fs::remove_dir_all(&dir).expect("removing the scratch directory");
}

#[test]
fn plan_refuses_a_bad_trace_with_its_line() {
    let dir = scratch("bad-trace");
    let trace = dir.join("trace.jsonl");
    std::fs::write(
        &trace,
        "{\"seq\":1,\"type\":\"stepEnd\",\"step\":1}\n{\"seq\":2,\"type\":\"nope\"}\n",
    )
    .unwrap();
    let output = sieve(&["plan", "--trace", trace.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(3));
    assert!(
        stderr(&output).contains("trace line 2: unknown variant `nope`"),
        "{}",
        stderr(&output)
    );
    // Without a run record the replay commands need the workload and the controller.
    std::fs::write(&trace, "{\"seq\":1,\"type\":\"stepEnd\",\"step\":1}\n").unwrap();
    let output = sieve(&["plan", "--trace", trace.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(3));
    assert!(stderr(&output).contains("has no run record: pass --workload and --controller"));
    std::fs::remove_dir_all(&dir).expect("removing the scratch directory");
}

#[test]
fn learn_and_run_check_their_inputs_before_they_need_a_control_plane() {
    let dir = scratch("inputs");
    let out = dir.join("out");
    let no_plane = dir.join("no-control-plane");
    let no_plane = no_plane.to_str().unwrap();
    // A good workload, no control plane: the error names the missing file.
    let learn = sieve(&[
        "learn",
        "--workload",
        &foo_workload(),
        "--controller",
        "sample-controller",
        "--control-plane",
        no_plane,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(learn.status.code(), Some(3));
    assert!(
        stderr(&learn).contains("no-control-plane/env"),
        "{}",
        stderr(&learn)
    );

    let bad = dir.join("bad.yaml");
    std::fs::write(&bad, "steps:\n  - delete: {name: web}\n").unwrap();
    let refused = sieve(&[
        "learn",
        "--workload",
        bad.to_str().unwrap(),
        "--controller",
        "sample-controller",
        "--control-plane",
        no_plane,
        "--out",
        "o",
    ]);
    assert_eq!(refused.status.code(), Some(3));
    assert!(
        stderr(&refused).contains("step 1 (delete): field `name`: no object named `web`"),
        "{}",
        stderr(&refused)
    );

    // Not a preset, and no command.
    let unknown = sieve(&[
        "learn",
        "--workload",
        &foo_workload(),
        "--controller",
        "my-controller",
        "--control-plane",
        no_plane,
        "--out",
        "o",
    ]);
    assert_eq!(unknown.status.code(), Some(3));
    assert!(
        stderr(&unknown).contains("my-controller is not a preset (sample-controller, sample-controller-shards, vm-controller, myweb-operator, go-sample-controller, broken-foo-intermediate, broken-foo-unobserved, broken-foo-stale): give its --command"),
        "{}",
        stderr(&unknown)
    );

    // A learning run's directory without that plan.
    let learned = dir.join("learned");
    std::fs::create_dir_all(&learned).unwrap();
    std::fs::write(learned.join("trace.jsonl"), TRACE).unwrap();
    std::fs::write(
        learned.join("outcome.json"),
        r#"{"namespace":"sieve-learn","end_state":[],"full_kinds":["Foo"],"reached":true,"liveness":[],"exits":[],"panics":[],"incarnations":1,"logs":[],"not_cleaned_up":[]}"#,
    )
    .unwrap();
    let run = sieve(&[
        "run",
        "--workload",
        &foo_workload(),
        "--controller",
        "sample-controller",
        "--control-plane",
        no_plane,
        "--plan",
        "intermediate-2",
        "--learned",
        learned.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(3));
    assert!(
        stderr(&run).contains("has no plan intermediate-2"),
        "{}",
        stderr(&run)
    );
    std::fs::remove_dir_all(&dir).expect("removing the scratch directory");
}

#[test]
fn help_explains_the_perturbations_and_the_flow() {
    let help = sieve(&["--help"]);
    assert!(help.status.success());
    let text = stdout(&help);
    for needle in [
        "intermediate state",
        "unobserved state",
        "stale state",
        "OSDI 2022",
        "`learn` runs a workload",
        "hack/sieve.sh",
        "Exit code: 0 every plan passed",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    assert_eq!(sieve(&["plan"]).status.code(), Some(2));
    // Every run needs a control plane.
    assert_eq!(
        sieve(&[
            "learn",
            "--workload",
            "w",
            "--controller",
            "c",
            "--out",
            "o"
        ])
        .status
        .code(),
        Some(2)
    );
}

/// A file of the repository, by its path from the root.
fn repository(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../..")
        .join(path)
        .display()
        .to_string()
}

/// The `spec` schema of the first version of the CRD in `file`.
fn spec_schema(file: &str) -> Json {
    let text = std::fs::read_to_string(repository(file)).expect("the CRD file");
    let crd: Json = serde_yaml::from_str(&text).expect("a CRD in YAML");
    crd.pointer("/spec/versions/0/schema/openAPIV3Schema/properties/spec")
        .expect("a spec schema")
        .clone()
}

/// The bounds of an integer field of a spec schema.
fn bounds(schema: &Json, field: &str) -> (i64, i64) {
    let get = |key: &str| schema["properties"][field][key].as_f64().expect("a bound") as i64;
    (get("minimum"), get("maximum"))
}

/// The values `workload` sets `field` to, with the comment of each step.
fn set_values(workload: &str, field: &str) -> Vec<(Json, String)> {
    let parsed =
        sieve::workload::Workload::parse(workload).unwrap_or_else(|e| panic!("{e}\n{workload}"));
    let comments: Vec<&str> = workload
        .lines()
        .filter(|l| l.trim_start().starts_with("# step "))
        .collect();
    assert_eq!(comments.len(), parsed.steps.len(), "{workload}");
    parsed
        .steps
        .iter()
        .filter_map(|step| match &step.action {
            sieve::workload::Action::Update { patch } => patch
                .get(field)
                .map(|v| (v.clone(), comments[step.number - 1].trim().to_string())),
            _ => None,
        })
        .collect()
}

#[test]
fn derive_writes_workloads_from_the_repositorys_crds_and_samples() {
    // Foo: replicas' bounds, read from the CRD.
    let foo_crd = "deploy/crds/samplecontroller.k8s.io_foos.yaml";
    let (min, max) = bounds(&spec_schema(foo_crd), "replicas");
    let args = [
        "derive",
        "--crd",
        &repository(foo_crd),
        "--sample",
        &repository("deploy/examples/foo.yaml"),
    ];
    let short = sieve(&args);
    assert!(short.status.success(), "{}", stderr(&short));
    let text = stdout(&short);
    assert!(
        text.contains("# step 1: create the sample example-foo\n"),
        "{text}"
    );
    // The sample has the minimum: the short pass takes the other bound.
    assert_eq!(
        set_values(&text, "replicas"),
        [(
            Json::from(max),
            format!("# step 3: spec.replicas: maximum -> {max}")
        )]
    );
    let full = sieve(&[&args[..], &["--full"]].concat());
    assert!(full.status.success(), "{}", stderr(&full));
    let replicas: Vec<_> = set_values(&stdout(&full), "replicas")
        .into_iter()
        .map(|(v, _)| v)
        .collect();
    assert_eq!(
        replicas,
        [
            Json::from(max),
            Json::from(min + 1),
            Json::from(max - 1),
            Json::Null
        ]
    );
    let parsed = sieve::workload::Workload::parse(&stdout(&full)).unwrap();
    let finals = sieve::derive::final_specs(&parsed);
    assert_eq!(
        finals[0].1,
        serde_json::json!({"deploymentName": "example-foo", "replicas": 1})
    );

    // MyWeb: the node port's bounds and just inside them.
    let myweb_crd = "deploy/crds/operator.k8s-summit.org_mywebs.yaml";
    let (min, max) = bounds(&spec_schema(myweb_crd), "nodePortNumber");
    let dir = scratch("derive");
    let out = dir.join("myweb.yaml");
    let myweb = sieve(&[
        "derive",
        "--crd",
        &repository(myweb_crd),
        "--sample",
        &repository("deploy/myweb-operator/myweb.yaml"),
        "--full",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(myweb.status.success(), "{}", stderr(&myweb));
    let text = std::fs::read_to_string(&out).unwrap();
    let ports: Vec<_> = set_values(&text, "nodePortNumber")
        .into_iter()
        .map(|(v, _)| v)
        .collect();
    assert_eq!(
        ports,
        [
            Json::from(min),
            Json::from(max),
            Json::from(min + 1),
            Json::from(max - 1)
        ]
    );
    assert!(
        set_values(&text, "image")
            .iter()
            .all(|(v, _)| v.as_str().is_some_and(|s| !s.is_empty()))
    );

    // A kcr project: both CRDs and every sample (kustomization.yaml skipped), one
    // workload each; Memcached's containerPort bounds from its CRD.
    let project = "testdata/project/deploy";
    let crds = [
        format!("{project}/crd/cache.my.domain_memcacheds.yaml"),
        format!("{project}/crd/webapp.my.domain_guestbooks.yaml"),
    ];
    let samples = [
        "cache_v1alpha1_memcached.yaml",
        "webapp_v1_guestbook.yaml",
        "kustomization.yaml",
    ]
    .map(|f| repository(&format!("{project}/samples/{f}")));
    let mut args = vec!["derive".to_string(), "--crd".into()];
    args.extend(crds.iter().map(|c| repository(c)));
    args.push("--sample".into());
    args.extend(samples.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let several = sieve(&args);
    assert_ne!(several.status.code(), Some(0));
    assert!(stderr(&several).contains("2 sample objects (Memcached memcached-sample, Guestbook guestbook-sample): pass --sample-index N"), "{}", stderr(&several));
    let second = sieve(&[&args[..], &["--sample-index", "2"]].concat());
    assert!(
        stdout(&second).contains("kind: Guestbook"),
        "{}",
        stderr(&second)
    );
    let out_dir = format!("{}/", dir.join("project").display());
    let each = sieve(&[&args[..], &["--full", "--out", &out_dir]].concat());
    assert!(each.status.success(), "{}", stderr(&each));
    let memcached =
        std::fs::read_to_string(format!("{out_dir}memcached-memcached-sample.yaml")).unwrap();
    let (min, max) = bounds(&spec_schema(&crds[0]), "containerPort");
    let ports: Vec<_> = set_values(&memcached, "containerPort")
        .into_iter()
        .map(|(v, _)| v)
        .collect();
    assert_eq!(
        ports,
        [
            Json::from(min),
            Json::from(max),
            Json::from(min + 1),
            Json::from(max - 1),
            Json::Null
        ]
    );
    let guestbook =
        std::fs::read_to_string(format!("{out_dir}guestbook-guestbook-sample.yaml")).unwrap();
    assert!(
        guestbook.contains("# step 2: spec.maxEntries: negative (no minimum) -> -1\n")
            && guestbook.contains("# step 3: spec.maxEntries: incremented -> 101\n"),
        "{guestbook}"
    );

    // A version the CRD does not serve is refused, naming the ones it does.
    let unserved = dir.join("foo-v1.yaml");
    std::fs::write(&unserved, "apiVersion: samplecontroller.k8s.io/v1\nkind: Foo\nmetadata: {name: f}\nspec: {deploymentName: f}\n").unwrap();
    let refused = sieve(&[
        "derive",
        "--crd",
        &repository(foo_crd),
        "--sample",
        unserved.to_str().unwrap(),
    ]);
    assert_eq!(refused.status.code(), Some(3));
    assert!(
        stderr(&refused)
            .contains("does not serve version v1 (the sample's apiVersion); it serves: v1alpha1"),
        "{}",
        stderr(&refused)
    );
    std::fs::remove_dir_all(&dir).expect("removing the scratch directory");
}
