//! A minimal fake of the Lambda Runtime API on 127.0.0.1, enough to start a
//! function binary and time it: it hands out one event on the first
//! `/runtime/invocation/next`, records when that poll arrived and when the
//! response (or error) came back, and holds every later poll open. It also
//! serves a JWKS document at `/jwks.json`, so a function's key fetch is one
//! more loopback round trip, as it is against a real issuer.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// When things happened during one start, and what the function answered.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    pub first_poll: Option<Instant>,
    pub answered: Option<Instant>,
    pub answer: Option<String>,
    pub error: bool,
}

#[derive(Default)]
struct State {
    event: Option<String>,
    handed_out: bool,
    timeline: Timeline,
}

/// The fake Runtime API.
#[derive(Clone)]
pub struct RuntimeApi {
    pub addr: std::net::SocketAddr,
    state: Arc<Mutex<State>>,
    answered: Arc<Notify>,
    jwks: Arc<String>,
    /// How long the JWKS endpoint waits before answering (network distance).
    jwks_delay: Arc<Mutex<Duration>>,
}

const REQUEST_ID: &str = "8476a536-e9f4-11e8-9739-2dfe598c3fcd";

impl RuntimeApi {
    /// Starts the server; `jwks` is served at `/jwks.json`.
    pub async fn start(jwks: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let api = Self {
            addr: listener.local_addr().expect("local address"),
            state: Arc::default(),
            answered: Arc::new(Notify::new()),
            jwks: Arc::new(jwks.to_string()),
            jwks_delay: Arc::default(),
        };
        let server = api.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let server = server.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| {
                        let server = server.clone();
                        async move { Ok::<_, Infallible>(server.answer(req).await) }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        api
    }

    /// `AWS_LAMBDA_RUNTIME_API` for a function.
    pub fn runtime_api(&self) -> String {
        self.addr.to_string()
    }

    pub fn jwks_url(&self) -> String {
        format!("http://{}/jwks.json", self.addr)
    }

    /// Makes the JWKS endpoint wait `delay` before each answer.
    pub fn set_jwks_delay(&self, delay: Duration) {
        *self.jwks_delay.lock().expect("delay lock") = delay;
    }

    /// Prepares for a new start that will receive `event`.
    pub fn arm(&self, event: &str) {
        *self.state.lock().expect("state lock") = State {
            event: Some(event.to_string()),
            ..State::default()
        };
    }

    /// Waits until the function answered (or `limit` passed).
    pub async fn wait_for_answer(&self, limit: Duration) -> Timeline {
        let deadline = Instant::now() + limit;
        loop {
            let notified = self.answered.notified();
            {
                let state = self.state.lock().expect("state lock");
                if state.timeline.answered.is_some() || Instant::now() > deadline {
                    return state.timeline.clone();
                }
            }
            let _ = tokio::time::timeout(Duration::from_millis(50), notified).await;
        }
    }

    async fn answer(&self, req: hyper::Request<Incoming>) -> hyper::Response<Full<Bytes>> {
        let arrived = Instant::now();
        let path = req.uri().path().to_string();
        let body = req
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let reply = |status: u16, body: String| {
            let mut r = hyper::Response::new(Full::new(Bytes::from(body)));
            *r.status_mut() = hyper::StatusCode::from_u16(status).expect("status");
            r
        };
        if path == "/jwks.json" {
            let delay = *self.jwks_delay.lock().expect("delay lock");
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            return reply(200, self.jwks.to_string());
        }
        if path.ends_with("/runtime/invocation/next") {
            let event = {
                let mut state = self.state.lock().expect("state lock");
                if state.timeline.first_poll.is_none() {
                    state.timeline.first_poll = Some(arrived);
                }
                if state.handed_out {
                    None
                } else {
                    state.handed_out = true;
                    state.event.clone()
                }
            };
            let Some(event) = event else {
                // The next invocation never comes: hold the poll open.
                std::future::pending::<()>().await;
                unreachable!()
            };
            let deadline = authz_core::clock::system_now() + Duration::from_secs(30);
            let ms = authz_core::clock::since_epoch(deadline).as_millis();
            let mut r = reply(200, event);
            let h = r.headers_mut();
            h.insert(
                "lambda-runtime-aws-request-id",
                REQUEST_ID.parse().expect("header"),
            );
            h.insert(
                "lambda-runtime-deadline-ms",
                ms.to_string().parse().expect("header"),
            );
            h.insert(
                "lambda-runtime-invoked-function-arn",
                "arn:aws:lambda:us-east-1:123456789012:function:bench"
                    .parse()
                    .expect("header"),
            );
            h.insert(
                "lambda-runtime-trace-id",
                "Root=1-5bef4de7-ad49b0e87f6ef6c87fc2e700;Parent=9a9197af755a6419;Sampled=1"
                    .parse()
                    .expect("header"),
            );
            return r;
        }
        let is_response = path.ends_with("/response");
        if is_response || path.ends_with("/error") {
            let mut state = self.state.lock().expect("state lock");
            state.timeline.answered = Some(arrived);
            state.timeline.answer = Some(String::from_utf8_lossy(&body).into_owned());
            state.timeline.error = !is_response;
            drop(state);
            self.answered.notify_waiters();
            return reply(202, "{\"status\":\"OK\"}".into());
        }
        reply(404, String::new())
    }
}
