//! The `sieve` binary: `plan` prints the plans of a trace with their replay commands;
//! `learn` and `run` say they need the runner, not built yet, after checking the workload.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
