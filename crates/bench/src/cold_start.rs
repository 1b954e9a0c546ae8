//! Cold start: a function binary started under the fake Runtime API, timed
//! from just before `spawn` to its first `/next` poll and to its first
//! answer. The environment is cleared first, as Lambda's is, then given the
//! function's configuration.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::runtime_api::{RuntimeApi, Timeline};

/// One start.
#[derive(Debug, Clone, Copy)]
pub struct Start {
    pub first_poll: Duration,
    pub answered: Duration,
    /// CPU time of the process's threads once its answer has arrived
    /// (including its next poll, which then waits); `None` without
    /// `/proc`.
    pub cpu: Option<Duration>,
}

/// The CPU time the live threads of process `pid` have run, from the
/// scheduler's nanosecond accounting (`/proc/<pid>/task/*/schedstat`); a
/// thread that ended meanwhile is left out (the functions' threads live as
/// long as the process: the runtime's workers and its blocking pool, idle
/// threads of which stay ten seconds).
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let total: u64 = tasks
        .filter_map(|task| {
            let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
            stat.split_whitespace().next()?.parse::<u64>().ok()
        })
        .sum();
    Some(Duration::from_nanos(total))
}

/// Starts `binary` once with `env`, hands it `event`, and checks the answer
/// with `accept`.
pub async fn start_once(
    api: &RuntimeApi,
    binary: &Path,
    env: &[(String, String)],
    event: &str,
    accept: impl Fn(&Timeline) -> bool,
) -> Result<Start, String> {
    api.arm(event);
    let mut command = Command::new(binary);
    command
        .env_clear()
        .env("AWS_LAMBDA_RUNTIME_API", api.runtime_api())
        .env("AWS_LAMBDA_FUNCTION_NAME", "bench")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("AWS_LAMBDA_LOG_GROUP_NAME", "/aws/lambda/bench")
        .env("AWS_LAMBDA_LOG_STREAM_NAME", "bench")
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let started = Instant::now();
    let mut child = command
        .spawn()
        .map_err(|e| format!("{}: {e}", binary.display()))?;
    let timeline = api.wait_for_answer(Duration::from_secs(10)).await;
    let cpu = cpu_time(child.id());
    let _ = child.kill();
    let _ = child.wait();
    let (Some(poll), Some(answered)) = (timeline.first_poll, timeline.answered) else {
        return Err(format!("{} did not answer: {timeline:?}", binary.display()));
    };
    if !accept(&timeline) {
        return Err(format!(
            "{} answered something unexpected: {:?}",
            binary.display(),
            timeline.answer
        ));
    }
    Ok(Start {
        first_poll: poll.duration_since(started),
        answered: answered.duration_since(started),
        cpu,
    })
}

/// The median of some durations.
pub fn median(values: &[Duration]) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort();
    match sorted.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2,
    }
}

/// The `p`th percentile (0-100) of some durations, nearest rank.
pub fn percentile(values: &[Duration], p: usize) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort();
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (p * sorted.len()).div_ceil(100).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Median with the 10th and 90th percentiles: `m (p10-p90)`.
pub fn spread(values: &[Duration]) -> String {
    format!(
        "{:.2} ms ({:.2}-{:.2})",
        median(values).as_secs_f64() * 1e3,
        percentile(values, 10).as_secs_f64() * 1e3,
        percentile(values, 90).as_secs_f64() * 1e3
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let ms = |v: &[u64]| {
            v.iter()
                .map(|m| Duration::from_millis(*m))
                .collect::<Vec<_>>()
        };
        let values = ms(&[5, 1, 4, 2, 3, 10, 9, 8, 7, 6]);
        assert_eq!(percentile(&values, 10), Duration::from_millis(1));
        assert_eq!(percentile(&values, 90), Duration::from_millis(9));
        assert_eq!(percentile(&values, 100), Duration::from_millis(10));
        assert_eq!(median(&values), Duration::from_micros(5500));
        assert_eq!(spread(&ms(&[2])), "2.00 ms (2.00-2.00)");
    }
}
