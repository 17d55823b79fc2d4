//! API writes in the [`pipeline`] trace: every POST, PUT, PATCH or DELETE the client
//! sends while a sync runs is recorded as a [`Write`](pipeline::Stage::Write) step of
//! the key being synced.
//!
//! The layer sits in the HTTP client, below kube's typed `Api`, so it sees every write
//! a sync handler makes however deep in the handler's code, and finds the key through
//! the task-local scope the loop sets around each sync
//! ([`pipeline::current_sync`]). Reads, and writes made outside a sync (leader
//! election, Events, the informers), pass through untouched.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::future::Either;
use pipeline::{Stage, Step};

/// A `tower::Layer` adding [`WriteSteps`] to a client's request stack.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteStepsLayer;

impl<S> tower::Layer<S> for WriteStepsLayer {
    type Service = WriteSteps<S>;

    fn layer(&self, inner: S) -> Self::Service {
        WriteSteps { inner }
    }
}

/// The service [`WriteStepsLayer`] wraps around the HTTP client.
#[derive(Debug, Clone)]
pub struct WriteSteps<S> {
    inner: S,
}

type Recorded<F> = Pin<Box<dyn Future<Output = F> + Send>>;

impl<S, B, RB> tower::Service<http::Request<B>> for WriteSteps<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<RB>>,
    S::Future: Send + 'static,
    S::Error: std::fmt::Display,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Either<S::Future, Recorded<Result<S::Response, S::Error>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let method = match *req.method() {
            http::Method::POST => "POST",
            http::Method::PUT => "PUT",
            http::Method::PATCH => "PATCH",
            http::Method::DELETE => "DELETE",
            _ => return Either::Left(self.inner.call(req)),
        };
        let Some(scope) = pipeline::enabled().then(pipeline::current_sync).flatten() else {
            return Either::Left(self.inner.call(req));
        };
        let path = req.uri().path().to_string();
        let response = self.inner.call(req);
        Either::Right(Box::pin(async move {
            let result = response.await;
            let (status, text) = match &result {
                Ok(response) => (i64::from(response.status().as_u16()), path),
                Err(e) => (0, format!("{path}: {e}")),
            };
            pipeline::record(|| {
                Step::new(Stage::Write, scope.controller, scope.key, method)
                    .n(status)
                    .text(text)
            });
            result
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::sync::Arc;

    use tower::{Layer, ServiceExt};

    use super::*;

    async fn send(method: http::Method, path: &str) {
        let service = WriteStepsLayer.layer(tower::service_fn(|_req: http::Request<()>| async {
            Ok::<_, Infallible>(http::Response::builder().status(201).body(()).unwrap())
        }));
        let req = http::Request::builder()
            .method(method)
            .uri(path)
            .body(())
            .unwrap();
        service.oneshot(req).await.unwrap();
    }

    #[tokio::test]
    async fn writes_inside_a_sync_are_steps_of_its_key_and_nothing_else_is() {
        let key = "write-steps-test/web";
        let scope = pipeline::SyncScope {
            controller: Arc::from("test"),
            key: Arc::from(key),
        };
        pipeline::in_sync(scope, async {
            send(
                http::Method::GET,
                "/apis/apps/v1/namespaces/write-steps-test/deployments/web",
            )
            .await;
            send(
                http::Method::POST,
                "/apis/apps/v1/namespaces/write-steps-test/deployments?fieldManager=x",
            )
            .await;
        })
        .await;
        // Outside a sync: not attributed to any key.
        send(
            http::Method::DELETE,
            "/apis/apps/v1/namespaces/write-steps-test/deployments/web",
        )
        .await;

        let trip = pipeline::trip(key);
        let writes: Vec<_> = trip
            .iter()
            .map(|s| (s.stage, s.what, s.n, s.text.as_deref()))
            .collect();
        assert_eq!(
            writes,
            [(
                Stage::Write,
                "POST",
                201,
                Some("/apis/apps/v1/namespaces/write-steps-test/deployments")
            )]
        );
    }
}
