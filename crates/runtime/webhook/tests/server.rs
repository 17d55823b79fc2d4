//! The real server over real HTTPS: a CA and a serving certificate for 127.0.0.1 made
//! here, a hyper client trusting that CA, and the Foo validator and defaulter.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use apis::samplecontroller::v1alpha1::Foo;
use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::StatusCode;
use hyper::body::Frame;
use serde_json::{Value, json};
use webhook::{Error, WebhookServer};

use support::*;

#[tokio::test]
async fn validates_and_defaults_over_https_and_counts_it() {
    let dir = TempDir::new("admit");
    let pki = Pki::new("ca-1");
    pki.write_to(&dir);
    let server = start(&dir, |s| s).await;
    let client = client(&pki.ca_der);

    let (status, body) = post_review(
        &client,
        server.addr,
        VALIDATE,
        &review("u-1", "CREATE", foo("a", "web", 3), Value::Null),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(body["kind"], "AdmissionReview");
    assert_eq!(body["response"]["uid"], "u-1");
    assert_eq!(body["response"]["allowed"], true);

    let (status, body) = post_review(
        &client,
        server.addr,
        VALIDATE,
        &review("u-2", "UPDATE", foo("a", "web", 42), foo("a", "web", 3)),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "a denial is still an HTTP 200");
    let response = &body["response"];
    assert_eq!(response["uid"], "u-2");
    assert_eq!(response["allowed"], false);
    assert_eq!(
        response["status"]["message"],
        "spec.replicas: 42 is not between 1 and 10"
    );
    assert_eq!(response["status"]["code"], 422);
    assert_eq!(response["status"]["reason"], "Invalid");
    assert_eq!(response["warnings"], json!(["replicas are capped at 10"]));

    // A Pod sent to Foo's validator: denied, saying why.
    let mut pod_review = review(
        "u-3",
        "CREATE",
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}),
        Value::Null,
    );
    pod_review["request"]["kind"] = json!({"group": "", "version": "v1", "kind": "Pod"});
    let (_, body) = post_review(&client, server.addr, VALIDATE, &pod_review).await;
    assert_eq!(body["response"]["allowed"], false);
    assert_eq!(body["response"]["status"]["code"], 400);
    assert!(
        body["response"]["status"]["message"]
            .as_str()
            .unwrap()
            .contains("the request is for v1 Pod"),
        "{body}"
    );

    // The defaulter's patch, applied to the object as sent, gives the defaulted object.
    let original = foo("b", "", 2);
    let (status, body) = post_review(
        &client,
        server.addr,
        MUTATE,
        &review("u-4", "CREATE", original.clone(), Value::Null),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["response"]["uid"], "u-4");
    assert_eq!(body["response"]["allowed"], true);
    assert_eq!(body["response"]["patchType"], "JSONPatch");
    let patch_bytes: Vec<u8> = serde_json::from_value(body["response"]["patch"].clone()).unwrap();
    let patch: json_patch::Patch = serde_json::from_slice(&patch_bytes).unwrap();
    let mut patched = original.clone();
    json_patch::patch(&mut patched, &patch).unwrap();
    let mut expected = original;
    expected["spec"]["deploymentName"] = json!("b-nginx");
    assert_eq!(patched, expected, "creationTimestamp: null must survive");

    // A panicking validator: denied with 500, counted, and the server goes on.
    let (status, body) = post_review(
        &client,
        server.addr,
        VALIDATE,
        &review("u-5", "CREATE", foo("panic", "web", 3), Value::Null),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["response"]["uid"], "u-5");
    assert_eq!(body["response"]["status"]["code"], 500);
    assert_eq!(
        body["response"]["status"]["message"],
        "panic: validator bug [recovered]"
    );

    let v = |code| [("webhook", VALIDATE), ("code", code)];
    assert_eq!(
        server.metric("controller_runtime_webhook_requests_total", &v("200")),
        Some(4.0)
    );
    assert_eq!(
        server.metric("controller_runtime_webhook_requests_total", &v("500")),
        Some(0.0)
    );
    assert_eq!(
        server.metric(
            "controller_runtime_webhook_requests_total",
            &[("webhook", MUTATE), ("code", "200")]
        ),
        Some(1.0)
    );
    assert_eq!(
        server.metric("webhook_admission_denied_total", &v("422")),
        Some(1.0)
    );
    assert_eq!(
        server.metric("webhook_admission_denied_total", &v("400")),
        Some(1.0)
    );
    assert_eq!(
        server.metric("webhook_admission_denied_total", &v("500")),
        Some(1.0)
    );
    assert_eq!(
        server.metric("controller_runtime_webhook_panics_total", &[]),
        Some(1.0)
    );
    assert_eq!(
        server.metric(
            "controller_runtime_webhook_latency_seconds_count",
            &[("webhook", VALIDATE)]
        ),
        Some(4.0)
    );
    assert_eq!(
        server.metric(
            "controller_runtime_webhook_requests_in_flight",
            &[("webhook", VALIDATE)]
        ),
        Some(0.0)
    );
    server.stop().await;
}

#[tokio::test]
async fn bad_requests_get_http_errors_with_a_reason() {
    let dir = TempDir::new("bad");
    let pki = Pki::new("ca-1");
    pki.write_to(&dir);
    let server = start(&dir, |s| s.with_max_request_bytes(64 * 1024)).await;
    let client = client(&pki.ca_der);
    let post = |body: Body, content_type: &'static str| {
        let client = client.clone();
        async move { send(&client, server.addr, "POST", VALIDATE, content_type, body).await }
    };
    let message = |body: &str| -> String {
        let body: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
        assert_eq!(body["response"]["allowed"], false);
        body["response"]["status"]["message"]
            .as_str()
            .unwrap()
            .to_string()
    };

    let (status, body) = post(full("{not json"), "application/json").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        message(&body).starts_with("the request body is not valid JSON"),
        "{body}"
    );

    let (status, body) = post(
        full(r#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{}}"#),
        "application/json",
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        message(&body).contains("expected an admission.k8s.io/v1 AdmissionReview"),
        "{body}"
    );

    let (status, body) = post(full(r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x"}}"#), "application/json").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(message(&body).contains("request is invalid"), "{body}");

    let (status, body) = post(full(""), "application/json").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(message(&body), "request body is empty");

    let (status, body) = post(full("{}"), "text/plain").await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(
        message(&body),
        "contentType=text/plain, expected application/json"
    );

    // Oversized with a Content-Length: refused before reading.
    let big = format!("{{\"pad\":\"{}\"}}", "x".repeat(64 * 1024));
    let (status, body) = post(full(big.clone()), "application/json").await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        message(&body),
        "request entity is too large; limit is 65536 bytes"
    );
    // Oversized and chunked (no length announced): cut off while reading.
    let chunks: Vec<Result<Frame<Bytes>, std::convert::Infallible>> = big
        .into_bytes()
        .chunks(8 * 1024)
        .map(|c| Ok(Frame::data(Bytes::copy_from_slice(c))))
        .collect();
    let streamed = StreamBody::new(futures::stream::iter(chunks)).boxed();
    let (status, _) = post(streamed, "application/json").await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);

    let (status, _) = send(
        &client,
        server.addr,
        "GET",
        VALIDATE,
        "application/json",
        full(""),
    )
    .await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    let (status, body) = send(
        &client,
        server.addr,
        "POST",
        "/validate-nope",
        "application/json",
        full("{}"),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body, "404 page not found\n");
    let (status, _) = send(
        &client,
        server.addr,
        "GET",
        "/",
        "application/json",
        full(""),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let v = |code| [("webhook", VALIDATE), ("code", code)];
    assert_eq!(
        server.metric("controller_runtime_webhook_requests_total", &v("400")),
        Some(4.0)
    );
    assert_eq!(
        server.metric("controller_runtime_webhook_requests_total", &v("413")),
        Some(2.0)
    );
    assert_eq!(
        server.metric("controller_runtime_webhook_requests_total", &v("415")),
        Some(1.0)
    );
    assert_eq!(
        server.metric("controller_runtime_webhook_requests_total", &v("405")),
        Some(1.0)
    );
    assert_eq!(
        server.metric("controller_runtime_webhook_requests_total", &v("200")),
        Some(0.0)
    );
    // Unknown paths are not series.
    assert!(!server.registry.encode().unwrap().contains("/validate-nope"));

    // A valid review still works on the same server.
    let (status, body) = post_review(
        &client,
        server.addr,
        VALIDATE,
        &review("ok", "CREATE", foo("a", "w", 1), Value::Null),
    )
    .await;
    assert_eq!(
        (status, body["response"]["allowed"].clone()),
        (StatusCode::OK, json!(true))
    );
    server.stop().await;
}

async fn wait_for_certificate(
    addr: SocketAddr,
    trust: &[&rustls::pki_types::CertificateDer<'static>],
    want: &rustls::pki_types::CertificateDer<'static>,
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(presented) = presented_certificate(addr, trust).await
            && presented == *want
        {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server never presented the new certificate"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn certificates_rotate_without_a_restart_and_bad_ones_are_ignored() {
    let dir = TempDir::new("rotate");
    let first = Pki::new("ca-1");
    first.write_to(&dir);
    let server = start(&dir, |s| s).await;
    let both = [&first.ca_der];
    assert_eq!(
        presented_certificate(server.addr, &both).await.unwrap(),
        first.leaf_der
    );

    // A broken key: the old pair stays in service.
    write_atomically(
        &dir.join("tls.key"),
        b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        presented_certificate(server.addr, &both).await.unwrap(),
        first.leaf_der
    );
    let (status, _) = post_review(
        &client(&first.ca_der),
        server.addr,
        VALIDATE,
        &review("u", "CREATE", foo("a", "w", 2), Value::Null),
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    // A new pair from a new CA: the next connection presents it.
    let second = Pki::new("ca-2");
    second.write_to(&dir);
    wait_for_certificate(
        server.addr,
        &[&first.ca_der, &second.ca_der],
        &second.leaf_der,
    )
    .await;
    let (status, body) = post_review(
        &client(&second.ca_der),
        server.addr,
        VALIDATE,
        &review("u2", "CREATE", foo("a", "w", 2), Value::Null),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["response"]["uid"], "u2");
    // A client that trusts only the old CA no longer gets in.
    assert!(
        presented_certificate(server.addr, &[&first.ca_der])
            .await
            .is_err()
    );

    // And back to the first pair, still without a restart.
    first.write_to(&dir);
    wait_for_certificate(server.addr, &[&first.ca_der], &first.leaf_der).await;
    server.stop().await;
}

#[tokio::test]
async fn readiness_follows_the_server_and_shutdown_is_graceful() {
    let dir = TempDir::new("ready");
    let pki = Pki::new("ca-1");
    pki.write_to(&dir);
    let health = metrics::Health::new();
    let server = start(&dir, |s| {
        health
            .add_readyz_check("webhook", s.readiness().check())
            .unwrap();
        s
    })
    .await;
    assert!(server.readiness.is_ready());
    assert_eq!(health.readyz(None, false).status, 200);
    let (addr, readiness) = (server.addr, server.readiness.clone());
    server.stop().await;
    assert!(!readiness.is_ready());
    assert_eq!(health.readyz(None, false).status, 503);
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "the port is closed"
    );
}

#[tokio::test]
async fn start_up_errors_are_typed_and_a_disabled_server_is_ready() {
    let dir = TempDir::new("errors");
    let no_files = WebhookServer::new("127.0.0.1:0".parse().unwrap(), &*dir);
    assert!(matches!(
        no_files.bind().await,
        Err(Error::ReadCertificate { .. })
    ));

    let (a, b) = (Pki::new("a"), Pki::new("b"));
    std::fs::write(dir.join("tls.crt"), &a.cert_pem).unwrap();
    std::fs::write(dir.join("tls.key"), &b.key_pem).unwrap();
    let mismatched = WebhookServer::new("127.0.0.1:0".parse().unwrap(), &*dir);
    let err = mismatched.bind().await.unwrap_err();
    assert!(matches!(err, Error::InvalidCertificate { .. }), "{err}");

    // Custom file names, and a port that is taken.
    std::fs::write(dir.join("serving.crt"), &a.cert_pem).unwrap();
    std::fs::write(dir.join("serving.key"), &a.key_pem).unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = WebhookServer::new(
        format!("127.0.0.1:{}", taken.local_addr().unwrap().port())
            .parse()
            .unwrap(),
        &*dir,
    )
    .with_cert_name("serving.crt")
    .with_key_name("serving.key");
    assert!(matches!(busy.bind().await, Err(Error::Bind { .. })));

    let mut dup = WebhookServer::new("0".parse().unwrap(), &*dir);
    dup.register_validator::<Foo, _>(FooValidator).unwrap();
    assert!(matches!(
        dup.register_validator::<Foo, _>(FooValidator),
        Err(Error::DuplicatePath { .. })
    ));
    assert!(matches!(
        dup.register("no-slash", |r: &webhook::Request| r.allowed()),
        Err(Error::InvalidPath { .. })
    ));
    let readiness = dup.readiness();
    assert!(dup.bind().await.unwrap().is_none());
    assert!(readiness.is_ready());
}
