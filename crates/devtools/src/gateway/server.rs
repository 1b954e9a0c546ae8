//! The HTTP server: `axum::serve` hands every request, whatever its method
//! and path, to `Gateway::handle`, with API Gateway's payload limit (413),
//! and logs one line per request.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::response::Response;
use axum::Router;
use serde_json::json;
use tokio::net::TcpListener;

use super::{Gateway, GatewayRequest, Reply};

/// API Gateway's payload limit.
const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

/// Serves `gateway` on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, gateway: Arc<Gateway>) {
    let app = Router::new().fallback(answer).with_state(gateway);
    let served = axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await;
    if let Err(e) = served {
        tracing::error!(error = %e, "the gateway stopped serving");
    }
}

pub(super) async fn answer(
    State(gateway): State<Arc<Gateway>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
) -> Response {
    let started = Instant::now();
    let (parts, body) = request.into_parts();
    let target = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let reply = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Err(_) => gateway.shaped(Reply::gateway(
            413,
            "RequestTooLarge",
            json!({"message": "Request Too Long"}),
        )),
        Ok(body) => {
            gateway
                .handle(GatewayRequest {
                    method: parts.method.clone(),
                    target: target.clone(),
                    headers: parts.headers,
                    body,
                    source_ip: peer.ip().to_string(),
                })
                .await
        }
    };
    tracing::info!(
        method = %parts.method,
        target = %target,
        status = reply.status.as_u16(),
        latency_ms = started.elapsed().as_millis() as u64,
        "request"
    );
    let mut response = Response::new(Body::from(reply.body));
    *response.status_mut() = reply.status;
    *response.headers_mut() = reply.headers;
    response
}
