//! A client of the Lambda Invoke API (`POST /2015-03-31/functions/{name}/invocations`)
//! as `cargo lambda watch` serves it locally: what API Gateway and the
//! stream's event source mapping do when they call a function.

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

/// What an invocation returned.
#[derive(Debug, Clone, PartialEq)]
pub enum Invoked {
    /// The function's response payload.
    Response(Value),
    /// The function returned an error (`errorType`, `errorMessage`).
    FunctionError { error_type: String, message: String },
}

/// The function could not be invoked (transport, timeout, a non-Lambda
/// answer).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invoke {function}: {reason}")]
pub struct InvokeError {
    pub function: String,
    pub reason: String,
    /// The request timed out (API Gateway answers 504 for integrations).
    pub timed_out: bool,
}

/// Functions behind one Invoke API endpoint.
#[derive(Clone)]
pub struct Functions {
    endpoint: String,
    client: Client<HttpConnector, Full<Bytes>>,
}

impl Functions {
    /// `endpoint` as `http://127.0.0.1:9000`.
    pub fn new(endpoint: &str) -> Self {
        Self {
            endpoint: endpoint.trim_end_matches('/').to_string(),
            client: Client::builder(TokioExecutor::new()).build_http(),
        }
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Invokes `function` synchronously with `payload`, waiting at most
    /// `timeout`.
    pub async fn invoke(
        &self,
        function: &str,
        payload: &Value,
        timeout: Duration,
    ) -> Result<Invoked, InvokeError> {
        let fail = |reason: String, timed_out| InvokeError {
            function: function.to_string(),
            reason,
            timed_out,
        };
        let request = hyper::Request::post(format!(
            "{}/2015-03-31/functions/{function}/invocations",
            self.endpoint
        ))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(payload.to_string())))
        .map_err(|e| fail(e.to_string(), false))?;
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| fail(format!("{e:?}"), false))?;
            let status = response.status();
            let function_error = response.headers().contains_key("x-amz-function-error");
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|e| fail(e.to_string(), false))?
                .to_bytes();
            Ok::<_, InvokeError>((status, function_error, body))
        };
        let (status, function_error, body) = tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| fail(format!("no response within {timeout:?}"), true))??;
        let value: Value = serde_json::from_slice(&body).map_err(|_| {
            fail(
                format!(
                    "status {status}, body not JSON: {}",
                    String::from_utf8_lossy(&body)
                ),
                false,
            )
        })?;
        // AWS answers 200 with X-Amz-Function-Error; cargo lambda answers
        // 500 with the same error document.
        let error_document =
            value.get("errorMessage").is_some() && value.get("errorType").is_some();
        if function_error || (status.as_u16() == 500 && error_document) {
            let text = |k: &str| value[k].as_str().unwrap_or_default().to_string();
            return Ok(Invoked::FunctionError {
                error_type: text("errorType"),
                message: text("errorMessage"),
            });
        }
        if !status.is_success() {
            return Err(fail(format!("status {status}: {value}"), false));
        }
        Ok(Invoked::Response(value))
    }
}
