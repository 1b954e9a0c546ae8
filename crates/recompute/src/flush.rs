//! API Gateway's result cache after revocations. The revocations item's
//! stream records say when each revocation was recorded; once every
//! authorizer instance has had time to read it (its check interval, plus
//! the replicas' lag for that read), the stage's authorizer cache is
//! flushed (`FlushStageAuthorizersCache`), so that API Gateway asks the
//! authorizer again, which then answers from what it knows now. Flushing
//! sooner could let API Gateway cache an answer from an instance that has
//! not read the revocation yet. One flush covers every revocation recorded
//! before it; a batch flushes at most once per revocation time.

use std::time::Duration;

use authz_core::model::items::REPLICA_LAG;
use authz_core::runtime::config::{self, ConfigError};

/// The API's id (`REST_API_ID`) and stage (`STAGE_NAME`), and how long
/// after a revocation to flush.
#[derive(Debug, Clone)]
pub struct CacheFlush {
    client: aws_sdk_apigateway::Client,
    api: String,
    stage: String,
    /// How long after a revocation's time the flush is sent: the
    /// authorizer's `REVOCATION_CHECK_SECONDS` plus the replicas' lag.
    after: Duration,
}

impl CacheFlush {
    /// From `REST_API_ID`, `STAGE_NAME` and `REVOCATION_CHECK_SECONDS`
    /// (1 to 60, default 1); `None` without an API id (nothing to flush).
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
        sdk: &aws_config::SdkConfig,
    ) -> Result<Option<Self>, ConfigError> {
        let set = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let Some(api) = set("REST_API_ID") else {
            return Ok(None);
        };
        let stage = set("STAGE_NAME")
            .ok_or_else(|| ConfigError::new("STAGE_NAME", "is required with REST_API_ID"))?;
        let check = config::revocation_check(&lookup)?;
        Ok(Some(Self {
            client: aws_sdk_apigateway::Client::new(sdk),
            api: api.trim().to_string(),
            stage: stage.trim().to_string(),
            after: check + REPLICA_LAG,
        }))
    }

    /// When (milliseconds since the epoch) a revocation recorded at `at`
    /// may be flushed from API Gateway's cache.
    pub fn due(&self, at: u64) -> u64 {
        at + self.after.as_millis() as u64
    }

    /// Waits until `due` (milliseconds since the epoch), then flushes the
    /// stage's authorizer cache.
    pub async fn flush_at(&self, due: u64) -> Result<(), String> {
        let now = authz_core::store::now_millis();
        if due > now {
            tokio::time::sleep(Duration::from_millis(due - now)).await;
        }
        self.client
            .flush_stage_authorizers_cache()
            .rest_api_id(&self.api)
            .stage_name(&self.stage)
            .send()
            .await
            .map_err(|e| {
                format!(
                    "FlushStageAuthorizersCache {}/{}: {}",
                    self.api,
                    self.stage,
                    aws_smithy_types::error::display::DisplayErrorContext(&e)
                )
            })?;
        metrics::counter!(authz_core::runtime::metrics::name::AUTHORIZER_CACHE_FLUSHES)
            .increment(1);
        Ok(())
    }
}
