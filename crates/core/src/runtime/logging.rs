//! JSON logs for the functions: one line per event, to stdout, where Lambda
//! sends them to CloudWatch. `RUST_LOG` is one level (`error`, `warn`,
//! `info`, `debug`, `trace` or `off`; default `info`): per-target directives
//! would need tracing-subscriber's `env-filter`, whose regex engine costs
//! binary size and start-up time on every cold start.

use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::MakeWriter;

/// The level `RUST_LOG` asks for; `info` when unset or not a level.
pub fn level_from(value: Option<&str>) -> LevelFilter {
    value
        .and_then(|v| v.trim().parse::<LevelFilter>().ok())
        .unwrap_or(LevelFilter::INFO)
}

/// The level of this process (`RUST_LOG`).
pub fn level() -> LevelFilter {
    level_from(std::env::var("RUST_LOG").ok().as_deref())
}

/// The functions' JSON subscriber, writing to `writer` (stdout in a
/// function, a buffer in a test that reads its log lines).
pub fn subscriber<W>(writer: W) -> impl tracing::Subscriber + Send + Sync
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    // Lambda adds its own timestamp to every line; the target is noise.
    tracing_subscriber::fmt()
        .json()
        .with_max_level(level())
        .with_target(false)
        .without_time()
        .with_current_span(false)
        .with_writer(writer)
        .finish()
}

/// Installs the JSON subscriber on stdout, once per process.
pub fn init() {
    let _ = tracing::subscriber::set_global_default(subscriber(std::io::stdout));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_log_is_a_level() {
        assert_eq!(level_from(None), LevelFilter::INFO);
        assert_eq!(level_from(Some("debug")), LevelFilter::DEBUG);
        assert_eq!(level_from(Some(" WARN ")), LevelFilter::WARN);
        assert_eq!(level_from(Some("off")), LevelFilter::OFF);
        assert_eq!(level_from(Some("authorizer=debug")), LevelFilter::INFO);
    }
}
