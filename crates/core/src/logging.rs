//! JSON logs for the functions: one line per event, to stdout, where Lambda
//! sends them to CloudWatch. `RUST_LOG` is one level (`error`, `warn`,
//! `info`, `debug`, `trace` or `off`; default `info`): per-target directives
//! would need tracing-subscriber's `env-filter`, whose regex engine costs
//! binary size and start-up time on every cold start.

use tracing_subscriber::filter::LevelFilter;

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

/// Installs the JSON subscriber once per process.
pub fn init() {
    // Lambda adds its own timestamp to every line; the target is noise.
    let _ = tracing_subscriber::fmt()
        .json()
        .with_max_level(level())
        .with_target(false)
        .without_time()
        .with_current_span(false)
        .try_init();
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
